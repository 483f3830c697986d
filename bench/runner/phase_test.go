package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"
	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// TestDynamicPlanRun runs a two-phase dynamic plan in a synctest bubble
// over in-memory connections, against a server that takes 250 ms a
// request, and holds the run to the plan: requests are planned at the
// plan's times (phase "capped" at 10/s for 0.3 s: 0, 0.1 and 0.2 s;
// phase "open" at 4/s for 0.5 s from 0.3 s: 0.3 and 0.55 s) without
// --use-trace-timestamps; each body carries its phase's
// max_tokens and extra_request_body; and "capped"'s max_concurrency 1
// holds its second and third requests until the one before is answered,
// the wait showing as Sent after Scheduled, while "open" is sent on time.
func TestDynamicPlanRun(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"prompt_pool_size": 2, "phases": [
		{"name": "capped", "duration": 0.3, "request_rate": 10, "input_len": 8, "output_len": 3, "max_concurrency": 1,
		 "extra_request_body": {"priority": 7}},
		{"name": "open", "duration": 0.5, "request_rate": 4, "input_len": 8, "output_len": 5}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		type seen struct {
			MaxTokens int
			Priority  any
		}
		var (
			mu     sync.Mutex
			bodies []seen
		)
		l := llmtest.NewPipeListener()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/completions" {
				http.NotFound(w, r) // the run's other calls (server info)
				return
			}
			var body map[string]any
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
			n, _ := body["max_tokens"].(float64)
			mu.Lock()
			bodies = append(bodies, seen{int(n), body["priority"]})
			mu.Unlock()
			time.Sleep(250 * time.Millisecond)
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"choices":[{"index":0,"text":"hi"}]}`+"\n\n")
			io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":1,"total_tokens":9}}`+"\n\n")
			io.WriteString(w, "data: [DONE]\n\n")
		})}
		go func() { _ = srv.Serve(l) }()
		tr := &http.Transport{DialContext: l.Dial}

		s := DefaultSpec()
		s.Backend, s.BaseURL, s.Model, s.Tokenizer = "vllm", "http://plan.test", "m", "../../tokenizer/testdata/qwen3"
		s.Dataset, s.Options.DynamicWorkloadPath = "dynamic", plan
		s.WarmupRequests, s.ReadyCheckTimeout, s.NoServerMetrics = 0, 0, true
		var (
			rmu     sync.Mutex
			results []prober.Result
		)
		pause := time.Duration(0)
		env := Env{Logger: log.NewNopLogger(), PauseAfterWarmup: &pause, Observer: observerFunc(func(r prober.Result) {
			rmu.Lock()
			results = append(results, r)
			rmu.Unlock()
		})}
		p, err := Prepare(context.Background(), s, env)
		if err != nil {
			t.Fatal(err)
		}
		p.Client.Transport = tr
		p.Prober.Client = p.Client
		if _, err := p.Run(context.Background(), env); err != nil {
			t.Fatal(err)
		}
		tr.CloseIdleConnections()
		_ = srv.Close()

		slices.SortFunc(results, func(a, b prober.Result) int { return a.Scheduled.Compare(b.Scheduled) })
		ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
		wantPlanned := []time.Duration{0, ms(100), ms(200), ms(300), ms(550)}
		wantSent := []time.Duration{0, ms(250), ms(500), ms(300), ms(550)}
		if len(results) != len(wantPlanned) {
			t.Fatalf("%d requests, want %d", len(results), len(wantPlanned))
		}
		start := results[0].Scheduled
		var planned, sent []time.Duration
		for _, r := range results {
			planned = append(planned, r.Scheduled.Sub(start))
			sent = append(sent, r.Sent.Sub(start))
		}
		if diff := cmp.Diff(wantPlanned, planned); diff != "" {
			t.Errorf("planned times (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantSent, sent); diff != "" {
			t.Errorf("send times (-want +got):\n%s", diff)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []seen{{3, 7.0}, {3, 7.0}, {5, nil}, {3, 7.0}, {5, nil}}
		if diff := cmp.Diff(want, bodies); diff != "" {
			t.Errorf("bodies in arrival order (-want +got):\n%s", diff)
		}
	})
}
