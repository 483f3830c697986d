package benchapi

import (
	"fmt"

	"github.com/servingprobe/servingprobe/benchrun"
)

// maxWindowBytes bounds the memory a window's prompts may take: the
// prompt set, built before the first request and held to the end, and the
// images of the requests in flight, made per request. The count limits
// alone do not bound it: bench.max_prompts prompts of the largest
// random_input_len are gigabytes of text, and every image prompt was
// megabytes more.
const maxWindowBytes = 1 << 30

// checkMemory refuses, naming the bound, a window whose prompts would
// need more than maxWindowBytes (benchrun.Spec.MemoryBytes: the prompt
// set and the images of max_concurrency requests in flight).
func checkMemory(s *benchrun.Spec) *apiError {
	held, flight := s.MemoryBytes()
	if need := held + flight; need > maxWindowBytes {
		return overLimit("num_prompts: %d prompts of %s would need about %s (%s held for the run, %s of images in flight), more than a window may hold (%s); lower num_prompts, random_input_len or max_concurrency",
			s.NumPrompts, s.Dataset, mib(need), mib(held), mib(flight), mib(maxWindowBytes))
	}
	return nil
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
