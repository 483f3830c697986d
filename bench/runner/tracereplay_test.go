package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// observerFunc adapts a function to prober.Observer.
type observerFunc func(prober.Result)

func (f observerFunc) Observe(r prober.Result) { f(r) }

// traceReplayCases are two traces replayed by their timestamps: the
// shipped BurstGPT rows (GPT-4 rows with a response at 45, 160 and
// 161.5 s) at a slowdown of 0.001, so gaps of 115 and 1.5 ms; and the
// first six rows of Azure's 2023 code trace at 1.0, gaps of 39 to
// 304 ms. want is each row's time from the first, slowed down.
var traceReplayCases = []struct {
	dataset, path string
	slowdown      float64
	want          []time.Duration
}{
	{"burstgpt", "../../datasets/testdata/burstgpt.csv", 0.001,
		[]time.Duration{0, 115 * time.Millisecond, 116500 * time.Microsecond}},
	{"azure-trace", "../../datasets/testdata/azure_code_2023.csv", 1, []time.Duration{0, 52 * time.Millisecond,
		98189 * time.Microsecond, 140684 * time.Microsecond, 444994 * time.Microsecond, 539187 * time.Microsecond}},
}

// captureHandler answers /v1/completions with one streamed token and
// records when each request arrived and the max_tokens it asked for.
type captureHandler struct {
	mu        sync.Mutex
	at        []time.Time
	maxTokens []int
}

func (h *captureHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	if r.URL.Path != "/v1/completions" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		MaxTokens int `json:"max_tokens"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.at = append(h.at, now)
	h.maxTokens = append(h.maxTokens, body.MaxTokens)
	h.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, `data: {"choices":[{"index":0,"text":"hi"}]}`+"\n\n")
	io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`+"\n\n")
	io.WriteString(w, "data: [DONE]\n\n")
}

// replayTrace prepares and runs a trace replay against base (through tr
// if set) and returns every measured Result, in planned order, and the
// prompts' output lengths in the order the run sends them.
func replayTrace(t testing.TB, dataset, path string, slowdown float64, n int, base string, tr http.RoundTripper) ([]prober.Result, []int) {
	t.Helper()
	s := DefaultSpec()
	s.Backend, s.BaseURL, s.Model, s.Tokenizer = "vllm", base, "m", "../../tokenizer/testdata/qwen3"
	s.Dataset, s.Options.DatasetPath, s.Options.MooncakeSlowdownFactor = dataset, path, slowdown
	s.NumPrompts, s.UseTraceTimestamps = n, true
	s.WarmupRequests, s.ReadyCheckTimeout, s.NoServerMetrics = 0, 0, true
	var (
		mu      sync.Mutex
		results []prober.Result
	)
	pause := time.Duration(0)
	env := Env{Logger: log.NewNopLogger(), PauseAfterWarmup: &pause, Observer: observerFunc(func(r prober.Result) {
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	})}
	ctx := context.Background()
	p, err := Prepare(ctx, s, env)
	if err != nil {
		t.Fatal(err)
	}
	if tr != nil {
		p.Client.Transport = tr
		p.Prober.Client = p.Client
	}
	var lens []int
	for _, q := range p.Prompts.Prompts() {
		lens = append(lens, q.OutputLen)
	}
	if _, err := p.Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(results, func(a, b prober.Result) int { return a.Scheduled.Compare(b.Scheduled) })
	return results, lens
}

// TestTraceReplayOnSchedule replays a BurstGPT and an Azure trace by their
// timestamps and holds each request to the trace: its planned time
// (Scheduled) is the run's start plus its row's time from the first
// row's, times the slowdown factor, to the nanosecond; the scheduler sent
// it (Sent) at that time; and the capture server received it at its
// row's time from the first request's arrival, in the trace's order.
//
// It runs in a synctest bubble over in-memory connections, so the times
// are virtual and exact: a shared machine's scheduling noise cannot fail
// it, and any lag the scheduler itself added (a sleep too long, a drift
// from sending late requests relative to the previous one) shows as a
// non-zero difference. What real sockets and a real clock add on top is
// measured by BenchmarkTraceReplayLag.
func TestTraceReplayOnSchedule(t *testing.T) {
	for _, tc := range traceReplayCases {
		t.Run(tc.dataset, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &captureHandler{}
				l := llmtest.NewPipeListener()
				srv := &http.Server{Handler: h}
				go func() { _ = srv.Serve(l) }()
				tr := &http.Transport{DialContext: l.Dial}
				results, lens := replayTrace(t, tc.dataset, tc.path, tc.slowdown, len(tc.want), "http://trace.test", tr)
				tr.CloseIdleConnections()
				_ = srv.Close()
				if len(results) != len(tc.want) {
					t.Fatalf("%d results, want %d", len(results), len(tc.want))
				}
				start := results[0].Scheduled
				for i, r := range results {
					if r.Outcome != prober.OutcomeSuccess {
						t.Errorf("request %d: %s %v", i, r.Outcome, r.Err)
					}
					if got := r.Scheduled.Sub(start); got != tc.want[i] {
						t.Errorf("request %d planned at %v, want the trace's %v", i, got, tc.want[i])
					}
					if lag := r.Sent.Sub(r.Scheduled); lag != 0 {
						t.Errorf("request %d sent %v after its planned time, want at it", i, lag)
					}
				}
				h.mu.Lock()
				defer h.mu.Unlock()
				if !slices.Equal(h.maxTokens, lens) {
					t.Errorf("the server saw max_tokens %v in arrival order, want the trace's %v", h.maxTokens, lens)
				}
				for i, at := range h.at {
					if got := at.Sub(h.at[0]); i < len(tc.want) && got != tc.want[i] {
						t.Errorf("request %d arrived %v after the first, want the trace's %v", i, got, tc.want[i])
					}
				}
			})
		})
	}
}

// BenchmarkTraceReplayLag replays the same traces against a loopback
// server with a real clock and reports how late the scheduler sent each
// request (Sent − Scheduled: the sleep's overshoot, the goroutine start,
// building the request and, as Sent is when the write begins, a new
// connection's dial): the mean and the worst over every request of every
// iteration, in microseconds.
func BenchmarkTraceReplayLag(b *testing.B) {
	for _, tc := range traceReplayCases {
		b.Run(tc.dataset, func(b *testing.B) {
			srv := httptest.NewServer(&captureHandler{})
			defer srv.Close()
			var sum, worst time.Duration
			n := 0
			for b.Loop() {
				results, _ := replayTrace(b, tc.dataset, tc.path, tc.slowdown, len(tc.want), srv.URL, nil)
				for _, r := range results {
					lag := r.Sent.Sub(r.Scheduled)
					sum += lag
					worst = max(worst, lag)
					n++
				}
			}
			b.ReportMetric(float64(sum.Microseconds())/float64(n), "mean-lag-µs")
			b.ReportMetric(float64(worst.Microseconds()), "max-lag-µs")
		})
	}
}
