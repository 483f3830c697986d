package bench

import (
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// RequestSucceeded reports whether the summary counts r as a success:
// its outcome is success, or with compat empty-success it is an empty
// output (sglang counts any 200 stream read without an exception as a
// success, even one with no text; its TTFT then stays 0). The summary
// and --print-requests both decide by it.
func RequestSucceeded(r *prober.Result, emptySuccess bool) bool {
	return r.Outcome == prober.OutcomeSuccess || emptySuccess && r.Outcome == prober.OutcomeEmptyOutput
}

// RequestInputTokens is the prompt length the summary gives a request
// built from row (input_lens; see inputTokens), for --print-requests.
func RequestInputTokens(sm *prober.Samples, row datasets.Prompt) int { return inputTokens(sm, row) }
