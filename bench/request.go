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
	return outcomeSucceeded(r.Outcome, emptySuccess)
}

// outcomeSucceeded is the success rule on an outcome, for a Result
// (RequestSucceeded) and for a request read back from the details
// (detailSucceeded).
func outcomeSucceeded(o prober.Outcome, emptySuccess bool) bool {
	return o == prober.OutcomeSuccess || emptySuccess && o == prober.OutcomeEmptyOutput
}

// RequestInputTokens is the prompt length the summary gives a request
// built from row (input_lens; see inputTokens), for --print-requests.
func RequestInputTokens(sm *prober.Samples, row datasets.Prompt) int { return inputTokens(sm, row) }
