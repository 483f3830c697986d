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
	"github.com/servingprobe/servingprobe/testkit/external"
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

// What the model guarantees: the q-quantile of base+U(-J,J) is
// base + J*(2q-1), and no latency can be below it, since a loaded machine
// only ever adds latency. How much it adds to a 1% tail depends on what
// else runs on the machine, so the test asserts no upper band on latency:
// it checks that the two Prometheus forms agree with each other, that
// each is no faster than the model allows, and the success ratio.
var (
	wantTTFTp50    = simTTFT.Seconds()
	wantTTFTp99    = (simTTFT + time.Duration(0.98*float64(simTTFTJitter))).Seconds()
	wantITLp99     = (simITL + time.Duration(0.98*float64(simITLJitter))).Seconds()
	wantSuccessRat = 1 - simFault500
)

// Tolerances.
//   - Classic form: histogram_quantile interpolates linearly inside the
//     bucket holding the quantile, so the estimate is only known to lie in
//     the classic bucket that holds the true value. The native estimate
//     must lie in the classic estimate's bucket, widened by one neighbour
//     on each side (sampling near an edge, and the two Prometheus servers
//     scrape at slightly different moments).
//   - Native form: schema 3 buckets are 9% wide; a lower bound gets 12%.
//   - Success ratio: about 120 requests in the window, binomial standard
//     deviation sqrt(0.16/120) ≈ 0.037; the test accepts ±0.13 (3.5 sd).
const (
	nativeRelTolerance = 0.12
	ratioTolerance     = 0.13
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
	promBin := external.Program(t, "prometheus")

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
		min     float64 // the model's floor for this quantile
		buckets []float64
	}{
		{"TTFT p50", quantile(0.5, "servingprobe_time_to_first_token_seconds"), wantTTFTp50, latencyBuckets},
		{"TTFT p99", quantile(0.99, "servingprobe_time_to_first_token_seconds"), wantTTFTp99, latencyBuckets},
		{"ITL p99", quantile(0.99, "servingprobe_inter_token_latency_seconds"), wantITLp99, tokenBuckets},
	}
	for _, c := range checks {
		got := map[string]float64{}
		for _, p := range proms {
			v, err := q(p, c.expr)
			if err != nil {
				t.Errorf("%s Prometheus, %s: %v", p.name, c.name, err)
				continue
			}
			got[p.name] = v
			floor := c.min * (1 - nativeRelTolerance)
			if p.name == "classic" {
				floor, _ = classicBounds(c.buckets, c.min)
			}
			if v < floor {
				t.Errorf("%s Prometheus, %s = %.4f, below the model's floor %.4f (accepted from %.4f)", p.name, c.name, v, c.min, floor)
			}
		}
		classic, ok1 := got["classic"]
		native, ok2 := got["native"]
		if !ok1 || !ok2 {
			continue
		}
		lo, hi := classicBounds(c.buckets, classic)
		if native < lo || native > hi {
			t.Errorf("%s: native %.4f and classic %.4f disagree (native accepted in [%.4f, %.4f], the classic estimate's bucket and its neighbours)",
				c.name, native, classic, lo, hi)
		} else {
			t.Logf("%s: native %.4f, classic %.4f (model floor %.4f)", c.name, native, classic, c.min)
		}
	}
	for _, p := range proms {
		expr := `sum(rate(servingprobe_requests_total{outcome="success"}[20s])) / sum(rate(servingprobe_requests_total[20s]))`
		got, err := q(p, expr)
		if err != nil {
			t.Errorf("%s Prometheus, success ratio: %v", p.name, err)
		} else if lo, hi := wantSuccessRat-ratioTolerance, wantSuccessRat+ratioTolerance; got < lo || got > hi {
			t.Errorf("%s Prometheus, success ratio = %.4f, want %.4f (accepted [%.4f, %.4f])", p.name, got, wantSuccessRat, lo, hi)
		}
	}
}
