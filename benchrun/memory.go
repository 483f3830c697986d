package benchrun

import (
	"math"
	"math/bits"

	"github.com/servingprobe/servingprobe/datasets"
)

// MemoryBytes estimates what a run's prompts hold in memory: the prompt
// set, built before the first request and held to the end
// (datasets.EstimateBytes), and the images of the requests in flight, made
// per request (datasets.ImageBytes for each of MaxConcurrency requests, at
// least one). The bench-window API bounds a window by their sum.
func (s *Spec) MemoryBytes() (held, flight uint64) {
	held = datasets.EstimateBytes(s.Dataset, s.NumPrompts, s.Options)
	// The product saturates: a huge concurrency must not wrap around to a
	// small estimate that passes the window's bound.
	hi, lo := bits.Mul64(uint64(max(s.MaxConcurrency, 1)), datasets.ImageBytes(s.Dataset, s.Options))
	if hi != 0 {
		lo = math.MaxUint64
	}
	return held, lo
}
