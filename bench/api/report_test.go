package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/simulator"
)

// TestDaemonRunnerOneRequest runs windows of exactly one request against
// the simulator. With one value per distribution the summary's
// percentiles may sit an ulp from the report's value, which made a
// chart's axis an ulp wide and its tick loop grow until the kernel killed
// the daemon (about one window in three); several windows, so that the
// case is hit. Each must end with its result and a drawn report.
func TestDaemonRunnerOneRequest(t *testing.T) {
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	target := config.Target{Name: "sim", URL: srv.URL, Backend: "vllm", Model: simulator.DefaultConfig().Model}
	spec := runner.ModuleSpec(target, config.Module{Dataset: "fixed", Prompt: "hello there", OutputLen: 4, InputLen: 16, Seed: 1})
	spec.NumPrompts, spec.MaxConcurrency, spec.MaxDuration, spec.ReadyCheckTimeout, spec.WarmupRequests = 1, 1, time.Minute, 0, 0
	for i := range 6 {
		job := Job{
			ID:      "one",
			Request: Request{Target: target, ModuleName: "short", Spec: spec},
			Started: func(float64, int) {},
			Logger:  log.NewNopLogger(),
		}
		out, err := Runner()(t.Context(), job)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out.Record), `"completed": 1`) && !strings.Contains(string(out.Record), `"completed":1`) {
			t.Errorf("window %d: record %s, want one completed request", i, out.Record)
		}
		if out.ReportError != "" || !strings.Contains(string(out.Report), `data-chart="e2e-cdf"`) {
			t.Errorf("window %d: report of %d bytes, error %q; want one with an E2E CDF", i, len(out.Report), out.ReportError)
		}
	}
}

// TestBenchWindowReportError: a window whose report could not be drawn
// keeps its status and result, and says why it has no report, in the API
// and in its results file.
func TestBenchWindowReportError(t *testing.T) {
	dir := t.TempDir()
	run := func(ctx context.Context, job Job) (Output, error) {
		job.Started(0, 1)
		return Output{
			Record:      json.RawMessage(`{"backend":"vllm","completed":1}`),
			ReportError: "report: drawing the page failed: boom",
		}, nil
	}
	e := startBenchDaemonWith(t, strings.ReplaceAll(benchConfigTmpl, "RESULTS", dir), "", run)
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":1}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v, want 202", code, m)
	}
	id, _ := m["id"].(string)
	got := e.waitStatus(t, id, "completed")
	if got["report_error"] != "report: drawing the page failed: boom" || got["report"] != nil {
		t.Errorf("report %v, report_error %v; want no report and the error", got["report"], got["report_error"])
	}
	if s, _ := got["summary"].(map[string]any); s["completed"] != 1.0 {
		t.Errorf("summary %v, want the run's", got["summary"])
	}
	b, err := os.ReadFile(resultFile(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"report_error":"report: drawing the page failed: boom"`) {
		t.Errorf("results file lacks report_error:\n%s", b)
	}
}
