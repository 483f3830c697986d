package dashboards

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/servingprobe/servingprobe/dashboards/promtest"
	"github.com/servingprobe/servingprobe/testkit/external"
)

// Every dashboard query is run against the real daemon probing the
// simulator, with a bench window, in cmd/servingprobe
// (TestDashboardsAgainstDaemon). This file keeps what only synthetic series
// can check: the values of the SLI recording rules, whose inputs must be
// known exactly, in both histogram modes.

// sliExporter serves the two series families the SLI rules read, with
// synthetic observations in a known ratio.
type sliExporter struct {
	reg  *prometheus.Registry
	stop func()
}

// Bucket layout of the synthetic TTFT histogram. It has no boundary at the
// 2s threshold, so the classic SLI errs on the strict side (see rules.yaml).
var ttftBuckets = prometheus.ExponentialBucketsRange(0.01, 120, 20)

// newSLIExporter observes one synthetic probe per tick. One probe in ten
// has a 3s TTFT and one in twenty fails, so the SLI ratios are known: 10% of
// successful probes above the 2s TTFT threshold, 5% failed probes. Bench
// requests at the same time are all slow and half of them fail: the SLIs
// read mode="probe" only and must not see them.
func newSLIExporter() *sliExporter {
	reg := prometheus.NewRegistry()
	ttft := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "servingprobe_time_to_first_token_seconds", Help: "Synthetic TTFT.", Buckets: ttftBuckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour,
	}, []string{"target", "module", "model", "mode"})
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "servingprobe_requests_total", Help: "Synthetic requests."},
		[]string{"target", "module", "model", "mode", "outcome"})
	reg.MustRegister(ttft, requests)
	for _, mode := range []string{"probe", "bench"} {
		for _, o := range []string{"success", "http_5xx", "canceled"} {
			requests.WithLabelValues("a", "chat", "m", mode, o)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			probe := []string{"a", "chat", "m", "probe"}
			switch {
			case i%20 == 0:
				requests.WithLabelValues(append(probe, "http_5xx")...).Inc()
			case i%20 == 1:
				// Canceled probes count neither as good nor as bad.
				requests.WithLabelValues(append(probe, "canceled")...).Inc()
			default:
				t := 0.2 + 0.1*float64(i%7)/7
				if i%10 == 5 {
					t = 3
				}
				ttft.WithLabelValues(probe...).Observe(t)
				requests.WithLabelValues(append(probe, "success")...).Inc()
			}
			bench := []string{"a", "chat", "m", "bench"}
			if i%2 == 0 {
				requests.WithLabelValues(append(bench, "http_5xx")...).Inc()
			} else {
				ttft.WithLabelValues(bench...).Observe(5)
				requests.WithLabelValues(append(bench, "success")...).Inc()
			}
		}
	}()
	return &sliExporter{reg: reg, stop: func() { cancel(); wg.Wait() }}
}

// writeRules copies the embedded rule files where Prometheus can read them.
func writeRules(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, name := range RuleFiles {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestSLIRulesAgainstPrometheus scrapes the synthetic exporter with a real
// Prometheus, native histograms off and on, and checks the values of the
// SLI and quantile recording rules.
func TestSLIRulesAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus twice; run without -short")
	}
	fake := newSLIExporter()
	defer fake.stop()
	exp := httptest.NewServer(promhttp.HandlerFor(fake.reg, promhttp.HandlerOpts{}))
	defer exp.Close()
	rules := writeRules(t)

	// The group returns when both parallel modes have, before the defers.
	t.Run("mode", func(t *testing.T) {
		for _, native := range []bool{false, true} {
			t.Run(fmt.Sprintf("native=%v", native), func(t *testing.T) {
				t.Parallel()
				prom := promtest.Start(t, promtest.Config{
					Binary:           external.Program(t, "prometheus"),
					Targets:          []promtest.ScrapeTarget{{Job: "servingprobe", URL: exp.URL + "/metrics"}},
					NativeHistograms: native,
					RuleFiles:        rules,
				})
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				// Recording rules need two scrapes inside their windows.
				for _, expr := range []string{
					`target:servingprobe_ttft_slo_errors:ratio_rate5m`,
					`target:servingprobe_time_to_first_token_seconds:quantile_rate5m`,
					`target:servingprobe_availability_slo_errors:ratio_rate5m`,
				} {
					if err := prom.WaitFor(ctx, expr); err != nil {
						t.Fatalf("%v\n%s", err, prom.Log())
					}
				}
				// A few more scrapes, so the ratios settle.
				time.Sleep(4 * time.Second)

				prom.CheckHistogramMode(ctx, t, "servingprobe_time_to_first_token_seconds", native)

				// 1 in 10 successful probes at 3s (> 2s): 2 of the 18
				// successes in 20 ticks, 0.111; 1 in 19 finished probes
				// failed (the canceled one is left out), 0.053.
				checkValue(ctx, t, prom, `target:servingprobe_ttft_slo_errors:ratio_rate5m{target="a"}`, 0.111, 0.03)
				checkValue(ctx, t, prom, `target:servingprobe_availability_slo_errors:ratio_rate5m{target="a"}`, 0.053, 0.02)
				checkValue(ctx, t, prom, `target:servingprobe_time_to_first_token_seconds:quantile_rate5m{target="a", mode="probe", quantile="0.5"}`, 0.25, 0.06)
			})
		}
	})
}

func checkValue(ctx context.Context, t *testing.T, prom *promtest.Server, expr string, want, tol float64) {
	t.Helper()
	got, err := prom.QueryValue(ctx, expr)
	if err != nil {
		t.Errorf("%s: %v", expr, err)
		return
	}
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v ± %v", expr, got, want, tol)
	} else {
		t.Logf("%s = %.4f (want %v ± %v)", expr, got, want, tol)
	}
}
