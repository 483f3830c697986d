package bench

import (
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// TestEmbeddingRun: an embeddings run counts its inputs and E2E, and no
// output token anywhere, the peak included.
func TestEmbeddingRun(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	r := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: t0, Sent: t0, End: t0.Add(30 * time.Millisecond),
		InputTokens: 9, InputTokensSource: prober.TokenSourceUsage, OutputTokensSource: prober.TokenSourceUsage, FinishReason: "stop"}
	s, err := Summarize([]prober.Result{r, r}, []datasets.Prompt{{PromptLen: 8}, {PromptLen: 8}},
		Params{Backend: "sglang-embedding", Embedding: true, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.Completed != 2 || s.TotalInputTokens != 18 || s.TotalOutputTokens != 0 || s.MaxOutputTokensPerS != 0 || s.E2ELatency.Mean != 30 {
		t.Errorf("Summarize(embeddings) = completed %d, input %d, output %d, peak %v, mean E2E %v; want 2, 18, 0, 0, 30",
			s.Completed, s.TotalInputTokens, s.TotalOutputTokens, s.MaxOutputTokensPerS, s.E2ELatency.Mean)
	}
}
