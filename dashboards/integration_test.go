package dashboards

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/servingprobe/servingprobe/dashboards/promtest"
)

// fakeExporter serves the metric contract with synthetic observations until
// the real daemon can be used here. TODO(lead): replace with the daemon
// probing the simulator plus a short bench window triggered over the API.
type fakeExporter struct {
	reg    *prometheus.Registry
	server *prometheus.Registry
	stop   func()
}

// Bucket layouts as in exporter/metrics.go; the rules do not depend on them.
var (
	ttftBuckets  = prometheus.ExponentialBucketsRange(0.01, 120, 20)
	itlBuckets   = prometheus.ExponentialBucketsRange(0.001, 5, 20)
	queueBuckets = prometheus.ExponentialBucketsRange(0.0001, 60, 16)
)

func histogramVec(reg prometheus.Registerer, name string, buckets []float64, native bool, labels ...string) *prometheus.HistogramVec {
	opts := prometheus.HistogramOpts{Name: name, Help: "Synthetic " + name + ".", Buckets: buckets}
	if native {
		opts.NativeHistogramBucketFactor = 1.1
		opts.NativeHistogramMaxBucketNumber = 160
		opts.NativeHistogramMinResetDuration = time.Hour
	}
	h := prometheus.NewHistogramVec(opts, labels)
	reg.MustRegister(h)
	return h
}

func gaugeVec(reg prometheus.Registerer, name string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "Synthetic " + name + "."}, labels)
	reg.MustRegister(g)
	return g
}

func counterVec(reg prometheus.Registerer, name string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "Synthetic " + name + "."}, labels)
	reg.MustRegister(c)
	return c
}

var outcomes = []string{"success", "http_4xx", "http_429", "http_5xx", "connect_error", "timeout", "stream_cut", "parse_error", "empty_output", "canceled"}

// newFakeExporter observes one synthetic request per tick. One probe in ten
// has a 3s TTFT and one in twenty fails, so the SLI ratios are known: 10% of
// successful probes above the 2s TTFT threshold, 5% failed probes.
func newFakeExporter() *fakeExporter {
	reg := prometheus.NewRegistry()
	L := []string{"target", "module", "model", "mode"}
	ttft := histogramVec(reg, "servingprobe_time_to_first_token_seconds", ttftBuckets, true, L...)
	itl := histogramVec(reg, "servingprobe_inter_token_latency_seconds", itlBuckets, true, L...)
	tpot := histogramVec(reg, "servingprobe_time_per_output_token_seconds", itlBuckets, true, L...)
	e2e := histogramVec(reg, "servingprobe_e2e_request_latency_seconds", ttftBuckets, true, L...)
	queue := histogramVec(reg, "servingprobe_client_queue_seconds", queueBuckets, true, L...)
	lag := histogramVec(reg, "servingprobe_scheduler_lag_seconds", queueBuckets, true, "target", "module")
	requests := counterVec(reg, "servingprobe_requests_total", append(L, "outcome")...)
	prompt := counterVec(reg, "servingprobe_prompt_tokens_total", L...)
	gen := counterVec(reg, "servingprobe_generation_tokens_total", L...)
	skipped := counterVec(reg, "servingprobe_probes_skipped_total", "target", "module")
	success := gaugeVec(reg, "servingprobe_probe_success", "target", "module", "model")
	lastSuccess := gaugeVec(reg, "servingprobe_last_success_timestamp_seconds", "target", "module", "model")
	lastProbe := gaugeVec(reg, "servingprobe_last_probe_timestamp_seconds", "target", "module", "model")
	gaugeVec(reg, "servingprobe_target_info", "target", "model", "backend", "token_source").WithLabelValues("a", "m", "openai-chat", "usage").Set(1)
	gaugeVec(reg, "servingprobe_build_info", "version", "revision", "branch", "goversion").WithLabelValues("0.0.0", "x", "main", "go").Set(1)
	gaugeVec(reg, "servingprobe_config_last_reload_successful").WithLabelValues().Set(1)
	gaugeVec(reg, "servingprobe_config_last_reload_success_timestamp_seconds").WithLabelValues().SetToCurrentTime()
	now := float64(time.Now().Unix())
	gaugeVec(reg, "servingprobe_bench_running", "target").WithLabelValues("a").Set(1)
	gaugeVec(reg, "servingprobe_bench_last_start_timestamp_seconds", "target").WithLabelValues("a").Set(now - 30)
	gaugeVec(reg, "servingprobe_bench_last_end_timestamp_seconds", "target").WithLabelValues("a").Set(now - 3600)
	runs := counterVec(reg, "servingprobe_bench_runs_total", "target", "result")
	for _, r := range []string{"completed", "failed", "canceled"} {
		runs.WithLabelValues("a", r)
	}
	gaugeVec(reg, "servingprobe_bench_last_request_throughput_requests_per_second", "target").WithLabelValues("a").Set(12.5)
	gaugeVec(reg, "servingprobe_bench_last_output_throughput_tokens_per_second", "target").WithLabelValues("a").Set(1600)
	gaugeVec(reg, "servingprobe_bench_last_completed_requests", "target").WithLabelValues("a").Set(200)
	gaugeVec(reg, "servingprobe_bench_last_failed_requests", "target").WithLabelValues("a").Set(1)

	// The inference server's own classic histograms, as vLLM and SGLang
	// (Python client) expose them, on a separate job.
	server := prometheus.NewRegistry()
	var serverHists []*prometheus.HistogramVec
	for _, n := range []string{"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
		"sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds", "sglang:e2e_request_latency_seconds"} {
		serverHists = append(serverHists, histogramVec(server, n, ttftBuckets, false, "model_name"))
	}

	for _, mode := range []string{"probe", "bench"} {
		for _, o := range outcomes {
			requests.WithLabelValues("a", "chat", "m", mode, o)
		}
	}
	skipped.WithLabelValues("a", "chat")

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
			for _, mode := range []string{"probe", "bench"} {
				lv := []string{"a", "chat", "m", mode}
				if i%20 == 0 {
					requests.WithLabelValues(append(lv, "http_5xx")...).Inc()
					success.WithLabelValues("a", "chat", "m").Set(0)
					continue
				}
				t := 0.2 + 0.1*float64(i%7)/7
				if i%10 == 5 {
					t = 3
				}
				ttft.WithLabelValues(lv...).Observe(t)
				e2e.WithLabelValues(lv...).Observe(t + 1)
				for range 8 {
					itl.WithLabelValues(lv...).Observe(0.02 + 0.001*float64(i%5))
				}
				tpot.WithLabelValues(lv...).Observe(0.021)
				queue.WithLabelValues(lv...).Observe(0.0005)
				requests.WithLabelValues(append(lv, "success")...).Inc()
				prompt.WithLabelValues(lv...).Add(32)
				gen.WithLabelValues(lv...).Add(64)
				success.WithLabelValues("a", "chat", "m").Set(1)
				lastSuccess.WithLabelValues("a", "chat", "m").SetToCurrentTime()
				for _, h := range serverHists {
					h.WithLabelValues("m").Observe(t * 0.8)
				}
			}
			lastProbe.WithLabelValues("a", "chat", "m").SetToCurrentTime()
			lag.WithLabelValues("a", "chat").Observe(0.0002)
			if i%50 == 0 {
				skipped.WithLabelValues("a", "chat").Inc()
				runs.WithLabelValues("a", "completed").Inc()
			}
		}
	}()
	return &fakeExporter{reg: reg, server: server, stop: func() { cancel(); wg.Wait() }}
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

// TestDashboardsAgainstPrometheus scrapes the fake exporter with a real
// Prometheus, native histograms off and on, loads rules.yaml and alerts.yaml,
// and runs every query of every dashboard: each must return data.
func TestDashboardsAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus twice; run without -short")
	}
	fake := newFakeExporter()
	defer fake.stop()
	exp := httptest.NewServer(promhttp.HandlerFor(fake.reg, promhttp.HandlerOpts{}))
	defer exp.Close()
	srv := httptest.NewServer(promhttp.HandlerFor(fake.server, promhttp.HandlerOpts{}))
	defer srv.Close()
	rules := writeRules(t)
	queries, err := promtest.DashboardQueries(FS, Dashboards...)
	if err != nil {
		t.Fatal(err)
	}

	for _, native := range []bool{false, true} {
		t.Run(fmt.Sprintf("native=%v", native), func(t *testing.T) {
			start := time.Now()
			prom := promtest.Start(t, promtest.Config{
				Targets: []promtest.ScrapeTarget{
					{Job: "servingprobe", URL: exp.URL + "/metrics"},
					{Job: "vllm", URL: srv.URL + "/metrics"},
				},
				NativeHistograms: native,
				RuleFiles:        rules,
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// Recording rules need two scrapes inside their windows.
			for _, expr := range []string{
				`target:servingprobe_ttft_slo_errors:ratio_rate5m`,
				`target:servingprobe_time_to_first_token_seconds:quantile_rate5m`,
				`target:servingprobe_availability_slo_errors:ratio_rate6h`,
			} {
				if err := prom.WaitFor(ctx, expr); err != nil {
					t.Fatalf("%v\n%s", err, prom.Log())
				}
			}
			// Let the 10s rate windows of the panels fill.
			time.Sleep(4 * time.Second)

			// Prove the mode: 2.42 keeps only one form of each histogram.
			classic, err := prom.Query(ctx, `servingprobe_time_to_first_token_seconds_bucket`, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			nativeRes, err := prom.Query(ctx, `servingprobe_time_to_first_token_seconds`, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if native && (!classic.Empty() || nativeRes.Histograms == 0) {
				t.Fatalf("native mode: %d classic bucket series, %d native histograms; want 0 and >0", classic.Series, nativeRes.Histograms)
			}
			if !native && (classic.Empty() || !nativeRes.Empty()) {
				t.Fatalf("classic mode: %d classic bucket series, %d native samples; want >0 and 0", classic.Series, nativeRes.Histograms+nativeRes.Floats)
			}

			// The SLIs read what the fake exporter produced in both modes:
			// 1 in 10 successful probes at 3s (> 2s), 1 in 20 probes failed.
			checkValue(ctx, t, prom, `target:servingprobe_ttft_slo_errors:ratio_rate5m{target="a"}`, 0.105, 0.03)
			checkValue(ctx, t, prom, `target:servingprobe_availability_slo_errors:ratio_rate5m{target="a"}`, 0.05, 0.02)
			checkValue(ctx, t, prom, `target:servingprobe_time_to_first_token_seconds:quantile_rate5m{target="a", mode="probe", quantile="0.5"}`, 0.25, 0.06)

			vars := promtest.Vars("10s", "1m")
			end := time.Now()
			checks := prom.CheckQueries(ctx, queries, vars, start, end, time.Second)
			var empty []string
			for _, c := range checks {
				switch {
				case c.Err != nil:
					t.Errorf("%s: %v\n%s", c.Name(), c.Err, c.Substituted)
				case c.Result.Empty():
					empty = append(empty, c.Name())
				default:
					t.Logf("ok %s (%d series, %d float and %d histogram samples)", c.Name(), c.Result.Series, c.Result.Floats, c.Result.Histograms)
				}
			}
			if len(empty) > 0 {
				t.Errorf("%d of %d dashboard queries returned no data:\n  %s", len(empty), len(checks), strings.Join(empty, "\n  "))
			}
			// No rule may fail to evaluate (a type error in a native-only
			// branch shows up here, not as an empty result).
			checkRuleHealth(ctx, t, prom)
		})
	}
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
	}
}

func checkRuleHealth(ctx context.Context, t *testing.T, prom *promtest.Server) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, prom.URL+"/api/v1/rules", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range r.Data.Groups {
		for _, rule := range g.Rules {
			n++
			if rule.Health == "err" {
				t.Errorf("rule %s/%s: %s", g.Name, rule.Name, rule.LastError)
			}
		}
	}
	if n == 0 {
		t.Error("Prometheus loaded no rules")
	}
}
