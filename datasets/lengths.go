package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// randomLens draws n lengths uniformly on [max(1, ⌊full·ratio⌋), full], as
// bench_serving's compute_random_lens does with np.random.randint. A
// non-positive full length gives zeros (embedding benchmarks).
func randomLens(full int, ratio float64, n int, r *rand.Rand) []int {
	out := make([]int, n)
	if full <= 0 {
		return out
	}
	lo := max(int(float64(full)*ratio), 1)
	if lo > full {
		lo = full // ratio > 1 would make numpy's randint raise; clamp instead
	}
	span := full - lo + 1
	for i := range out {
		out[i] = lo + r.IntN(span)
	}
	return out
}

func checkRatio(flag string, ratio float64) error {
	if ratio < 0 || ratio > 1 || math.IsNaN(ratio) {
		return fmt.Errorf("%s must be in [0, 1], got %v", flag, ratio)
	}
	return nil
}
