package benchrun

import "github.com/servingprobe/servingprobe/datasets"

// MemoryBytes estimates what a run's prompts hold in memory: the prompt
// set, built before the first request and held to the end
// (datasets.EstimateBytes), and the images of the requests in flight, made
// per request (datasets.ImageBytes for each of MaxConcurrency requests, at
// least one). The bench-window API bounds a window by their sum.
func (s *Spec) MemoryBytes() (held, flight uint64) {
	held = datasets.EstimateBytes(s.Dataset, s.NumPrompts, s.Options)
	flight = uint64(max(s.MaxConcurrency, 1)) * datasets.ImageBytes(s.Dataset, s.Options)
	return held, flight
}
