package bench

import (
	"math"
	"slices"
)

// Stats are the statistics bench_serving reports for one latency list, in
// milliseconds.
type Stats struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Std    float64 `json:"std"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

// ComputeStats computes Stats of values in seconds, reported in ms, with
// NumPy's definitions. An empty list gives zeros, as bench_serving's
// `np.mean(ttfts or 0)`. values is not modified. The inter-token gaps,
// which are not kept as a []float64, take the same path through statsOf.
func ComputeStats(values []float64) Stats {
	return exactOf(slices.Clone(values)).st
}

// statsOf is the Stats of n samples of mean m and standard deviation sd
// (taken in the samples' order: NumPy's pairwise sums depend on it), the
// i-th smallest being sorted(i).
func statsOf(m, sd float64, n int, sorted func(int) float64) Stats {
	if n == 0 {
		return Stats{}
	}
	return Stats{Mean: m * 1000, Std: sd * 1000, Median: medianAt(n, sorted) * 1000,
		P90: percentileAt(n, sorted, 90) * 1000, P95: percentileAt(n, sorted, 95) * 1000,
		P99: percentileAt(n, sorted, 99) * 1000, Max: sorted(n-1) * 1000}
}

// pairwiseSum is NumPy's pairwise_sum for float64 (numpy/_core/src/umath/
// loops_utils.h.src): blocks of up to 128 summed with eight accumulators,
// larger arrays split in halves rounded to a multiple of 8. Matching it
// makes means agree with NumPy to the last bit on the same input order.
func pairwiseSum(a []float64) float64 {
	return pairwiseSumAt(0, len(a), func(i int) float64 { return a[i] })
}

// pairwiseSumAt is pairwiseSum of at(lo), ..., at(lo+n-1): the one
// implementation, also for samples that are not kept as a []float64 (the
// inter-token gaps, see itlStore) and for the std's squared deviations.
// It calls at with strictly increasing indices.
func pairwiseSumAt(lo, n int, at func(int) float64) float64 {
	switch {
	case n < 8:
		res := 0.0
		for i := range n {
			res += at(lo + i)
		}
		return res
	case n <= 128:
		var r [8]float64
		for j := range r {
			r[j] = at(lo + j)
		}
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += at(lo + i + j)
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += at(lo + i)
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSumAt(lo, n2, at) + pairwiseSumAt(lo+n2, n-n2, at)
	}
}

// mean is np.mean: the pairwise sum divided by the count.
func mean(a []float64) float64 {
	return meanAt(len(a), func(i int) float64 { return a[i] })
}

// std is np.std with ddof=0: sqrt(mean(|x - mean|^2)), summed pairwise.
func std(a []float64) float64 {
	return stdAt(len(a), func(i int) float64 { return a[i] })
}

func meanAt(n int, at func(int) float64) float64 {
	if n == 0 {
		return 0
	}
	return pairwiseSumAt(0, n, at) / float64(n)
}

func stdAt(n int, at func(int) float64) float64 {
	return stdAround(n, meanAt(n, at), at)
}

// stdAround is stdAt given the mean m.
func stdAround(n int, m float64, at func(int) float64) float64 {
	if n == 0 {
		return 0
	}
	return math.Sqrt(pairwiseSumAt(0, n, func(i int) float64 { d := at(i) - m; return d * d }) / float64(n))
}

// median is np.median of sorted values.
func median(sorted []float64) float64 {
	return medianAt(len(sorted), func(i int) float64 { return sorted[i] })
}

// percentile is np.percentile(a, p) with method "linear" on sorted values.
func percentile(sorted []float64, p float64) float64 {
	return percentileAt(len(sorted), func(i int) float64 { return sorted[i] }, p)
}

// medianAt is np.median of n sorted values, the i-th being at(i).
func medianAt(n int, at func(int) float64) float64 {
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return at(n / 2)
	}
	return (at(n/2-1) + at(n/2)) / 2
}

// percentileAt is np.percentile(a, p) with method "linear" on n sorted
// values: the virtual index (n-1)*(p/100), interpolated with NumPy's _lerp,
// which computes from the upper neighbour when the fraction is >= 0.5.
func percentileAt(n int, at func(int) float64, p float64) float64 {
	if n == 0 {
		return 0
	}
	vi := float64(n-1) * (p / 100)
	if vi >= float64(n-1) {
		return at(n - 1)
	}
	if vi <= 0 {
		return at(0)
	}
	lo := math.Floor(vi)
	g := vi - lo
	a, b := at(int(lo)), at(int(lo)+1)
	d := b - a
	if g >= 0.5 {
		return b - d*(1-g)
	}
	return a + d*g
}

func sortFloats(a []float64) { slices.Sort(a) }
