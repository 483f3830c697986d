package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/simulator"
)

// The simulator's latency model for this test (simulator.Config): TTFT is
// base + uniform jitter in [-J, +J] (prefill per token set to 0), each
// decode step is ITL + uniform jitter, one token per chunk, and a share of
// requests get a 500 before any token.
const (
	simTTFT       = 300 * time.Millisecond
	simTTFTJitter = 100 * time.Millisecond
	simITL        = 50 * time.Millisecond
	simITLJitter  = 10 * time.Millisecond
	simFault500   = 0.2
)

// Predictions from that model, for the uniform jitter: the q-quantile of
// base+U(-J,J) is base + J*(2q-1). Our own overhead on loopback (tens of
// microseconds) is far below the tolerances. The latencies are long on
// purpose: on a busy shared machine, goroutine scheduling adds up to a few
// milliseconds to the tail (and two chunks can land in one read), which
// must stay small against a decode step.
var (
	wantTTFTp50    = simTTFT.Seconds()
	wantTTFTp99    = (simTTFT + time.Duration(0.98*float64(simTTFTJitter))).Seconds()
	wantITLp99     = (simITL + time.Duration(0.98*float64(simITLJitter))).Seconds()
	wantSuccessRat = 1 - simFault500
)

// Tolerances.
//   - Classic form: histogram_quantile interpolates linearly inside the
//     bucket holding the quantile, so the estimate is only known to lie in
//     the classic bucket that holds the true value. The test accepts that
//     bucket, widened by one neighbour on each side for sampling noise near
//     an edge.
//   - Native form: schema 3 buckets are 9% wide; the test accepts ±12%.
//   - Success ratio: about 120 requests in the window, binomial standard
//     deviation sqrt(0.16/120) ≈ 0.037; the test accepts ±0.13 (3.5 sd).
//   - Tail quantiles: a loaded machine can only add latency, never remove
//     it. With other CI jobs on both cores, the simulator's and our
//     goroutines wait for a CPU now and then; a 1% tail is made of exactly
//     those samples. Measured up to +9 ms on ITL p99 at a load average of
//     10 on 2 cores, so the upper bound of a p99 gets 15 ms more.
const (
	nativeRelTolerance = 0.12
	ratioTolerance     = 0.13
	tailLoadAllowance  = 15 * time.Millisecond
)

// classicBounds returns the accepted range for a classic estimate of v.
func classicBounds(buckets []float64, v float64) (lo, hi float64) {
	i := 0
	for i < len(buckets) && buckets[i] < v {
		i++
	}
	// v lies in (buckets[i-1], buckets[i]]; widen by one bucket each way.
	lo, hi = 0, math.Inf(1)
	if i-2 >= 0 {
		lo = buckets[i-2]
	}
	if i+1 < len(buckets) {
		hi = buckets[i+1]
	}
	return lo, hi
}

// TestPrometheusIntegration runs the daemon against the in-process
// simulator with the latency model above, scrapes it with a real Prometheus
// with and without native histograms (2.42 ingests only one form of a
// histogram that has both), and checks that PromQL returns what the model
// predicts. Each query is written to work in both modes.
func TestPrometheusIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus; skipped with -short")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (apt-get install prometheus)")
	}

	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.TTFTJitter, cfg.PrefillPerToken = simTTFT, simTTFTJitter, 0
	cfg.ITL, cfg.ITLJitter, cfg.ITLPerRunningRequest = simITL, simITLJitter, 0
	cfg.Jitter = simulator.Uniform
	cfg.TokensPerChunk = 1
	cfg.FaultRates = map[simulator.Fault]float64{simulator.Fault500: simFault500}
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim.Handler())
	defer simSrv.Close()

	// Two targets probed every 200 ms with up to 4 probes in flight (a
	// request takes about 650 ms): about 6 requests a second in all, about
	// 120 in the query window.
	var b strings.Builder
	b.WriteString("targets:\n")
	for i := range 2 {
		fmt.Fprintf(&b, "  - name: sim%d\n    url: %s\n    backend: vllm-chat\n    model: servingprobe-sim\n    modules: [m]\n    interval: 200ms\n    timeout: 5s\n    max_in_flight: 4\n", i, simSrv.URL)
	}
	b.WriteString("modules:\n  m:\n    dataset: fixed\n    prompt: \"hello\"\n    output_len: 8\n")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "servingprobe.yml")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startServe(t, "serve", "--config.file="+cfgPath, "--web.listen-address="+addr, "--web.disable-exporter-metrics")

	type promInstance struct {
		name string
		url  string
	}
	var proms []promInstance
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"classic", nil}, {"native", []string{"--enable-feature=native-histograms"}}} {
		pdir := filepath.Join(dir, mode.name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		pcfg := filepath.Join(pdir, "prometheus.yml")
		if err := os.WriteFile(pcfg, []byte(fmt.Sprintf(
			"global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: servingprobe\n    static_configs:\n      - targets: ['%s']\n", addr)), 0o600); err != nil {
			t.Fatal(err)
		}
		paddr := freeAddr(t)
		args := append([]string{"--config.file=" + pcfg, "--storage.tsdb.path=" + filepath.Join(pdir, "data"),
			"--web.listen-address=" + paddr, "--log.level=warn"}, mode.flags...)
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, promBin, args...)
		logf, _ := os.Create(filepath.Join(pdir, "prometheus.log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cancel()
			_ = cmd.Wait()
			logf.Close()
		})
		proms = append(proms, promInstance{mode.name, "http://" + paddr})
	}

	// Let a 20 s window fill, plus a couple of scrapes.
	time.Sleep(23 * time.Second)

	q := func(p promInstance, expr string) (float64, error) {
		resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(expr))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var r struct {
			Status string
			Error  string
			Data   struct {
				Result []struct {
					Value [2]any
				}
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return 0, err
		}
		if r.Status != "success" {
			return 0, fmt.Errorf("query %s: %s", expr, r.Error)
		}
		if len(r.Data.Result) != 1 {
			return 0, fmt.Errorf("query %s: %d results, want 1", expr, len(r.Data.Result))
		}
		s, _ := r.Data.Result[0].Value[1].(string)
		return strconv.ParseFloat(s, 64)
	}
	quantile := func(qq float64, metric string) string {
		return fmt.Sprintf(`histogram_quantile(%g, sum by (le) (rate(%s_bucket{mode="probe"}[20s]))) or histogram_quantile(%g, sum(rate(%s{mode="probe"}[20s])))`,
			qq, metric, qq, metric)
	}
	latencyBuckets, tokenBuckets, _ := exporter.ClassicBuckets()
	checks := []struct {
		name    string
		expr    string
		want    float64
		buckets []float64
		tail    bool
	}{
		{"TTFT p50", quantile(0.5, "servingprobe_time_to_first_token_seconds"), wantTTFTp50, latencyBuckets, false},
		{"TTFT p99", quantile(0.99, "servingprobe_time_to_first_token_seconds"), wantTTFTp99, latencyBuckets, true},
		{"ITL p99", quantile(0.99, "servingprobe_inter_token_latency_seconds"), wantITLp99, tokenBuckets, true},
		{"success ratio", `sum(rate(servingprobe_requests_total{outcome="success"}[20s])) / sum(rate(servingprobe_requests_total[20s]))`, wantSuccessRat, nil, false},
	}
	for _, p := range proms {
		for _, c := range checks {
			got, err := q(p, c.expr)
			if err != nil {
				t.Errorf("%s Prometheus, %s: %v", p.name, c.name, err)
				continue
			}
			var lo, hi float64
			switch {
			case c.buckets == nil:
				lo, hi = c.want-ratioTolerance, c.want+ratioTolerance
			case p.name == "classic":
				lo, hi = classicBounds(c.buckets, c.want)
			default:
				lo, hi = c.want*(1-nativeRelTolerance), c.want*(1+nativeRelTolerance)
			}
			if c.tail {
				hi += tailLoadAllowance.Seconds()
			}
			if got < lo || got > hi {
				t.Errorf("%s Prometheus, %s = %.4f, want %.4f (accepted [%.4f, %.4f])", p.name, c.name, got, c.want, lo, hi)
			} else {
				t.Logf("%s Prometheus, %s = %.4f (model %.4f, accepted [%.4f, %.4f])", p.name, c.name, got, c.want, lo, hi)
			}
		}
	}
}
