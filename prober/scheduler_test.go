package prober

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"
	"github.com/google/go-cmp/cmp"
)

// recorder is an Observer and LoopObserver that keeps everything, with times
// relative to the start of the synctest bubble.
type recorder struct {
	mu      sync.Mutex
	t0      time.Time
	results []Result
	lags    []time.Duration
	skips   []time.Duration // when each skip happened
}

func (r *recorder) Observe(res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
}

func (r *recorder) ObserveLag(_, _ string, lag time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lags = append(r.lags, lag)
}

func (r *recorder) ObserveSkip(_, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skips = append(r.skips, time.Since(r.t0))
}

// scheduled returns the Scheduled times of the observed results, relative to t0.
func (r *recorder) scheduled() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, res := range r.results {
		out = append(out, res.Scheduled.Sub(r.t0))
	}
	return out
}

// sleepProbe returns a ProbeFunc that takes d (or until ctx is done) and
// records its start times relative to t0.
func sleepProbe(t0 time.Time, d time.Duration, starts *[]time.Duration, mu *sync.Mutex) ProbeFunc {
	return func(ctx context.Context, _ log.Logger) Result {
		sent := time.Now()
		mu.Lock()
		*starts = append(*starts, sent.Sub(t0))
		mu.Unlock()
		r := Result{Sent: sent, Outcome: OutcomeSuccess}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			r.Outcome = OutcomeTimeout
		}
		r.End = time.Now()
		return r
	}
}

func TestOffsetDeterministic(t *testing.T) {
	a := NewScheduler(SchedulerOptions{Seed: 1})
	b := NewScheduler(SchedulerOptions{Seed: 1})
	c := NewScheduler(SchedulerOptions{Seed: 2})
	k := JobKey{"vllm", "chat"}
	if a.Offset(k, 15*time.Second) != b.Offset(k, 15*time.Second) {
		t.Errorf("same seed gave different offsets")
	}
	if a.Offset(k, 15*time.Second) == c.Offset(k, 15*time.Second) {
		t.Errorf("seeds 1 and 2 gave the same offset %v (possible, but not for this key)", a.Offset(k, 15*time.Second))
	}
	// Offsets spread over the interval rather than piling up.
	seen := map[time.Duration]bool{}
	for _, target := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		o := a.Offset(JobKey{target, "chat"}, 15*time.Second)
		if o < 0 || o >= 15*time.Second {
			t.Fatalf("Offset(%q) = %v, want in [0, 15s)", target, o)
		}
		seen[o.Truncate(time.Second)] = true
	}
	if len(seen) < 4 {
		t.Errorf("8 targets landed in %d distinct seconds, want a spread", len(seen))
	}
	if got := a.Offset(k, 0); got != 0 {
		t.Errorf("Offset with zero interval = %v, want 0", got)
	}
}

func TestSchedulerTimes(t *testing.T) {
	tests := []struct {
		name        string
		interval    time.Duration
		probeTime   time.Duration
		timeout     time.Duration
		maxInFlight int
		run         time.Duration // virtual time after the offset
		// relative to the first tick
		wantStarts []time.Duration
		wantSkips  []time.Duration
		wantOut    []Outcome
	}{
		{
			name: "fast probe every tick", interval: 10 * time.Second, probeTime: time.Second,
			timeout: 5 * time.Second, maxInFlight: 1, run: 35 * time.Second,
			wantStarts: []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second},
			wantOut:    []Outcome{OutcomeSuccess, OutcomeSuccess, OutcomeSuccess, OutcomeSuccess},
		},
		{
			// Probe 0 runs 0-25 s, so the ticks at 10 and 20 s are skipped.
			name: "slow probe skips ticks", interval: 10 * time.Second, probeTime: 25 * time.Second,
			timeout: time.Minute, maxInFlight: 1, run: 35 * time.Second,
			wantStarts: []time.Duration{0, 30 * time.Second},
			wantSkips:  []time.Duration{10 * time.Second, 20 * time.Second},
			wantOut:    []Outcome{OutcomeSuccess}, // the second is still running at the end
		},
		{
			// Two slots: 0-25 and 10-35 run; 20 is skipped; 30 finds the first slot free.
			name: "two in flight", interval: 10 * time.Second, probeTime: 25 * time.Second,
			timeout: time.Minute, maxInFlight: 2, run: 39 * time.Second,
			wantStarts: []time.Duration{0, 10 * time.Second, 30 * time.Second},
			wantSkips:  []time.Duration{20 * time.Second},
			wantOut:    []Outcome{OutcomeSuccess, OutcomeSuccess},
		},
		{
			// The timeout cuts each probe at 5 s; no tick is skipped.
			name: "timeout", interval: 10 * time.Second, probeTime: time.Hour,
			timeout: 5 * time.Second, maxInFlight: 1, run: 24 * time.Second,
			wantStarts: []time.Duration{0, 10 * time.Second, 20 * time.Second},
			wantOut:    []Outcome{OutcomeTimeout, OutcomeTimeout},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				rec := &recorder{t0: t0}
				var mu sync.Mutex
				var starts []time.Duration
				s := NewScheduler(SchedulerOptions{Observers: []Observer{rec}, Loops: rec, Seed: 7})
				job := Job{
					Target: "t", Module: "m", Interval: tc.interval, Timeout: tc.timeout,
					MaxInFlight: tc.maxInFlight, Version: "1",
					Probe: sleepProbe(t0, tc.probeTime, &starts, &mu),
				}
				offset := s.Offset(job.Key(), tc.interval)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error)
				go func() { done <- s.Run(ctx) }()
				if err := s.Update(ctx, []Job{job}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(offset + tc.run)
				synctest.Wait()
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Run = %v", err)
				}

				shift := func(ds []time.Duration) []time.Duration {
					var out []time.Duration
					for _, d := range ds {
						out = append(out, d-offset)
					}
					return out
				}
				if diff := cmp.Diff(tc.wantStarts, shift(starts)); diff != "" {
					t.Errorf("probe starts after the first tick (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantSkips, shift(rec.skips)); diff != "" {
					t.Errorf("skips (-want +got):\n%s", diff)
				}
				var outs []Outcome
				for _, r := range rec.results {
					outs = append(outs, r.Outcome)
					if r.Target != "t" || r.Module != "m" {
						t.Errorf("result labelled %q/%q, want t/m", r.Target, r.Module)
					}
				}
				if diff := cmp.Diff(tc.wantOut, outs); diff != "" {
					t.Errorf("observed outcomes (-want +got):\n%s", diff)
				}
				// Scheduled is the planned tick; in a bubble a probe starts exactly on it.
				if diff := cmp.Diff(tc.wantStarts[:len(rec.results)], shift(rec.scheduled())); diff != "" {
					t.Errorf("Result.Scheduled (-want +got):\n%s", diff)
				}
				for i, l := range rec.lags {
					if l != 0 {
						t.Errorf("lag[%d] = %v, want 0", i, l)
					}
				}
				if len(rec.lags) != len(tc.wantStarts) {
					t.Errorf("got %d lag observations, want one per started probe (%d)", len(rec.lags), len(tc.wantStarts))
				}
			})
		})
	}
}

// TestSchedulerShutdownCancelsInFlight checks that cancelling Run's context
// cancels a running probe, drops its result and leaves no goroutine behind
// (synctest.Test fails if a bubble goroutine outlives the test function).
func TestSchedulerShutdownCancelsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{t0: time.Now()}
		s := NewScheduler(SchedulerOptions{Observers: []Observer{rec}, Loops: rec})
		canceledAt := make(chan time.Duration, 1)
		t0 := time.Now()
		job := Job{Target: "t", Module: "m", Interval: time.Minute, Timeout: time.Hour, Version: "1",
			Probe: func(ctx context.Context, _ log.Logger) Result {
				<-ctx.Done()
				canceledAt <- time.Since(t0)
				return Result{Outcome: OutcomeCanceled}
			}}
		offset := s.Offset(job.Key(), time.Minute)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		if err := s.Update(ctx, []Job{job}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(offset + 3*time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got, want := <-canceledAt, offset+3*time.Second; got != want {
			t.Errorf("probe cancelled at %v, want %v (at shutdown)", got, want)
		}
		if len(rec.results) != 0 {
			t.Errorf("observed %d results of a probe cancelled by shutdown, want 0", len(rec.results))
		}
		if err := s.Update(t.Context(), nil); err != ErrSchedulerStopped {
			t.Errorf("Update after Run = %v, want ErrSchedulerStopped", err)
		}
	})
}

// TestSchedulerUpdate checks reconciliation: an unchanged job keeps its
// grid, a changed job restarts, a removed job stops before Update returns.
func TestSchedulerUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		s := NewScheduler(SchedulerOptions{Seed: 3})
		var mu sync.Mutex
		starts := map[string][]time.Duration{}
		probe := func(name string) ProbeFunc {
			return func(context.Context, log.Logger) Result {
				mu.Lock()
				defer mu.Unlock()
				starts[name] = append(starts[name], time.Since(t0))
				return Result{Outcome: OutcomeSuccess}
			}
		}
		job := func(target, version string) Job {
			return Job{Target: target, Module: "m", Interval: 10 * time.Second, Timeout: time.Second,
				Version: version, Probe: probe(target + "@" + version)}
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		if err := s.Update(ctx, []Job{job("keep", "1"), job("change", "1"), job("remove", "1")}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Second)
		if err := s.Update(ctx, []Job{job("keep", "1"), job("change", "2")}); err != nil {
			t.Fatal(err)
		}
		reloadAt := 25 * time.Second
		time.Sleep(20 * time.Second)
		cancel()
		<-done

		grid := func(start, offset, end time.Duration) []time.Duration {
			var out []time.Duration
			for d := start + offset; d < end; d += 10 * time.Second {
				out = append(out, d)
			}
			return out
		}
		off := func(target string) time.Duration { return s.Offset(JobKey{target, "m"}, 10*time.Second) }
		want := map[string][]time.Duration{
			"keep@1":   grid(0, off("keep"), 45*time.Second),
			"change@1": grid(0, off("change"), reloadAt),
			"change@2": grid(reloadAt, off("change"), 45*time.Second),
			"remove@1": grid(0, off("remove"), reloadAt),
		}
		if diff := cmp.Diff(want, starts); diff != "" {
			t.Errorf("probe starts by job (-want +got):\n%s", diff)
		}
	})
}
