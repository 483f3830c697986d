package exporter

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// TestEngineServerTTFTSurfaces: the prober's fixtures of sglang's
// /generate stream with --enable-metrics and of NVIDIA Dynamo's chat
// stream with nvext.timing (both written from the servers' sources; see
// prober's TestDecodeServerTimings), replayed over HTTP, give the server's
// TTFT as the prober read it and TTFT minus it, equal on every surface:
// the two histograms, the history entry and /probe?debug=true.
func TestEngineServerTTFTSurfaces(t *testing.T) {
	for _, tc := range []struct {
		name, backend, fixture string
		// wantServer is the server's TTFT as the fixture states it:
		// Dynamo's ttft_ms, sglang's prefill_finished_time −
		// request_received_ts (the prober's golden file of the fixture).
		wantServer, wantQueue time.Duration
	}{
		{"sglang", "sglang", "../prober/testdata/sglang/stated_timing.sse", 61421871, 871200},
		{"dynamo", "vllm-chat", "../prober/testdata/vllm-chat/dynamo_nvext_timing.sse", 56025 * time.Microsecond, 3118 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := os.ReadFile(tc.fixture)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				// The first token comes after the TTFT the server states.
				time.Sleep(tc.wantServer + 20*time.Millisecond)
				for ev := range strings.SplitAfterSeq(string(body), "\n\n") {
					fmt.Fprint(w, ev)
					w.(http.Flusher).Flush()
				}
			}))
			t.Cleanup(srv.Close)
			info, err := prober.LookupBackend(tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			tgt := config.Target{Name: "t", URL: srv.URL, Backend: tc.backend, Model: "m"}
			p := prober.Prober{Client: srv.Client(), Backend: info.New(), Name: tc.backend, Options: prober.ModuleOptions(tgt, config.Module{}), Target: "t", Module: "mod"}
			r := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 3}, time.Time{})
			if r.Outcome != prober.OutcomeSuccess {
				t.Fatalf("probe: %s (%s)", r.Outcome, r.Err)
			}
			if r.Server.FirstToken != tc.wantServer || r.Server.QueueDuration != tc.wantQueue {
				t.Fatalf("server timings read = %+v, want TTFT %v and queue %v", r.Server, tc.wantServer, tc.wantQueue)
			}
			sm := r.Samples()
			if sm.ServerTTFT != tc.wantServer || sm.OutsideServerTTFT != sm.TTFT-tc.wantServer {
				t.Fatalf("split %v + %v of TTFT %v, want the stated %v and the rest", sm.ServerTTFT, sm.OutsideServerTTFT, sm.TTFT, tc.wantServer)
			}

			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			m.SetTargets([]TargetSeries{{Name: "t", Backend: tc.backend, Model: "m", Modules: []string{"mod"}}})
			m.Observer(ModeProbe).Observe(r)
			hist := histogramsOf(t, reg)
			server, outside := hist["servingprobe_server_time_to_first_token_seconds"], hist["servingprobe_time_to_first_token_outside_server_seconds"]
			if server.count != 1 || server.sum != sm.ServerTTFT.Seconds() || outside.count != 1 || outside.sum != sm.OutsideServerTTFT.Seconds() {
				t.Errorf("histograms: server %+v, outside %+v; want one observation each of %v and %v", server, outside, sm.ServerTTFT.Seconds(), sm.OutsideServerTTFT.Seconds())
			}
			if ttft := hist["servingprobe_time_to_first_token_seconds"].sum; math.Abs(ttft-(server.sum+outside.sum)) > 1e-9 {
				t.Errorf("TTFT %v is not the server's %v plus the rest %v", ttft, server.sum, outside.sum)
			}

			e := entryOf(r, "m", ModeProbe, nil, &config.Redactor{})
			if e.ServerTTFTSeconds == nil || e.OutsideServerTTFTSeconds == nil ||
				*e.ServerTTFTSeconds != server.sum || *e.OutsideServerTTFTSeconds != outside.sum {
				t.Errorf("history server_ttft %v, outside %v: not the histograms' %v and %v", e.ServerTTFTSeconds, e.OutsideServerTTFTSeconds, server.sum, outside.sum)
			}
			txt := resultText(r)
			for _, want := range []string{fmt.Sprintf("server_ttft: %v s\n", server.sum), fmt.Sprintf("outside_server_ttft: %v s\n", outside.sum)} {
				if !strings.Contains(txt, want) {
					t.Errorf("/probe?debug=true lacks %q:\n%s", want, txt)
				}
			}
		})
	}
}

// TestServerTimingsText: the line shows what the server stated and leaves
// out what it did not (no zero stands for a part nobody measured); ollama's
// full account reads as it always did.
func TestServerTimingsText(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   prober.ServerTimings
		want string
	}{
		{"ollama", prober.ServerTimings{TotalDuration: 240 * time.Millisecond, LoadDuration: 2 * time.Millisecond, PromptEvalCount: 9,
			PromptEvalDuration: 30 * time.Millisecond, EvalCount: 16, EvalDuration: 200 * time.Millisecond},
			"load 2.00 ms, prompt eval 30.00 ms (9 tokens), eval 200.00 ms (16 tokens, 12.50 ms/token), total 240.00 ms"},
		{"sglang", prober.ServerTimings{FirstToken: 61421871, QueueDuration: 871200, PromptEvalDuration: 59318542, TotalDuration: 95831100},
			"queue 0.87 ms, first token 61.42 ms, prompt eval 59.32 ms, total 95.83 ms"},
		{"vllm", prober.ServerTimings{FirstToken: 48250 * time.Microsecond, QueueDuration: 2 * time.Millisecond, EvalDuration: 310500 * time.Microsecond},
			"queue 2.00 ms, first token 48.25 ms, eval 310.50 ms"},
		// A count whose duration was out of range (and dropped) shows
		// the count alone, never "0.00 ms".
		{"count without a duration", prober.ServerTimings{PromptEvalCount: 12, EvalCount: 4, TotalDuration: 90 * time.Millisecond},
			"prompt eval (12 tokens), eval (4 tokens), total 90.00 ms"},
	} {
		if got := ServerTimingsText(tc.st); got != tc.want {
			t.Errorf("%s: ServerTimingsText(%+v) = %q, want %q", tc.name, tc.st, got, tc.want)
		}
	}
}
