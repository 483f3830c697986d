//go:build capacity

package e2e

// A scheduled capacity check is a capacity measurement too (see
// slo_capacity_test.go): it builds only with -tags capacity.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench/api"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestCapacityCheckOllama runs a target's capacity_check against a real
// engine, ollama with 4 parallel slots on the CPU: the daemon's schedule
// starts the SLO search by itself, as a bench window, which must end
// (succeeded, with an answer) within its 5-minute budget and a minute of
// grace, and ollama must answer a one-token generation within 5 s right
// after. Ollama serves no /metrics, so the target has a capacity and no
// headroom gauge, which the test checks too.
func TestCapacityCheckOllama(t *testing.T) {
	o := llmtest.StartOllama(t, "OLLAMA_NUM_PARALLEL=4")
	if err := o.Healthy(3 * time.Minute); err != nil {
		t.Fatalf("ollama does not answer before the check: %v", err)
	}
	dir := t.TempDir()
	tok, err := filepath.Abs("../../tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "servingprobe.yml")
	conf := fmt.Sprintf(`targets:
  - name: ollama
    url: %s
    backend: vllm
    model: %s
    modules: [tiny]
    interval: 1h
    timeout: 2m
    capacity_check:
      every: 24h
      slo: 'ttft:p90<=4s'
      budget: 5m
modules:
  tiny:
    dataset: random
    input_len: 16
    output_len: 1
    tokenizer: %s
bench:
  enabled: true
  results_dir: %s
`, o.URL, llmtest.OllamaModel, tok, filepath.Join(dir, "results"))
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := exporter.New(exporter.Options{ConfigFile: cfgPath, BuildProbe: prober.NewProbeBuilder(prober.ProbeBuilderOptions{Tokenizer: func(string) (datasets.Tokenizer, error) { return tokenizer.Default() }}), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := api.Enable(d, api.Options{Run: api.Runner()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	stop := b.ScheduleCapacityChecks(context.Background(), api.CapacityOptions{FirstDelay: time.Second, FirstSpread: time.Second, HeadroomEvery: time.Second})
	defer stop()

	deadline := start.Add(7 * time.Minute)
	var capacity float64
	for time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
		if c, ok := gaugeValue(t, d, "servingprobe_capacity_requests_per_second", "ollama"); ok {
			capacity = c
			break
		}
		if ended := checkEnded(t, d); ended != "" {
			t.Fatalf("the check ended without a capacity: %s", ended)
		}
	}
	took := time.Since(start)
	if err := o.Healthy(5 * time.Second); err != nil {
		t.Errorf("ollama does not answer a probe within 5 s after the check: %v", err)
	}
	if capacity <= 0 {
		t.Fatalf("no capacity within %s", deadline.Sub(start))
	}
	if _, ok := gaugeValue(t, d, "servingprobe_capacity_headroom_ratio", "ollama"); ok {
		t.Error("a headroom gauge for ollama, which states no completed-request counter")
	}
	lb, _ := gaugeValue(t, d, "servingprobe_capacity_lower_bound", "ollama")
	t.Logf("the scheduled check answered %.3g req/s (lower bound %v) after %s", capacity, lb == 1, took.Round(time.Second))
}

// gaugeValue reads a gauge of target from d's registry; false when absent.
func gaugeValue(t *testing.T, d *exporter.Daemon, name, target string) (float64, bool) {
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

// checkEnded says how the check's window ended when it ended otherwise
// than with a success: the bench runs counter by result.
func checkEnded(t *testing.T, d *exporter.Daemon) string {
	t.Helper()
	mfs, err := d.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "servingprobe_bench_runs_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "result" && lp.GetValue() != "completed" && m.GetCounter().GetValue() > 0 {
					return "result " + lp.GetValue()
				}
			}
		}
	}
	return ""
}
