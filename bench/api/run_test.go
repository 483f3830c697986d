package api

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestDaemonRunnerFixedLengths runs a bench window on a fixed-prompt module
// against the simulator over loopback. Its record used to echo the
// request's random_input_len (128 by default) while every prompt was a few
// tokens; it must state the prompt's real length. (total_input_tokens is the
// server's count, which the simulator estimates, so it is not compared.)
func TestDaemonRunnerFixedLengths(t *testing.T) {
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	const prompt, outputLen, n = "hello there, how are you today?", 4, 3
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	target := config.Target{Name: "sim", URL: srv.URL, Backend: "vllm", Model: simulator.DefaultConfig().Model}
	spec := runner.ModuleSpec(target, config.Module{Dataset: "fixed", Prompt: prompt, OutputLen: outputLen, InputLen: 128, Seed: 1})
	// The API's defaults for a request that names no lengths.
	spec.NumPrompts, spec.MaxConcurrency, spec.MaxDuration, spec.ReadyCheckTimeout = n, 2, time.Minute, 0
	job := Job{
		ID:      "fixed",
		Request: Request{Target: target, ModuleName: "short", Spec: spec},
		Started: func(float64, int) {},
		Logger:  log.NewNopLogger(),
	}
	out, err := Runner()(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Completed        int     `json:"completed"`
		RandomInputLen   int     `json:"random_input_len"`
		RandomOutputLen  int     `json:"random_output_len"`
		RandomRangeRatio float64 `json:"random_range_ratio"`
	}
	if err := json.Unmarshal(out.Record, &sum); err != nil {
		t.Fatalf("record %s: %v", out.Record, err)
	}
	if sum.Completed != n {
		t.Fatalf("completed %d of %d: %s", sum.Completed, n, out.Record)
	}
	// The window's report draws every request, while the summary it keeps
	// holds no per-request data.
	if !strings.Contains(string(out.Report), `data-chart="timeline"`) || strings.Contains(string(out.Record), `"ttfts"`) {
		t.Errorf("report of %d bytes without a timeline, or per-request arrays left in the record", len(out.Report))
	}
	if sum.RandomInputLen != len(ids) || sum.RandomOutputLen != outputLen || sum.RandomRangeRatio != 1 {
		t.Errorf("record lengths in/out/ratio = %d/%d/%v, want the prompt's %d/%d/1", sum.RandomInputLen, sum.RandomOutputLen, sum.RandomRangeRatio, len(ids), outputLen)
	}
}

// TestRecordGivesTheSummaryBack: a window stores only its record, and the
// summary the API shows is read back from it (fromRecord). Every figure
// of the summary a real run makes must survive that: the record carries
// what bench_serving's keys leave out (maxima, sample counts, the client
// queue's spread). A figure the record dropped would read as zero.
func TestRecordGivesTheSummaryBack(t *testing.T) {
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	target := config.Target{Name: "sim", URL: srv.URL, Backend: "vllm", Model: simulator.DefaultConfig().Model}
	spec := runner.ModuleSpec(target, config.Module{Dataset: "random", InputLen: 32, OutputLen: 8, Seed: 1})
	spec.NumPrompts, spec.MaxConcurrency, spec.MaxDuration, spec.ReadyCheckTimeout = 6, 2, time.Minute, 0
	spec.RequestRate = 50 // some requests wait in the client's queue
	prep, err := runner.Prepare(t.Context(), spec, runner.Env{Logger: log.NewNopLogger(), Target: &target, Module: "m"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := prep.Run(t.Context(), runner.Env{Logger: log.NewNopLogger(), Target: &target, Module: "m"})
	if err != nil {
		t.Fatal(err)
	}
	live := out.Summary
	live.Details = nil
	want, err := json.Marshal(&live)
	if err != nil {
		t.Fatal(err)
	}
	res, err := benchOutput(&live)
	if err != nil {
		t.Fatal(err)
	}
	got, h := fromRecord(res.Record)
	if h == nil {
		t.Fatalf("record %s gives no summary", res.Record)
	}
	var w, g map[string]any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	for k := range w {
		a, _ := json.Marshal(w[k])
		b, _ := json.Marshal(g[k])
		if string(a) != string(b) {
			t.Errorf("summary %s: the run made %s, its record gives back %s", k, a, b)
		}
	}
	if live.ClientQueue.Max == 0 || live.TTFT.Max == 0 || live.ITLSamples == 0 {
		t.Errorf("the run measured no client queue, TTFT maximum or ITL sample (%+v): the test would compare zeros", live.ClientQueue)
	}
}

// TestDaemonRunnerRuns runs a bench window of three runs (the body's
// runs) against the simulator over loopback, through the same Runner the
// daemon uses: its output holds each run's record, in the order run,
// every one a full run of the window's prompts, and no single record
// (the summary is read from the last run's); its report draws the runs
// as one set.
func TestDaemonRunnerRuns(t *testing.T) {
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	target := config.Target{Name: "sim", URL: srv.URL, Backend: "vllm", Model: simulator.DefaultConfig().Model}
	spec := runner.ModuleSpec(target, config.Module{Dataset: "fixed", Prompt: "hello there", OutputLen: 4, InputLen: 8, Seed: 1})
	spec.NumPrompts, spec.MaxConcurrency, spec.MaxDuration, spec.ReadyCheckTimeout = 5, 2, time.Minute, 0
	spec.Runs, spec.RunsPause = 3, 0
	out, err := Runner()(t.Context(), Job{
		ID:      "runs",
		Request: Request{Target: target, ModuleName: "short", Spec: spec},
		Started: func(float64, int) {},
		Logger:  log.NewNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 3 || len(out.Record) != 0 {
		t.Fatalf("a window of 3 runs gave %d run records and a record of %d bytes, want 3 and none", len(out.Runs), len(out.Record))
	}
	for i, rec := range out.Runs {
		var sum struct {
			Completed int `json:"completed"`
		}
		if err := json.Unmarshal(rec, &sum); err != nil || sum.Completed != 5 {
			t.Errorf("run %d: record %s (%v), want 5 completed", i+1, rec, err)
		}
	}
	if !strings.Contains(string(out.Report), "servingprobe bench window runs") || !strings.Contains(string(out.Report), "Across runs") {
		t.Errorf("the window's report does not draw its runs as one set (%s)", out.ReportError)
	}
}
