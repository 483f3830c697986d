package prober

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// TestSlowSourceIsQueueTime: prompts made slower than the schedule asks
// for them (30 ms each, due every 10 ms) delay the requests' sends, and
// the delay is client queue time (Sent − Scheduled), never part of a
// request's own times: every TTFT and E2E is the server's (50 ms to the
// first event, 10 ms between events),
// through the real prober on a scripted stream.
func TestSlowSourceIsQueueTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 4
		ps := prompts(4, 4, 4, 4)
		src := datasets.OnDemand(n, 0, 4*n, ps[0], func(yield func(datasets.Prompt, error) bool) {
			for _, p := range ps {
				time.Sleep(30 * time.Millisecond)
				if !yield(p, nil) {
					return
				}
			}
		})
		be, _ := NewBackend("vllm")
		events := llmtest.SplitEvents(string(benchStream("vllm", 4)))
		e2e := 50*time.Millisecond + time.Duration(len(events)-1)*10*time.Millisecond // the last event ends the stream
		script := llmtest.Script{Chunks: llmtest.SSE(50*time.Millisecond, 10*time.Millisecond, events...)}
		p := &Prober{Backend: be, Client: &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{script}}},
			Options: RequestOptions{BaseURL: "http://sim", Stream: true, Model: "m"}}
		run, err := Benchmark(t.Context(), BenchmarkConfig{Pacer: Constant{Rate: 100}, Source: src, Do: p.Run})
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Results) != n {
			t.Fatalf("%d results, want %d", len(run.Results), n)
		}
		for i, r := range run.Results {
			s := r.Samples()
			wantQueue := time.Duration(i+1)*30*time.Millisecond - time.Duration(i)*10*time.Millisecond
			if r.Outcome != OutcomeSuccess || s.Queue != wantQueue || s.TTFT != 50*time.Millisecond || s.E2E != e2e {
				t.Errorf("request %d: %s, queue %v, TTFT %v, E2E %v; want success, %v, 50ms, %v", i, r.Outcome, s.Queue, s.TTFT, s.E2E, wantQueue, e2e)
			}
		}
	})
}
