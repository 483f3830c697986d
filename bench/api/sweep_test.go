package api

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestBenchSweepWindow runs an SLO search as a daemon bench window through
// the API against the simulator, with the real runner: every point's
// record is in the result, the capacity the API states is the highest
// passing point, and it is exported as a gauge next to the mode="bench"
// series of every request. The simulator completes at most 8/(4×40 ms) =
// 50 req/s, and a 120 ms p99 TTFT holds up to about 51.7 req/s with 120
// requests a point (see TestBenchSLOSearchFindsCapacity in
// cmd/servingprobe). The window names slo_start, so the search doubles
// from 32 req/s (passes), to 64 (fails), and bisects to within 10%: its
// answer is between 51.7/1.1 = 47 and 51.7 req/s. The daemon and the
// simulator are served over in-memory connections in a synctest bubble
// (startSimWindows), so the answer does not depend on the machine's load.
func TestBenchSweepWindow(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 40*time.Millisecond, 40*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 8
	synctest.Test(t, func(t *testing.T) {
		e := startSimWindows(t, cfg)
		defer e.close()

		code, m := e.do(t, http.MethodPost, "/api/v1/benches",
			`{"target":"sim","num_prompts":120,"burstiness":100,"sweep":{"slo":"ttft:p99<=120ms","slo_start":32,"cooldown":"0s"}}`)
		if code != http.StatusAccepted {
			t.Fatalf("POST = %d %v, want 202", code, m)
		}
		id := m["id"].(string)
		var view View
		deadline := time.Now().Add(3 * time.Minute)
		for {
			resp, err := e.client.Get(e.url + "/api/v1/benches/" + id)
			if err != nil {
				t.Fatal(err)
			}
			err = json.NewDecoder(resp.Body).Decode(&view)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if view.Ended != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sweep window has not ended after 3 minutes: %+v", view.Progress)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if view.Status != "completed" || view.Sweep == nil {
			t.Fatalf("status %s, error %q, sweep %v", view.Status, view.Error, view.Sweep)
		}
		// The ended search's progress reads as finished: every point's
		// requests, all done (it read 69/125, the last point's, which
		// ended early on its samples), the requests the answer counts.
		sent := 0
		if view.Sweep.Search != nil {
			sent = view.Sweep.Search.RequestCount
		}
		if p := view.Progress; p == nil || p.Total != sent || p.Done != sent || p.Dispatched != sent || p.Failed != 0 || sent <= 120 {
			t.Errorf("progress %+v at the end, want every point's %d requests done", view.Progress, sent)
		}
		sw := view.Sweep
		if sw.Mode != "slo" || sw.By != "request_rate" || sw.Search == nil || !strings.Contains(sw.Answer(), "Highest request rate meeting the SLO") {
			t.Fatalf("sweep %+v", sw)
		}
		completed := 0.0
		passed, failed := map[float64]bool{}, map[float64]bool{}
		for i, raw := range sw.Records {
			var rec struct {
				Completed   float64 `json:"completed"`
				RequestRate float64 `json:"request_rate"`
				Sweep       struct {
					Index int     `json:"index"`
					Value float64 `json:"value"`
					Pass  bool    `json:"pass"`
					Role  string  `json:"role"`
					Ended string  `json:"ended"`
				} `json:"sweep"`
			}
			if err := json.Unmarshal(raw, &rec); err != nil {
				t.Fatalf("record %d: %v", i+1, err)
			}
			if rec.Sweep.Index != i+1 {
				t.Errorf("record %d: %s", i+1, raw)
			}
			completed += rec.Completed
			if rec.Sweep.Role != "" {
				continue // the anchors: one request at a time, then at bench.max_request_rate
			}
			// A point sends its 120 prompts unless its verdict broke early.
			if rec.RequestRate != rec.Sweep.Value || (rec.Completed != 120 && rec.Sweep.Ended == "") {
				t.Errorf("record %d: %s", i+1, raw)
			}
			if rec.Sweep.Pass {
				passed[rec.Sweep.Value] = true
			} else {
				failed[rec.Sweep.Value] = true
			}
		}
		// The capacity is the highest rate that held every time it ran: an
		// answer is run twice, and one that failed its second run is not.
		best := 0.0
		for v := range passed {
			if !failed[v] {
				best = max(best, v)
			}
		}
		if len(sw.Records) < 3 || best != sw.Search.Capacity {
			t.Errorf("%d records, highest passing %v, capacity %v", len(sw.Records), best, sw.Search.Capacity)
		}
		if sw.Search.Capacity < 47 || sw.Search.Capacity > 51.7 {
			t.Errorf("capacity %v req/s, want 47 to 51.7\n%s", sw.Search.Capacity, sw.Answer())
		}
		if got := metricValue(t, e.d, "benchCapacityRate", "sim"); got != sw.Search.Capacity {
			t.Errorf("bench_last_slo_capacity_requests_per_second = %v, the API says %v", got, sw.Search.Capacity)
		}
		if got := metricValue(t, e.d, "benchRate", "sim"); got != 0 {
			t.Errorf("bench_request_rate = %v after the run, want 0", got)
		}
		// Every measured request of every point is in the mode="bench" series.
		var benchOK float64
		mfs, err := e.d.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "servingprobe_requests_total" {
				continue
			}
			for _, mt := range mf.GetMetric() {
				// Successes: a point stopped once its verdict was certain
				// cancels its requests in flight, which count as canceled.
				labels := map[string]string{}
				for _, l := range mt.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["mode"] == "bench" && labels["outcome"] == "success" {
					benchOK += mt.GetCounter().GetValue()
				}
			}
		}
		if benchOK != completed {
			t.Errorf("requests_total{mode=bench,outcome=success} = %v, the records completed %v", benchOK, completed)
		}
		// The window wrote its report, served beside the result: the sweep's
		// curves.
		if view.Report != "api/v1/benches/"+id+"/report" {
			t.Fatalf("report URL %q", view.Report)
		}
		rresp, err := e.client.Get(e.url + "/" + view.Report)
		if err != nil {
			t.Fatal(err)
		}
		rpage, _ := io.ReadAll(rresp.Body)
		rresp.Body.Close()
		if rresp.StatusCode != http.StatusOK || !strings.HasPrefix(rresp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(string(rpage), `data-chart="ttft-curve"`) || !strings.Contains(string(rpage), "servingprobe bench window "+id) {
			t.Errorf("GET %s = %d %s, %d bytes", view.Report, rresp.StatusCode, rresp.Header.Get("Content-Type"), len(rpage))
		}
		// The landing page states the answer.
		resp, err := e.client.Get(e.url + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("Highest request rate meeting the SLO: %s", bench.FormatValue("request_rate", sw.Search.Capacity)); !strings.Contains(string(page), want) {
			t.Errorf("landing page lacks %q", want)
		}
		// A restarted daemon reads the window back from its results file
		// and shows the same answer, on its landing page and in its API.
		restarted := &Windows{logger: log.NewNopLogger(), runs: map[string]*benchRun{}, o: Options{MaxListed: 10}}
		if err := restarted.load(e.d.Config().Bench.ResultsDir); err != nil {
			t.Fatal(err)
		}
		before, after := e.b.landingWindows(), restarted.landingWindows()
		if len(after) != 1 || len(before) != 1 || after[0].Sweep != before[0].Sweep || !strings.Contains(after[0].Sweep, strings.SplitN(sw.Answer(), "\n", 2)[0]) {
			t.Errorf("after a restart the landing page says %+v, before it said %+v", after, before)
		}
		if r := restarted.runs[id]; r == nil || r.view.Sweep == nil || r.view.Sweep.Answer() != sw.Answer() {
			t.Errorf("after a restart the API's answer differs from %q", sw.Answer())
		}
		// The report states the API's answer, in its words.
		if want := template.HTMLEscapeString(strings.SplitN(sw.Answer(), "\n", 2)[0]); !strings.Contains(string(rpage), want) {
			t.Errorf("the report lacks the answer's first line %q", want)
		}
	})
}

// simWindows is a daemon with the bench API whose windows run with the
// real runner against the simulator, both served over in-memory
// connections (llmtest.PipeListener) inside a synctest bubble: every
// latency is the simulator's and every clock the bubble's.
type simWindows struct {
	*benchEnv
	close func()
}

// startSimWindows starts a simWindows for the simulator with cfg, target
// "sim" with module "short" (32 input tokens, 4 output), its /metrics not
// read (the runner's reads of it would dial the network). It must be
// called inside a bubble.
func startSimWindows(t *testing.T, cfg simulator.Config) *simWindows {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	simL := llmtest.NewPipeListener()
	simSrv := &http.Server{Handler: sim.Handler()}
	simDone := make(chan struct{})
	go func() { defer close(simDone); _ = simSrv.Serve(simL) }()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yml")
	conf := fmt.Sprintf(`
targets:
  - name: sim
    url: http://sim.test
    backend: sglang
    model: %s
    modules: [short]
    interval: 1h
    no_server_metrics: true
modules:
  short:
    dataset: random
    input_len: 32
    output_len: 4
bench:
  max_prompts: 200
  max_request_rate: 100
  max_concurrency: 16
  max_duration: 1m
  results_dir: %s
`, cfg.Model, filepath.Join(dir, "results"))
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := exporter.New(exporter.Options{ConfigFile: cfgPath, BuildProbe: prober.NewProbeBuilder(prober.ProbeBuilderOptions{Tokenizer: func(string) (datasets.Tokenizer, error) { return tokenizer.Default() }}), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Enable(d, Options{Run: runnerDial(simL.Dial), WatchInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l := llmtest.NewPipeListener()
	srv := &http.Server{Handler: d.Handler()}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	tr := &http.Transport{DialContext: l.Dial}
	e := &benchEnv{d: d, b: b, url: "http://daemon.test", cfgPath: cfgPath, client: &http.Client{Transport: tr, Timeout: time.Minute}}
	return &simWindows{benchEnv: e, close: func() {
		b.Close()
		_ = srv.Close()
		<-done
		_ = simSrv.Close()
		<-simDone
		tr.CloseIdleConnections()
	}}
}

// TestSweepOutputUnstable: a search with no stable answer gives no
// capacity, in the API or in the gauge, and its answer says why; the
// capacity of a stable one is the answer's. The API's JSON carries the
// answer itself and its words.
func TestSweepOutputUnstable(t *testing.T) {
	slo := bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}
	pts := []runner.SweepPoint{{Summary: &bench.Summary{Requests: 10},
		Info: bench.SweepInfo{Mode: bench.SweepSLO, By: bench.ByRequestRate, Index: 1, Value: 5, SLO: []bench.Verdict{{Objective: slo[0], Pass: true}}}}}
	res := &runner.SweepResult{Spec: runner.SweepSpec{Mode: bench.SweepSLO, SLO: slo, Precision: 0.1}, Points: pts,
		SearchAnswer: bench.SearchAnswer{By: bench.ByRequestRate, Capacity: 5, Bound: 5.4, Disagreements: 2, Unstable: true, PointCount: 1, RequestCount: 10}}
	o, h := sweepOutput(res, nil)
	if o.Search == nil || !o.Search.Unstable || h.CapacityBy != "" || !strings.Contains(o.Answer(), "No stable answer") {
		t.Errorf("unstable search: answer %+v, gauge %q %v, words %q", o.Search, h.CapacityBy, h.Capacity, o.Answer())
	}
	res.Unstable, res.Disagreements, res.Confirmed = false, 0, true
	o, h = sweepOutput(res, nil)
	if h.CapacityBy != bench.ByRequestRate || h.Capacity != 5 || !strings.Contains(o.Answer(), "5 req/s (held twice") {
		t.Errorf("stable search: gauge %q %v, words %q", h.CapacityBy, h.Capacity, o.Answer())
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Search *bench.SearchAnswer `json:"search"`
		Answer string              `json:"answer"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Search == nil || got.Search.Capacity != 5 || got.Answer != o.Answer() {
		t.Errorf("the API's JSON %s (%v): want the answer and its words", b, err)
	}
}

// TestLowerBoundOneRule: the bench gauges (sweepOutput's headline) and
// the capacity check's gauge (checkCapacity) read lower-boundness from
// the answer's one rule, SearchAnswer.LowerBound, for every limit of ours
// and for an answer the server bounded.
func TestLowerBoundOneRule(t *testing.T) {
	slo := bench.SLO{{Metric: bench.MetricTTFT, Percentile: 90, MaxMs: 200}}
	for _, tc := range []struct {
		name  string
		a     bench.SearchAnswer
		lower bool
	}{
		{"bracketed by the server", bench.SearchAnswer{Capacity: 8, Bound: 9, Confirmed: true}, false},
		{"request rate limit", bench.SearchAnswer{Capacity: 20, BoundedBy: bench.BoundedRequestRate, BoundLimit: 20}, true},
		{"concurrency cap", bench.SearchAnswer{Capacity: 8, Bound: 9, BoundedBy: bench.BoundedConcurrency, BoundLimit: 256}, true},
		{"slo_max", bench.SearchAnswer{Capacity: 64, BoundedBy: bench.BoundedSLOMax, BoundLimit: 64}, true},
		{"budget", bench.SearchAnswer{Capacity: 4, Bound: 8, Interrupted: true, OverBudget: true, BoundedBy: bench.BoundedBudget, BoundLimit: 300}, true},
		{"prompt count", bench.SearchAnswer{Capacity: 8, Bound: 9, BoundedBy: bench.BoundedPrompts, BoundLimit: 40}, true},
		{"memory budget", bench.SearchAnswer{Capacity: 4, Interrupted: true, OverMemory: true, BoundedBy: bench.BoundedMemory, BoundLimit: 1 << 30}, true},
		{"point limit", bench.SearchAnswer{Capacity: 8, Exhausted: true, BoundedBy: bench.BoundedMaxPoints, BoundLimit: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a
			a.By = bench.ByRequestRate
			if a.LowerBound() != tc.lower {
				t.Fatalf("LowerBound() = %v, want %v", a.LowerBound(), tc.lower)
			}
			pts := []runner.SweepPoint{{Summary: &bench.Summary{Requests: 10},
				Info: bench.SweepInfo{Mode: bench.SweepSLO, By: bench.ByRequestRate, Index: 1, Value: a.Capacity, SLO: []bench.Verdict{{Objective: slo[0], Pass: true}}}}}
			res := &runner.SweepResult{Spec: runner.SweepSpec{Mode: bench.SweepSLO, SLO: slo}, Points: pts, SearchAnswer: a}
			o, h := sweepOutput(res, nil)
			if h.CapacityBy == "" || (h.CapacityBoundedBy != "") != tc.lower || h.Capacity != a.Capacity {
				t.Errorf("bench headline %q %v bounded by %q, want capacity %v, lower bound %v", h.CapacityBy, h.Capacity, h.CapacityBoundedBy, a.Capacity, tc.lower)
			}
			capacity, lower, ok := checkCapacity(View{Status: exporter.BenchSucceeded, Sweep: o})
			if !ok || capacity != a.Capacity || lower != tc.lower {
				t.Errorf("checkCapacity = %v, %v, %v; want %v, %v, true", capacity, lower, ok, a.Capacity, tc.lower)
			}
			if words := a.Words(); tc.lower != strings.Contains(words, "at least") {
				t.Errorf("words %q, lower bound %v", words, tc.lower)
			}
		})
	}
}
