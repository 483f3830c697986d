package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/common/model"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
	"github.com/servingprobe/servingprobe/tokenizer"
)

func TestNextCheck(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	day := model.Duration(24 * time.Hour)
	for _, tc := range []struct {
		name string
		cc   config.CapacityCheck
		last time.Time
		want time.Time
	}{
		{"every", config.CapacityCheck{Every: model.Duration(6 * time.Hour)}, at("2026-01-01 10:17"), at("2026-01-01 16:17")},
		// The first check ran at start, mid-day: the next is at the hour.
		{"at, after a first check at start", config.CapacityCheck{Every: day, At: "03:00"}, at("2026-01-01 10:17"), at("2026-01-02 03:00")},
		{"at, on time", config.CapacityCheck{Every: day, At: "03:00"}, at("2026-01-02 03:04"), at("2026-01-03 03:00")},
		// A first check that ended just before the hour is not run again.
		{"at, just before the hour", config.CapacityCheck{Every: day, At: "03:00"}, at("2026-01-02 02:59"), at("2026-01-03 03:00")},
		{"at, first check in the evening", config.CapacityCheck{Every: day, At: "03:00"}, at("2026-01-01 20:00"), at("2026-01-03 03:00")},
		{"at, every two days", config.CapacityCheck{Every: 2 * day, At: "03:00"}, at("2026-01-02 03:04"), at("2026-01-04 03:00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextCheck(&tc.cc, tc.last); !got.Equal(tc.want) {
				t.Errorf("nextCheck(%+v, %v) = %v, want %v", tc.cc, tc.last, got, tc.want)
			}
		})
	}
}

func TestCounterRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	reads := func(pairs ...float64) []counterRead {
		var out []counterRead
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, counterRead{t0.Add(time.Duration(pairs[i]) * time.Second), pairs[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		reads []counterRead
		rate  float64
		ok    bool
	}{
		{"none", nil, 0, false},
		{"one", reads(0, 5), 0, false},
		{"shorter than the window", reads(0, 5, 45, 50), 0, false},
		{"the window", reads(0, 100, 30, 400, 60, 700), 10, true},
		{"idle", reads(0, 7, 60, 7), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rate, ok := counterRate(tc.reads, time.Minute)
			if rate != tc.rate || ok != tc.ok {
				t.Errorf("counterRate = %v, %v; want %v, %v", rate, ok, tc.rate, tc.ok)
			}
		})
	}
	for _, tc := range []struct{ rate, capacity, want float64 }{
		{0, 100, 1}, {25, 100, 0.75}, {100, 100, 0}, {150, 100, -0.5},
	} {
		if got := headroomRatio(tc.rate, tc.capacity); got != tc.want {
			t.Errorf("headroomRatio(%v, %v) = %v, want %v", tc.rate, tc.capacity, got, tc.want)
		}
	}
}

// TestCheckCapacity: a check's window gives the capacity its answer
// gives, marked a lower bound when the search stopped before the SLO
// broke, and none when it gave no capacity.
func TestCheckCapacity(t *testing.T) {
	view := func(status exporter.BenchStatus, a *bench.SearchAnswer) View {
		return View{Status: status, Sweep: &SweepOutput{Mode: bench.SweepSLO, Search: a}}
	}
	bracketed := &bench.SearchAnswer{By: bench.ByRequestRate, Capacity: 80, Bound: 88, Confirmed: true}
	for _, tc := range []struct {
		name      string
		v         View
		capacity  float64
		lower, ok bool
	}{
		{"bracketed", view(exporter.BenchSucceeded, bracketed), 80, false, true},
		// The search names the limit wherever it has no failing end the
		// server set (SearchAnswer.LowerBound).
		{"held at every rate tried", view(exporter.BenchSucceeded, &bench.SearchAnswer{By: bench.ByRequestRate, Capacity: 100, BoundedBy: bench.BoundedSLOMax, BoundLimit: 100}), 100, true, true},
		{"bounded by our rate limit", view(exporter.BenchSucceeded, &bench.SearchAnswer{By: bench.ByRequestRate, Capacity: 46, Bound: 50, Confirmed: true, BoundedBy: bench.BoundedConcurrency, BoundLimit: 8}), 46, true, true},
		{"over budget", view(exporter.BenchSucceeded, &bench.SearchAnswer{By: bench.ByRequestRate, Capacity: 40, Bound: 80, Interrupted: true, OverBudget: true, BoundedBy: bench.BoundedBudget, BoundLimit: 300}), 40, true, true},
		{"unstable", view(exporter.BenchSucceeded, &bench.SearchAnswer{By: bench.ByRequestRate, Capacity: 80, Bound: 88, Unstable: true}), 0, false, false},
		{"nothing held", view(exporter.BenchSucceeded, &bench.SearchAnswer{By: bench.ByRequestRate, Bound: 1}), 0, false, false},
		{"cancelled", view(exporter.BenchCancel, bracketed), 0, false, false},
		{"by concurrency", view(exporter.BenchSucceeded, &bench.SearchAnswer{By: bench.ByMaxConcurrency, Capacity: 8, Bound: 9}), 0, false, false},
		{"no sweep", View{Status: exporter.BenchSucceeded}, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, lower, ok := checkCapacity(tc.v)
			if c != tc.capacity || lower != tc.lower || ok != tc.ok {
				t.Errorf("checkCapacity = %v, %v, %v; want %v, %v, %v", c, lower, ok, tc.capacity, tc.lower, tc.ok)
			}
		})
	}
}

// gauge reads a gauge of target from d's registry; false when absent.
func gauge(t *testing.T, d *exporter.Daemon, name, target string) (float64, bool) {
	t.Helper()
	mfs, err := d.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "target" && lp.GetValue() == target {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// newCheckDaemon builds a daemon with conf (RESULTS replaced by a results
// directory) whose windows run with run, without an HTTP server: the
// checks start their windows through the handler itself.
func newCheckDaemon(t *testing.T, conf string, run RunFunc) (*exporter.Daemon, *Windows, string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(conf, "RESULTS", filepath.Join(dir, "results"))), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := exporter.New(exporter.Options{ConfigFile: cfgPath, BuildProbe: prober.NewProbeBuilder(prober.ProbeBuilderOptions{Tokenizer: func(string) (datasets.Tokenizer, error) { return tokenizer.Default() }}), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Enable(d, Options{Run: run, WatchInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return d, b, cfgPath
}

const checkConfFake = `
targets:
  - name: a
    url: http://a.test
    backend: vllm
    model: m
    modules: [m]
    interval: 1h
    no_server_metrics: true
    capacity_check:
      every: 6h
      slo: 'ttft:p90<=2s'
      budget: 5m
modules:
  m: {}
bench:
  results_dir: RESULTS
`

// searchRunner is a RunFunc whose windows each answer a search with the
// next capacity of its list, once released; it records when each
// window ran.
type searchRunner struct {
	mu       sync.Mutex
	release  chan struct{}
	started  []time.Time
	searches int
	capacity []float64
}

func (s *searchRunner) run(ctx context.Context, job Job) (Output, error) {
	s.mu.Lock()
	s.started = append(s.started, time.Now())
	if job.Request.Spec.Sweep != nil {
		s.searches++
	}
	c := s.capacity[min(max(s.searches, 1), len(s.capacity))-1]
	s.mu.Unlock()
	job.Started(1, 1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return Output{}, context.Cause(ctx)
	}
	if job.Request.Spec.Sweep == nil {
		return Output{Record: json.RawMessage(`{"backend":"vllm"}`)}, nil
	}
	a := bench.SearchAnswer{By: bench.ByRequestRate, Capacity: c, Bound: c * 1.1, Confirmed: true}
	return Output{Sweep: &SweepOutput{Mode: bench.SweepSLO, Search: &a}}, nil
}

func (s *searchRunner) starts() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.started...)
}

// TestCapacityCheckSchedule runs the schedule on a virtual clock: the
// first check at its per-target offset after start, skipped with a
// reason while another window runs on the target and started once it
// ended, the next one every later, never two at once, and the capacity
// gauges set from each check's answer; the headroom follows the server's
// counter.
func TestCapacityCheckSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sr := &searchRunner{release: make(chan struct{}), capacity: []float64{100, 50}}
		d, b, _ := newCheckDaemon(t, checkConfFake, sr.run)
		defer b.Close()
		var served sync.Mutex
		completed := 0.0 // the server's counter; it serves 20 req/s
		read := func(context.Context, config.Target) (*servermetrics.Snapshot, error) {
			served.Lock()
			defer served.Unlock()
			return &servermetrics.Snapshot{Counters: map[string]float64{"vllm:request_success": completed}}, nil
		}
		start := time.Now()
		o := CapacityOptions{FirstDelay: time.Minute, FirstSpread: 4 * time.Minute, Retry: time.Minute,
			HeadroomEvery: 15 * time.Second, HeadroomWindow: time.Minute, ReadServer: read}
		traffic := make(chan struct{})
		go func() {
			// Half a second off the reads' ticks, so that no read shares
			// an instant with an increment.
			time.Sleep(500 * time.Millisecond)
			tk := time.NewTicker(time.Second)
			defer tk.Stop()
			for {
				select {
				case <-traffic:
					return
				case <-tk.C:
					served.Lock()
					completed += 20
					served.Unlock()
				}
			}
		}()
		defer close(traffic)
		first := start.Add(o.FirstDelay + firstOffset("a", o.FirstSpread))

		// Another window holds the target when the first check is due.
		rec := &recorder{header: http.Header{}}
		req, _ := http.NewRequest(http.MethodPost, "/api/v1/benches", bytes.NewReader([]byte(`{"target":"a","num_prompts":4}`)))
		b.handleCreate(rec, req)
		if rec.status != http.StatusAccepted {
			t.Fatalf("other window: %d %s", rec.status, rec.body.String())
		}
		stop := b.ScheduleCapacityChecks(context.Background(), o)
		defer stop()
		// A tick after it was due, it was skipped.
		time.Sleep(time.Until(first) + o.HeadroomEvery)
		synctest.Wait()
		if n := len(sr.starts()); n != 1 {
			t.Fatalf("%d windows ran by the first check's time, want 1 (the other window; the check skipped)", n)
		}
		sr.release <- struct{}{} // the other window ends
		time.Sleep(o.Retry)
		synctest.Wait()
		starts := sr.starts()
		if len(starts) != 2 {
			t.Fatalf("%d windows ran a retry after the other one ended, want 2", len(starts))
		}
		if got, want := starts[1].Sub(first), o.Retry; got > want+2*o.HeadroomEvery || got < want {
			t.Errorf("the check started %s after it was due, want the retry, %s, within two ticks", got, want)
		}
		// While it runs, no second check and no headroom.
		if _, ok := gauge(t, d, "servingprobe_capacity_headroom_ratio", "a"); ok {
			t.Error("a headroom while no check has given a capacity")
		}
		time.Sleep(time.Minute)
		sr.release <- struct{}{}
		time.Sleep(o.HeadroomEvery)
		synctest.Wait()
		if c, ok := gauge(t, d, "servingprobe_capacity_requests_per_second", "a"); !ok || c != 100 {
			t.Errorf("capacity gauge %v (present %v), want 100", c, ok)
		}
		if lb, ok := gauge(t, d, "servingprobe_capacity_lower_bound", "a"); !ok || lb != 0 {
			t.Errorf("lower-bound gauge %v (present %v), want 0", lb, ok)
		}
		ts, _ := gauge(t, d, "servingprobe_capacity_check_timestamp_seconds", "a")
		ended := time.Unix(0, int64(ts*1e9))
		// The headroom, once the counter was read over a minute: 20 req/s
		// of 100.
		time.Sleep(o.HeadroomWindow + o.HeadroomEvery)
		synctest.Wait()
		if h, ok := gauge(t, d, "servingprobe_capacity_headroom_ratio", "a"); !ok || math.Abs(h-0.8) > 1e-9 {
			t.Errorf("headroom %v (present %v), want 0.8", h, ok)
		}
		// The next check, every (6h) after the first ended.
		time.Sleep(time.Until(ended.Add(6*time.Hour)) + o.HeadroomEvery)
		synctest.Wait()
		starts = sr.starts()
		if len(starts) != 3 {
			t.Fatalf("%d windows ran by the second check's time, want 3", len(starts))
		}
		if got := starts[2].Sub(ended); got < 6*time.Hour || got > 6*time.Hour+o.HeadroomEvery {
			t.Errorf("the second check started %s after the first ended, want 6h within a tick", got)
		}
		sr.release <- struct{}{}
		time.Sleep(o.HeadroomEvery)
		synctest.Wait()
		if c, _ := gauge(t, d, "servingprobe_capacity_requests_per_second", "a"); c != 50 {
			t.Errorf("capacity after the second check %v, want 50", c)
		}
	})
}

// TestCapacityCheckNoCounter: a server that states no completed-request
// counter (llama.cpp) gets a capacity but no headroom gauge.
func TestCapacityCheckNoCounter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sr := &searchRunner{release: make(chan struct{}), capacity: []float64{10}}
		close(sr.release)
		d, b, _ := newCheckDaemon(t, checkConfFake, sr.run)
		defer b.Close()
		read := func(context.Context, config.Target) (*servermetrics.Snapshot, error) {
			return &servermetrics.Snapshot{Counters: map[string]float64{"llamacpp:prompt_tokens": 5}, Gauges: map[string]servermetrics.Gauge{}}, nil
		}
		stop := b.ScheduleCapacityChecks(context.Background(), CapacityOptions{FirstDelay: time.Second, FirstSpread: time.Second, ReadServer: read})
		defer stop()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if c, ok := gauge(t, d, "servingprobe_capacity_requests_per_second", "a"); !ok || c != 10 {
			t.Errorf("capacity %v (present %v), want 10", c, ok)
		}
		if h, ok := gauge(t, d, "servingprobe_capacity_headroom_ratio", "a"); ok {
			t.Errorf("headroom %v exported for a server without a request counter", h)
		}
	})
}

// TestCapacityCheckSimulator is the check end to end on a virtual clock:
// the simulator (8 slots) serves other traffic at 10 req/s, the target's
// capacity_check runs its SLO search by itself, and the headroom it
// exports is in (0, 1) and falls when the other traffic triples.
func TestCapacityCheckSimulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := simulator.DefaultConfig()
		cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 20*time.Millisecond, 0, 2*time.Millisecond, 0
		cfg.MaxRunningRequests = 8
		sim, err := simulator.New(cfg, log.NewNopLogger())
		if err != nil {
			t.Fatal(err)
		}
		simL := llmtest.NewPipeListener()
		simSrv := &http.Server{Handler: sim.Handler()}
		simDone := make(chan struct{})
		go func() { defer close(simDone); _ = simSrv.Serve(simL) }()
		tr := &http.Transport{DialContext: simL.Dial}
		client := &http.Client{Transport: tr, Timeout: time.Minute}
		conf := fmt.Sprintf(`
targets:
  - name: sim
    url: http://sim.test
    backend: sglang
    model: %s
    modules: [short]
    interval: 1h
    no_server_metrics: true
    capacity_check:
      every: 24h
      slo: 'ttft:p90<=200ms'
      budget: 10m
modules:
  short:
    dataset: random
    input_len: 32
    output_len: 4
bench:
  max_prompts: 1000
  max_request_rate: 400
  max_concurrency: 64
  max_duration: 1m
  results_dir: RESULTS
`, cfg.Model)
		d, b, _ := newCheckDaemon(t, conf, runnerDial(simL.Dial))
		read := func(ctx context.Context, _ config.Target) (*servermetrics.Snapshot, error) {
			return servermetrics.Fetch(ctx, client, "http://sim.test/metrics", 0)
		}
		// The other traffic: one short request every 1/rate seconds.
		var rateMu sync.Mutex
		rate := 10.0
		trafficDone := make(chan struct{})
		stopTraffic := make(chan struct{})
		go func() {
			defer close(trafficDone)
			var wg sync.WaitGroup
			defer wg.Wait()
			for {
				rateMu.Lock()
				gap := time.Duration(float64(time.Second) / rate)
				rateMu.Unlock()
				select {
				case <-stopTraffic:
					return
				case <-time.After(gap):
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := client.Post("http://sim.test/v1/completions", "application/json",
						strings.NewReader(`{"prompt":"hello there","max_tokens":4,"ignore_eos":true}`))
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
			}
		}()
		o := CapacityOptions{FirstDelay: 30 * time.Second, FirstSpread: time.Second, ReadServer: read}
		stop := b.ScheduleCapacityChecks(context.Background(), o)
		defer func() {
			stop()
			close(stopTraffic)
			<-trafficDone
			b.Close()
			_ = simSrv.Close()
			<-simDone
			tr.CloseIdleConnections()
		}()
		// The check runs within its budget; wait for its capacity.
		deadline := time.Now().Add(20 * time.Minute)
		var capacity float64
		for time.Now().Before(deadline) {
			time.Sleep(15 * time.Second)
			if c, ok := gauge(t, d, "servingprobe_capacity_requests_per_second", "sim"); ok {
				capacity = c
				break
			}
		}
		if capacity <= 0 {
			b.mu.Lock()
			views := b.listLocked()
			b.mu.Unlock()
			t.Fatalf("no capacity within 20 minutes; windows: %+v", views)
		}
		// The check is a window like any other, stored with its answer.
		b.mu.Lock()
		views := b.listLocked()
		b.mu.Unlock()
		var checks []View
		for _, v := range views {
			if v.Tag == CapacityTag {
				checks = append(checks, v)
			}
		}
		if len(checks) != 1 || checks[0].Status != exporter.BenchSucceeded || checks[0].Sweep == nil || checks[0].Sweep.Search == nil {
			t.Fatalf("capacity check windows %+v, want one that succeeded with an answer", checks)
		}
		t.Logf("the check's answer: %s", checks[0].Sweep.Answer())
		// The page lists it with the others, marked as the schedule's.
		marked := false
		for _, w := range b.landingWindows() {
			marked = marked || (w.ID == checks[0].ID && strings.HasPrefix(w.Sweep, "Scheduled capacity check: SLO search"))
		}
		if !marked {
			t.Errorf("the landing page does not list check %s as a scheduled capacity check: %+v", checks[0].ID, b.landingWindows())
		}
		headroomAfter := func(wait time.Duration) float64 {
			t.Helper()
			time.Sleep(wait)
			h, ok := gauge(t, d, "servingprobe_capacity_headroom_ratio", "sim")
			if !ok {
				t.Fatalf("no headroom %s after the check", wait)
			}
			return h
		}
		low := headroomAfter(2 * time.Minute)
		rateMu.Lock()
		rate = 30
		rateMu.Unlock()
		high := headroomAfter(2 * time.Minute)
		t.Logf("capacity %.1f req/s; headroom %.3f at 10 req/s, %.3f at 30 req/s", capacity, low, high)
		if !(low > 0 && low < 1 && high > 0 && high < 1) {
			t.Errorf("headroom %v and %v, want both in (0, 1)", low, high)
		}
		// 20 req/s more of a capacity c lowers the headroom by 20/c.
		if want := 20 / capacity; math.Abs((low-high)-want) > want/4 {
			t.Errorf("headroom fell by %.3f when the traffic rose by 20 req/s, want %.3f (20/capacity) within a quarter", low-high, want)
		}
	})
}

// TestCapacityCheckRemovedByReload: a reload that removes a target's
// capacity_check removes its capacity gauges too, so that no capacity
// stands that no check will renew.
func TestCapacityCheckRemovedByReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sr := &searchRunner{release: make(chan struct{}), capacity: []float64{10}}
		close(sr.release)
		d, b, cfgPath := newCheckDaemon(t, checkConfFake, sr.run)
		defer b.Close()
		stop := b.ScheduleCapacityChecks(context.Background(), CapacityOptions{FirstDelay: time.Second, FirstSpread: time.Second,
			ReadServer: func(context.Context, config.Target) (*servermetrics.Snapshot, error) {
				return &servermetrics.Snapshot{Counters: map[string]float64{}}, nil
			}})
		defer stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, ok := gauge(t, d, "servingprobe_capacity_requests_per_second", "a"); !ok {
			t.Fatal("no capacity after the first check")
		}
		without := strings.Replace(checkConfFake, "    capacity_check:\n      every: 6h\n      slo: 'ttft:p90<=2s'\n      budget: 5m\n", "", 1)
		if without == checkConfFake {
			t.Fatal("the config's capacity_check was not found to remove")
		}
		if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(without, "RESULTS", d.Config().Bench.ResultsDir)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := d.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		for _, name := range []string{"servingprobe_capacity_requests_per_second", "servingprobe_capacity_lower_bound", "servingprobe_capacity_check_timestamp_seconds"} {
			if v, ok := gauge(t, d, name, "a"); ok {
				t.Errorf("%s = %v after the reload removed the check", name, v)
			}
		}
	})
}
