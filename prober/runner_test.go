package prober

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// fakeServer is a RequestFunc whose requests take OutputLen milliseconds,
// fail when LoRA is "fail", and track the number in flight.
type fakeServer struct {
	inFlight, maxInFlight atomic.Int64
	calls                 atomic.Int64
}

func (f *fakeServer) do(ctx context.Context, p datasets.Prompt, scheduled time.Time) Result {
	f.calls.Add(1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	r := Result{Scheduled: scheduled, Sent: time.Now(), RequestID: p.Text}
	t := time.NewTimer(time.Duration(p.OutputLen) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		r.Outcome = OutcomeSuccess
		if p.LoRA == "fail" {
			r.Outcome, r.Err = OutcomeHTTP5xx, "503 Service Unavailable"
		}
	case <-ctx.Done():
		r.Outcome, r.Err = OutcomeCanceled, ctx.Err().Error()
	}
	r.End = time.Now()
	return r
}

func prompts(ms ...int) []datasets.Prompt {
	out := make([]datasets.Prompt, len(ms))
	for i, m := range ms {
		out[i] = datasets.Prompt{Text: string(rune('a' + i)), OutputLen: m}
	}
	return out
}

// timing is one result's times as offsets from the run's start.
type timing struct {
	ID                   string
	Scheduled, Sent, End time.Duration
	Outcome              Outcome
}

func timings(run BenchmarkRun) []timing {
	out := make([]timing, len(run.Results))
	for i, r := range run.Results {
		out[i] = timing{r.RequestID, r.Scheduled.Sub(run.Start), r.Sent.Sub(run.Start), r.End.Sub(run.Start), r.Outcome}
	}
	return out
}

func TestBenchmarkTimings(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, tc := range []struct {
		name        string
		cfg         BenchmarkConfig
		want        []timing
		wantMaxConc int64
		wantDur     time.Duration
	}{
		{
			name: "constant rate, results in dispatch order",
			cfg:  BenchmarkConfig{Pacer: Constant{Rate: 10}, Prompts: prompts(500, 50, 10)},
			want: []timing{
				{"a", 0, 0, 500 * ms, OutcomeSuccess},
				{"b", 100 * ms, 100 * ms, 150 * ms, OutcomeSuccess},
				{"c", 200 * ms, 200 * ms, 210 * ms, OutcomeSuccess},
			},
			wantMaxConc: 2,
			wantDur:     500 * ms,
		},
		{
			// Arrivals keep their planned times and queue for a slot:
			// Sent-Scheduled is the client queue time (0, 0, 1 s, 1 s, 2 s).
			name: "burst behind max concurrency 2",
			cfg:  BenchmarkConfig{Prompts: prompts(1000, 1000, 1000, 1000, 1000), MaxConcurrency: 2},
			want: []timing{
				{"a", 0, 0, 1000 * ms, OutcomeSuccess},
				{"b", 0, 0, 1000 * ms, OutcomeSuccess},
				{"c", 0, 1000 * ms, 2000 * ms, OutcomeSuccess},
				{"d", 0, 1000 * ms, 2000 * ms, OutcomeSuccess},
				{"e", 0, 2000 * ms, 3000 * ms, OutcomeSuccess},
			},
			wantMaxConc: 2,
			wantDur:     3000 * ms,
		},
		{
			// Request c is due at 200ms but the only slot frees at 300ms;
			// d, due at 300ms, queues behind it in arrival order.
			name: "paced arrivals behind max concurrency 1",
			cfg:  BenchmarkConfig{Pacer: Constant{Rate: 10}, Prompts: prompts(50, 200, 10, 10), MaxConcurrency: 1},
			want: []timing{
				{"a", 0, 0, 50 * ms, OutcomeSuccess},
				{"b", 100 * ms, 100 * ms, 300 * ms, OutcomeSuccess},
				{"c", 200 * ms, 300 * ms, 310 * ms, OutcomeSuccess},
				{"d", 300 * ms, 310 * ms, 320 * ms, OutcomeSuccess},
			},
			wantMaxConc: 1,
			wantDur:     320 * ms,
		},
		{
			name: "hard duration cap cancels requests in flight",
			cfg:  BenchmarkConfig{Pacer: Constant{Rate: 10}, Prompts: prompts(1000, 90, 100, 100, 100), MaxDuration: 250 * ms},
			want: []timing{
				{"a", 0, 0, 250 * ms, OutcomeCanceled},
				{"b", 100 * ms, 100 * ms, 190 * ms, OutcomeSuccess},
				{"c", 200 * ms, 200 * ms, 250 * ms, OutcomeCanceled},
			},
			wantMaxConc: 2,
			wantDur:     250 * ms,
		},
		{
			name: "pacer stop ends dispatching gracefully",
			cfg: BenchmarkConfig{
				Pacer:   MaxDuration{Pacer: Constant{Rate: 10}, Max: 150 * ms},
				Prompts: prompts(1000, 90, 100),
			},
			want: []timing{
				{"a", 0, 0, 1000 * ms, OutcomeSuccess},
				{"b", 100 * ms, 100 * ms, 190 * ms, OutcomeSuccess},
			},
			wantMaxConc: 2,
			wantDur:     1000 * ms,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeServer{}
				tc.cfg.Do = f.do
				run, err := Benchmark(t.Context(), tc.cfg)
				if err != nil {
					t.Fatalf("Benchmark() error = %v", err)
				}
				if diff := cmp.Diff(tc.want, timings(run)); diff != "" {
					t.Errorf("Benchmark() timings (-want +got):\n%s", diff)
				}
				if got := f.maxInFlight.Load(); got != tc.wantMaxConc {
					t.Errorf("max requests in flight = %d, want %d", got, tc.wantMaxConc)
				}
				if run.Duration != tc.wantDur {
					t.Errorf("Duration = %v, want %v", run.Duration, tc.wantDur)
				}
				if run.Dispatched != len(tc.want) {
					t.Errorf("Dispatched = %d, want %d", run.Dispatched, len(tc.want))
				}
			})
		})
	}
}

func TestBenchmarkWarmup(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeServer{}
		start := time.Now()
		run, err := Benchmark(t.Context(), BenchmarkConfig{
			Prompts:        prompts(10, 10),
			Warmup:         WarmupPrompts(datasets.Prompt{Text: "w", OutputLen: 100}, 5),
			WarmupPause:    time.Second,
			MaxConcurrency: 2,
			Do:             f.do,
		})
		if err != nil {
			t.Fatalf("Benchmark() error = %v", err)
		}
		// The warmup prompt is capped at 32 ms here (32 tokens), so five
		// warmups two at a time take 3*32 ms, then the pause.
		if got, want := run.Start.Sub(start), 96*time.Millisecond+time.Second; got != want {
			t.Errorf("measured run started after %v, want %v", got, want)
		}
		if len(run.Warmup) != 5 || len(run.Results) != 2 {
			t.Errorf("got %d warmup and %d measured results, want 5 and 2", len(run.Warmup), len(run.Results))
		}
		if got := f.maxInFlight.Load(); got != 2 {
			t.Errorf("max requests in flight = %d, want 2 (warmup obeys max concurrency)", got)
		}
	})
}

func TestBenchmarkWarmupFails(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeServer{}
		_, err := Benchmark(t.Context(), BenchmarkConfig{
			Prompts: prompts(10),
			Warmup:  WarmupPrompts(datasets.Prompt{Text: "w", OutputLen: 5, LoRA: "fail"}, 3),
			Do:      f.do,
		})
		if !errors.Is(err, ErrWarmupFailed) {
			t.Fatalf("Benchmark() error = %v, want %v", err, ErrWarmupFailed)
		}
		if got := f.calls.Load(); got != 3 {
			t.Errorf("sent %d requests, want only the 3 warmups", got)
		}
	})
}

func TestBenchmarkCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		f := &fakeServer{}
		time.AfterFunc(1500*time.Millisecond, cancel)
		run, err := Benchmark(ctx, BenchmarkConfig{
			Pacer:   Constant{Rate: 1},
			Prompts: prompts(1000, 1000, 1000, 1000),
			Do:      f.do,
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Benchmark() error = %v, want context.Canceled", err)
		}
		want := []timing{
			{"a", 0, 0, 1000 * time.Millisecond, OutcomeSuccess},
			{"b", time.Second, time.Second, 1500 * time.Millisecond, OutcomeCanceled},
		}
		if diff := cmp.Diff(want, timings(run)); diff != "" {
			t.Errorf("Benchmark() timings (-want +got):\n%s", diff)
		}
	})
}

func TestBenchmarkStreamingAndProgress(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			prog   Progress
			mu     sync.Mutex
			seen   []int
			active atomic.Int32
		)
		ps := prompts(300, 100, 200, 100)
		ps[3].LoRA = "fail"
		done := make(chan BenchmarkRun)
		go func() {
			run, err := Benchmark(t.Context(), BenchmarkConfig{
				Pacer:          Constant{Rate: 10},
				Prompts:        ps,
				DiscardResults: true,
				Progress:       &prog,
				Do:             (&fakeServer{}).do,
				OnResult: func(i int, _ datasets.Prompt, r Result) {
					if active.Add(1) != 1 {
						t.Error("OnResult called concurrently")
					}
					mu.Lock()
					seen = append(seen, i)
					mu.Unlock()
					time.Sleep(time.Millisecond) // widen any race window
					active.Add(-1)
				},
			})
			if err != nil {
				t.Errorf("Benchmark() error = %v", err)
			}
			done <- run
		}()

		// At 250ms: a, b, c dispatched; b done (at 200ms).
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		if diff := cmp.Diff(ProgressSnapshot{Total: 4, Dispatched: 3, Done: 1}, prog.Snapshot()); diff != "" {
			t.Errorf("Progress at 250ms (-want +got):\n%s", diff)
		}
		run := <-done
		if run.Results != nil {
			t.Errorf("Results kept with DiscardResults: %d", len(run.Results))
		}
		if diff := cmp.Diff(ProgressSnapshot{Total: 4, Dispatched: 4, Done: 4, Failed: 1}, prog.Snapshot()); diff != "" {
			t.Errorf("final Progress (-want +got):\n%s", diff)
		}
		// Completion order: b at 200, a at 300, d at 400, c at 400-ish.
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 4 || seen[0] != 1 || seen[1] != 0 {
			t.Errorf("OnResult indices in completion order = %v, want [1 0 ...] with 4 entries", seen)
		}
	})
}

func TestBenchmarkConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  BenchmarkConfig
	}{
		{"no request function", BenchmarkConfig{Prompts: prompts(1)}},
		{"negative concurrency", BenchmarkConfig{Prompts: prompts(1), MaxConcurrency: -1, Do: (&fakeServer{}).do}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Benchmark(t.Context(), tc.cfg); err == nil {
				t.Errorf("Benchmark() error = nil, want an error")
			}
		})
	}
}

// TestMaxDurationCancelsRealRequests: a request the MaxDuration cap cuts
// is canceled, not a timeout (it did not time out: the run was stopped),
// the duration is the cap, and the prompts never sent are visible.
func TestMaxDurationCancelsRealRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := llmtest.Script{Chunks: []llmtest.Chunk{{Delay: 10 * time.Millisecond, Data: chatEv("a")}}, Hang: true}
		p := &Prober{
			Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{hang, hang}}},
			Backend: openAIChat{},
			Options: RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true},
		}
		run, err := Benchmark(t.Context(), BenchmarkConfig{
			Do: p.Run, Pacer: Constant{Rate: 10}, Prompts: prompts(1, 1, 1, 1, 1), MaxDuration: 150 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !run.HitMaxDuration || run.Duration != 150*time.Millisecond {
			t.Errorf("HitMaxDuration %v, Duration %v, want true and the 150ms cap", run.HitMaxDuration, run.Duration)
		}
		if run.Dispatched != 2 {
			t.Errorf("Dispatched = %d, want 2 (at 0 and 100ms; 3 prompts never sent)", run.Dispatched)
		}
		for _, r := range run.Results {
			if r.Outcome != OutcomeCanceled {
				t.Errorf("request cut by the cap: outcome %s (%s), want canceled", r.Outcome, r.Err)
			}
		}
	})
}

// TestBenchmarkSourceOnDemand: prompts made while the run goes are sent as
// they are made: with each prompt taking 10 ms to make, the first request
// goes out after one prompt, not after all of them, and the pacer's
// schedule holds for the rest. A prompt the source fails to make stops
// dispatching; the requests in flight finish, and the error is returned.
func TestBenchmarkSourceOnDemand(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ps := prompts(100, 100, 100, 100, 100)
		fail := errors.New("cannot make prompt 3")
		src := datasets.OnDemand(len(ps), 0, 500, ps[0], func(yield func(datasets.Prompt, error) bool) {
			for i, p := range ps {
				time.Sleep(10 * time.Millisecond)
				if i == 3 {
					yield(datasets.Prompt{}, fail)
					return
				}
				if !yield(p, nil) {
					return
				}
			}
		})
		f := &fakeServer{}
		run, err := Benchmark(t.Context(), BenchmarkConfig{Pacer: Constant{Rate: 20}, Source: src, Do: f.do})
		if !errors.Is(err, fail) {
			t.Errorf("Benchmark() error = %v, want %v", err, fail)
		}
		want := []timing{
			{"a", 0, 10 * time.Millisecond, 110 * time.Millisecond, OutcomeSuccess},
			{"b", 50 * time.Millisecond, 50 * time.Millisecond, 150 * time.Millisecond, OutcomeSuccess},
			{"c", 100 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, OutcomeSuccess},
		}
		if diff := cmp.Diff(want, timings(run)); diff != "" {
			t.Errorf("timings (-want +got):\n%s", diff)
		}
		if run.Planned != 5 || run.Dispatched != 3 {
			t.Errorf("planned %d, dispatched %d; want 5, 3", run.Planned, run.Dispatched)
		}
	})
}
