package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
)

// TestProbeEverySimulatedBackend runs the probe command's core against the
// built-in simulator over loopback, once per backend name. The simulator's
// framing tests and the prober's golden transcripts are written from the
// servers' documented formats independently; this test checks that the two
// halves agree end to end.
func TestProbeEverySimulatedBackend(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.TTFTJitter, cfg.PrefillPerToken = 5*time.Millisecond, 0, 0
	cfg.ITL, cfg.ITLJitter = time.Millisecond, 0
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()

	const maxTokens = 12
	for _, backend := range prober.BackendNames() {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a := &probeArgs{
				URL: srv.URL, Backend: backend, Prompt: "Tell me about the tide.",
				MaxTokens: maxTokens, Stream: true, IgnoreEOS: true, IncludeUsage: true,
				Timeout: 15 * time.Second,
			}
			if backend == "trt" || backend == "truss" {
				a.Model = cfg.Model // bench_serving requires --model for these
			}
			r, err := runProbe(ctx, a)
			if err != nil {
				t.Fatalf("runProbe: %v (result %+v)", err, r)
			}
			if r.Outcome != prober.OutcomeSuccess {
				t.Fatalf("outcome = %s (%s), want success", r.Outcome, r.Err)
			}
			if info, _ := prober.LookupBackend(backend); info.Embedding {
				// Nothing is generated: the server's input count and an E2E.
				if r.OutputTokens != 0 || r.InputTokens <= 0 || r.InputTokensSource != prober.TokenSourceUsage || r.Samples().E2E <= 0 {
					t.Errorf("embeddings: output %d, input %d (%s), E2E %v", r.OutputTokens, r.InputTokens, r.InputTokensSource, r.Samples().E2E)
				}
				return
			}
			// trt has no usage block; one token per event is the protocol.
			if r.OutputTokens != maxTokens {
				t.Errorf("output tokens = %d (%s), want %d", r.OutputTokens, r.OutputTokensSource, maxTokens)
			}
			if r.Samples().TTFT <= 0 || r.Samples().E2E < r.Samples().TTFT {
				t.Errorf("TTFT %v, E2E %v: want 0 < TTFT <= E2E", r.Samples().TTFT, r.Samples().E2E)
			}
			if len(r.Events) == 0 {
				t.Error("no output events recorded")
			}
			// ollama states its own counts and timings; they agree with
			// ours (the prompt eval is the simulator's 5 ms TTFT).
			if backend == "ollama" || backend == "ollama-chat" {
				st := r.Server
				if st.EvalCount != r.OutputTokens || st.PromptEvalCount != r.InputTokens || st.PromptEvalDuration < 5*time.Millisecond ||
					st.TotalDuration < st.PromptEvalDuration+st.EvalDuration || r.OutputTokensSource != prober.TokenSourceUsage {
					t.Errorf("server timings %+v, output %d (%s), input %d", st, r.OutputTokens, r.OutputTokensSource, r.InputTokens)
				}
			} else if backend == "sglang" || backend == "sglang-native" {
				// sglang's /generate states its e2e_latency on the last
				// chunk, always (the simulator too): the server's total, no
				// longer than the client's E2E, and nothing else.
				st := r.Server
				if st.TotalDuration <= 0 || st.TotalDuration > r.Samples().E2E || st != (prober.ServerTimings{TotalDuration: st.TotalDuration}) {
					t.Errorf("%s: server timings %+v, want only a total in (0, E2E %v]", backend, st, r.Samples().E2E)
				}
			} else if r.Server.Stated() {
				t.Errorf("%s states server timings %+v", backend, r.Server)
			}
		})
	}
}
