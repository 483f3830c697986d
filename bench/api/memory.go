package api

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/servingprobe/servingprobe/bench/runner"
)

// maxWindowBytes is a window's memory budget: what its run may hold, as
// runner.Spec.MemoryNeed counts it (the prompt set, the images and
// tokenizer work of the requests in flight, and what the summary keeps of
// every request and output token for the record). The count limits alone
// do not bound it: bench.max_prompts prompts of the largest
// random_input_len are gigabytes of text, and as many requests of the
// largest random_output_len kept gigabytes of per-token samples. The same
// budget is charged while the window runs (runner.Env.MemoryBudget),
// where the outputs are known.
const maxWindowBytes = 1 << 30

// checkMemory refuses, naming the fields, a window whose worst case
// (runner.Spec.MemoryNeed) is over maxWindowBytes.
func checkMemory(s *runner.Spec) *apiError {
	n := s.MemoryNeed()
	need := n.Total()
	if need <= maxWindowBytes {
		return nil
	}
	// Name the fields of the parts that weigh, largest first.
	type part struct {
		bytes  uint64
		fields string
	}
	parts := []part{
		{n.Prompts, "num_prompts, random_input_len"},
		{n.InFlight, "max_concurrency"},
		{n.Outputs, "num_prompts, random_output_len"},
	}
	slices.SortStableFunc(parts, func(a, b part) int { return cmp.Compare(b.bytes, a.bytes) })
	return overLimit("%s: %d prompts of %s would need about %s (%s of prompts held for the run, %s in flight, %s of outputs kept for the record), more than a window may hold (%s); lower %s",
		parts[0].fields, s.NumPrompts, s.Dataset, mib(need), mib(n.Prompts), mib(n.InFlight), mib(n.Outputs), mib(maxWindowBytes), parts[0].fields)
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
