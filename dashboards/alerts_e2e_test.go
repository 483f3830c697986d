package dashboards

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
	"github.com/servingprobe/servingprobe/dashboards/promtest"
	"github.com/servingprobe/servingprobe/testkit/external"
)

// e2eKnobs are the shipped rules with every window shrunk so that the test
// runs in about two minutes: probes every 250ms (so a 5s window holds the 20
// probes a median needs), a baseline from the 20s quantile 40s ago, and
// outage thresholds of a few seconds. The rule shapes are the shipped ones;
// only durations change.
func e2eKnobs() mixin.Config {
	c := mixin.Default()
	c.ProbeIntervalSeconds = 0.25
	c.RegressionWindow, c.RegressionShortWindow = "8s", "5s"
	c.RegressionBaselineWindow, c.RegressionBaselineLags = "20s", []string{"40s"}
	c.RegressionFor = "2s"
	c.TargetDownAfterSeconds, c.TargetDownFor = 2, "2s"
	c.ProbeFailureWindow, c.ProbeFailureFor = "10s", "2s"
	// The simulator's tokens come 2ms apart: a prober that starts its
	// probes later than that at p90 reads them late too, merged under one
	// kernel time, and its ITL is not the server's (the loaded CI machine
	// fired ServingprobeITLRegression on exactly that).
	c.ProberLagSeconds = 0.002
	return c
}

// webhook collects the alerts Alertmanager posts.
type webhook struct {
	mu     sync.Mutex
	firing map[string]time.Time // alertname/target -> first received
	notify chan struct{}
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var msg struct {
		Alerts []struct {
			Status string            `json:"status"`
			Labels map[string]string `json:"labels"`
		} `json:"alerts"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&msg); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	for _, a := range msg.Alerts {
		k := a.Labels["alertname"] + "/" + a.Labels["target"]
		if _, ok := w.firing[k]; !ok && a.Status == "firing" {
			w.firing[k] = time.Now()
		}
	}
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *webhook) received() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]time.Time{}
	for k, v := range w.firing {
		out[k] = v
	}
	return out
}

// waitFor waits until key arrives or ctx ends.
func (w *webhook) waitFor(ctx context.Context, key string) (time.Time, bool) {
	for {
		if at, ok := w.received()[key]; ok {
			return at, true
		}
		select {
		case <-ctx.Done():
			return time.Time{}, false
		case <-w.notify:
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startProcess runs bin until the test ends and waits for ready to answer 200.
func startProcess(t *testing.T, ready string, bin string, args ...string) {
	t.Helper()
	var log bytes.Buffer
	var mu sync.Mutex
	cmd := exec.Command(bin, args...)
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("%s output:\n%s", filepath.Base(bin), log.String())
			mu.Unlock()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s exited before ready: %v\n%s", bin, err, log.String())
		default:
		}
		if resp, err := http.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready at %s", bin, ready)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func putLive(t *testing.T, simURL, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, simURL+"/admin/live", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("PUT /admin/live %s: %d %s", body, resp.StatusCode, b)
	}
}

// TestAlertsEndToEnd runs the daemon (servingprobe serve) probing the
// simulator (servingprobe simulate --sim.admin), a real Prometheus scraping
// the daemon with the rendered e2eKnobs rules, and a real Alertmanager that
// posts to a webhook here. It makes the simulator's TTFT 3x slower, and
// requires ServingprobeTTFTRegression, and no other alert, at the webhook;
// then it fails every request and requires ServingprobeTargetDown, with no
// alert outside the availability family.
func TestAlertsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("about two minutes of real time; run without -short")
	}
	am := external.Program(t, "prometheus-alertmanager")
	promBin := external.Program(t, "prometheus")
	dir := t.TempDir()
	bin := filepath.Join(dir, "servingprobe")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/servingprobe/servingprobe/cmd/servingprobe").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The simulator: TTFT about 100ms, so 3x stays under the 2s SLO
	// threshold and only the regression alert has cause to fire.
	simAddr := freeAddr(t)
	startProcess(t, "http://"+simAddr+"/health", bin, "simulate", "--sim.admin", "--sim.ttft=100ms", "--sim.ttft-jitter=20ms",
		"--sim.itl=2ms", "--web.listen-address="+simAddr)
	simURL := "http://" + simAddr

	cfgPath := filepath.Join(dir, "servingprobe.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, "targets:\n  - name: sim\n    url: %s\n    backend: vllm-chat\n    model: servingprobe-sim\n    modules: [m]\n    interval: 250ms\n    timeout: 5s\n    max_in_flight: 4\nmodules:\n  m:\n    dataset: fixed\n    prompt: \"hello\"\n    output_len: 8\n", simURL), 0o600); err != nil {
		t.Fatal(err)
	}
	spAddr := freeAddr(t)
	startProcess(t, "http://"+spAddr+"/metrics", bin, "serve", "--config.file="+cfgPath, "--web.listen-address="+spAddr, "--web.disable-exporter-metrics")

	hook := &webhook{firing: map[string]time.Time{}, notify: make(chan struct{}, 1)}
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)
	amAddr := freeAddr(t)
	amConf := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(amConf, fmt.Appendf(nil, `route:
  receiver: hook
  group_by: [alertname, target]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: %s/
        send_resolved: false
`, hookSrv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, "http://"+amAddr+"/-/ready", am, "--config.file="+amConf, "--storage.path="+filepath.Join(dir, "am"),
		"--web.listen-address="+amAddr, "--cluster.listen-address=", "--log.level=warn")

	files, err := mixin.Files(e2eKnobs())
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, n := range RuleFiles {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			t.Fatal(err)
		}
		rules = append(rules, p)
	}
	prom := promtest.Start(t, promtest.Config{
		Binary:        promBin,
		Targets:       []promtest.ScrapeTarget{{Job: "servingprobe", URL: "http://" + spAddr + "/metrics"}},
		RuleFiles:     rules,
		Alertmanagers: []string{amAddr},
	})

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// A healthy minute fills the baseline's window 40s back.
	if err := prom.WaitFor(ctx, `target:servingprobe_time_to_first_token_seconds:quantile_rate1h_baseline{target="sim"}`); err != nil {
		t.Fatalf("no baseline: %v\n%s", err, prom.Log())
	}
	if got := hook.received(); len(got) != 0 {
		t.Fatalf("alerts while healthy: %v", keys(got))
	}

	const regressionTarget = 45 * time.Second
	start := time.Now()
	putLive(t, simURL, `{"ttft_factor":3}`)
	wctx, wcancel := context.WithTimeout(ctx, regressionTarget)
	at, ok := hook.waitFor(wctx, "ServingprobeTTFTRegression/sim")
	wcancel()
	if !ok {
		t.Fatalf("ServingprobeTTFTRegression did not reach the webhook within %v; received %v", regressionTarget, keys(hook.received()))
	}
	t.Logf("TTFT x3: ServingprobeTTFTRegression at the webhook %.1fs after the change", at.Sub(start).Seconds())
	for k := range hook.received() {
		if k != "ServingprobeTTFTRegression/sim" {
			t.Errorf("unexpected alert during the TTFT regression: %s", k)
		}
	}

	const downTarget = 30 * time.Second
	putLive(t, simURL, `{"fail_ratio":1}`)
	start = time.Now()
	wctx, wcancel = context.WithTimeout(ctx, downTarget)
	at, ok = hook.waitFor(wctx, "ServingprobeTargetDown/sim")
	wcancel()
	if !ok {
		t.Fatalf("ServingprobeTargetDown did not reach the webhook within %v; received %v", downTarget, keys(hook.received()))
	}
	t.Logf("every probe failing: ServingprobeTargetDown at the webhook %.1fs after the change", at.Sub(start).Seconds())
	allowed := map[string]bool{
		"ServingprobeTTFTRegression/sim": true, "ServingprobeTargetDown/sim": true,
		// The outage also fails the failure ratio and burns the
		// availability budget: those say the same thing.
		"ServingprobeProbeFailures/sim": true, "ServingprobeAvailabilityErrorBudgetBurnFast/sim": true,
		"ServingprobeAvailabilityErrorBudgetBurnSlow/sim": true,
	}
	for k := range hook.received() {
		if !allowed[k] {
			t.Errorf("unexpected alert during the outage: %s", k)
		}
	}
}

func keys(m map[string]time.Time) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
