package exporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
)

// scrapeRequests sums servingprobe_requests_total{mode="probe"} of target
// and module from a Gather of reg, as a scrape would read them: successes
// and every outcome but canceled.
func scrapeRequests(t *testing.T, reg *prometheus.Registry, target, module string) (ok, n int) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range fams {
		if mf.GetName() != "servingprobe_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["target"] != target || l["module"] != module || l["mode"] != "probe" || l["outcome"] == "canceled" {
				continue
			}
			v := int(m.GetCounter().GetValue())
			n += v
			if l["outcome"] == "success" {
				ok += v
			}
		}
	}
	return ok, n
}

// TestLandingHealthEqualsCounters: the page's success ratio is the
// increase of the request counters over its stated window, whatever the
// history keeps. The history keeps the last 10 results and, apart, the
// last 10 failures; a burst of failures followed by successes made it
// show 50% where the counters said otherwise.
func TestLandingHealthEqualsCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm", Model: "m", Modules: []string{"mod"}}})
	clock := time.Unix(1_000_000, 0)
	h := newHealthTracker(m.requests, func() time.Time { return clock })
	hist := NewHistory(10)
	obs := m.Observer(ModeProbe)
	probe := func(o prober.Outcome) {
		clock = clock.Add(10 * time.Second)
		r := prober.Result{Target: "t", Module: "mod", Model: "m", Backend: "vllm", Outcome: o,
			Scheduled: clock.Add(-time.Second), Sent: clock.Add(-time.Second), FirstToken: clock.Add(-time.Second / 2), End: clock, OutputTokens: 1,
			Events: []prober.Event{{At: clock.Add(-time.Second / 2), Tokens: 1}}}
		obs.Observe(r)
		h.Observe(r)
		hist.Add(entryOf(r, "m", ModeProbe, nil, &config.Redactor{}))
	}
	cfg := &config.Config{Targets: []config.Target{{Name: "t", Backend: "vllm", Model: "m", Modules: []string{"mod"}}}}
	page := func() string {
		var b bytes.Buffer
		if err := landingTmpl.Execute(&b, landingData{Targets: targetViews(cfg, hist.recentEntries(), h.figures), Kept: 10}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	cell := regexp.MustCompile(`<td>([0-9.]+)% \((\d+)/(\d+)\)`)
	pageRatio := func() (ok, n int, since bool) {
		p := page()
		c := cell.FindStringSubmatch(p)
		if c == nil {
			t.Fatalf("no success cell:\n%s", p)
		}
		fmt.Sscan(c[2], &ok)
		fmt.Sscan(c[3], &n)
		return ok, n, strings.Contains(p, `<span class="dim">since `)
	}

	// Younger than the window: the ratio is the counters' values, and
	// the page says since when.
	for i := range 12 {
		probe(map[bool]prober.Outcome{true: prober.OutcomeHTTP5xx, false: prober.OutcomeSuccess}[i%3 == 0])
	}
	okA, nA := scrapeRequests(t, reg, "t", "mod")
	if ok, n, since := pageRatio(); ok != okA || n != nA || !since {
		t.Errorf("young daemon: page %d/%d (since stated: %v), counters %d/%d", ok, n, since, okA, nA)
	}

	// A scrape at A and one healthWindow later at B: the page at B
	// shows their increase. Failures come in a burst, so the history's
	// kept failures outnumber its successes.
	clock = clock.Add(5 * time.Second)
	okA, nA = scrapeRequests(t, reg, "t", "mod")
	clockA := clock
	for range 8 {
		probe(prober.OutcomeSuccess)
	}
	for range 12 {
		probe(prober.OutcomeHTTP5xx)
	}
	for range 10 {
		probe(prober.OutcomeSuccess)
	}
	clock = clockA.Add(healthWindow)
	okB, nB := scrapeRequests(t, reg, "t", "mod")
	ok, n, since := pageRatio()
	if ok != okB-okA || n != nB-nA || since {
		t.Errorf("page %d/%d (since stated: %v), want the counters' increase %d/%d over %v", ok, n, since, okB-okA, nB-nA, healthWindow)
	}
	if n != 30 || ok != 18 {
		t.Fatalf("the window holds %d/%d, want the 18/30 probed in it", ok, n)
	}
	// The strip and sparklines are the last 10 results alone: no kept
	// failure older than them.
	p := page()
	if got := strings.Count(p, `<rect class="bad"`); got != 0 {
		t.Errorf("outcome strip has %d failures, want the last 10 results, all successes", got)
	}
	if got := strings.Count(p, `<rect class="ok"`); got != 10 {
		t.Errorf("outcome strip has %d successes, want 10", got)
	}

	// A reload that removes the target deletes its series; back again,
	// it counts from 0, and the page adds what the old series gained in
	// the window to the new one's, as increase() does over a reset.
	m.SetTargets(nil)
	m.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm", Model: "m", Modules: []string{"mod"}}})
	probe(prober.OutcomeSuccess)
	probe(prober.OutcomeHTTP5xx)
	if okNew, nNew := scrapeRequests(t, reg, "t", "mod"); okNew != 1 || nNew != 2 {
		t.Fatalf("after the reload the counters are %d/%d, want 1/2", okNew, nNew)
	}
	// The window now starts 20 s after A: 2 of the 8 successes fell out.
	if ok, n, _ := pageRatio(); ok != 6+10+1 || n != 28+2 {
		t.Errorf("after a reset: page %d/%d, want 17/30", ok, n)
	}
}

// TestLandingHealthEqualsMetrics runs the daemon against a simulator that
// fails a third of its requests with a 500, with a history of 4 results
// (and 4 kept failures), and reads the page and /metrics once probing has
// stopped: the sim row's success ratio is servingprobe_requests_total's,
// over the daemon's life (younger than the window), not the history's.
func TestLandingHealthEqualsMetrics(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = time.Millisecond, 0, time.Millisecond, 0
	cfg.FaultRates = map[simulator.Fault]float64{simulator.Fault500: 0.34}
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(simSrv.Close)
	path := filepath.Join(t.TempDir(), "c.yml")
	conf := strings.NewReplacer("SIM_URL", simSrv.URL, "DOWN_URL", closedPort(t), "PLANTED", plantedToken, "EXTRA", "", "ADHOC", "false").Replace(configTmpl)
	conf = strings.ReplaceAll(conf, "interval: 200ms", "interval: 20ms")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{ConfigFile: path, BuildProbe: testBuilder(), Seed: 1, HistorySize: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	m := d.Metrics()
	waitFor(t, "12 successes and 6 failures", func() bool {
		return testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "success")) >= 12 &&
			testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "http_5xx")) >= 6
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var ok, n int
	sample := regexp.MustCompile(`(?m)^servingprobe_requests_total\{([^}]*)\} (\d+)$`)
	for _, s := range sample.FindAllStringSubmatch(get("/metrics"), -1) {
		l := s[1]
		if !strings.Contains(l, `target="sim"`) || !strings.Contains(l, `mode="probe"`) || strings.Contains(l, `outcome="canceled"`) {
			continue
		}
		v, _ := strconv.Atoi(s[2])
		n += v
		if strings.Contains(l, `outcome="success"`) {
			ok += v
		}
	}
	rows := regexp.MustCompile(`(?s)<tr class="target">(.*?)</tr>`).FindAllStringSubmatch(get("/"), -1)
	if len(rows) == 0 || !strings.Contains(rows[0][1], "<td>sim</td>") {
		t.Fatalf("no sim row")
	}
	want := fmt.Sprintf("%.1f%% (%d/%d)", 100*float64(ok)/float64(n), ok, n)
	if !strings.Contains(rows[0][1], "<td>"+want) {
		t.Errorf("sim row's success is not /metrics' %s:\n%s", want, rows[0][1])
	}
	if n <= 8 {
		t.Errorf("only %d requests counted: the history of 4+4 could hold them all", n)
	}
}
