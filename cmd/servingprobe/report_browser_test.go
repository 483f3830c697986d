package main

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/external"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "rewrite docs/report.png from the report test")

// chromium is Debian's headless Chromium, which `make test` installs; the
// page tests need a real browser. Where it is missing they skip, and
// `make test` fails on that skip (see testkit/external).
func chromium(t *testing.T) string {
	t.Helper()
	return external.Program(t, "chromium")
}

// browse renders url in headless Chromium and returns the DOM after
// scripts and layout, and, if png is set, writes a screenshot there.
func browse(t *testing.T, url, shot string, height int) string {
	t.Helper()
	bin := chromium(t)
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--window-size=1400," + strconv.Itoa(height)}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// One launch takes both: headless Chromium prints the DOM on stdout
	// and writes the screenshot, and a launch is the costly part (some
	// 20 s on a busy machine).
	args = append(args, "--dump-dom")
	if shot != "" {
		args = append(args, "--screenshot="+shot)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", url, err, stderr.Bytes())
	}
	return string(out)
}

var (
	chartRe  = regexp.MustCompile(`(?s)<svg class="chart" data-chart="([^"]+)" data-points="(\d+)".*?</svg>`)
	seriesRe = regexp.MustCompile(`class="series [^"]*" data-points="(\d+)"(?: d="([^"]*)")?`)
)

// checkCharts requires every chart the browser rendered to hold data: at
// least one series with more than least points (and, for a path, that many
// drawing commands), and returns the charts by id.
func checkCharts(t *testing.T, dom string, least int) map[string]string {
	t.Helper()
	charts := map[string]string{}
	for _, m := range chartRe.FindAllStringSubmatch(dom, -1) {
		id, svg := m[1], m[0]
		charts[id] = svg
		best := 0
		for _, s := range seriesRe.FindAllStringSubmatch(svg, -1) {
			n, _ := strconv.Atoi(s[1])
			if s[2] != "" {
				// A drawn path has one move or line per point.
				n = min(n, strings.Count(s[2], "M")+strings.Count(s[2], "L"))
			}
			best = max(best, n)
		}
		if strings.Contains(svg, `class="series timeline"`) {
			best = max(best, strings.Count(svg, "<rect class="))
		}
		need := least
		switch {
		case id == "failures":
			need = 0 // one bar per outcome that occurred
		case strings.HasPrefix(id, "server-ttft-split"):
			need = 2 // one bar per percentile: P50, P90, P99
		case strings.HasPrefix(id, "server-kv-cache"), strings.HasPrefix(id, "server-requests"):
			need = 1 // the server's gauges, read once a second: a short run has a few reads
		}
		if best <= need {
			t.Errorf("chart %s holds %d points, want more than %d (an empty frame?)", id, best, need)
		}
	}
	if len(charts) == 0 {
		t.Fatalf("the page has no chart:\n%.2000s", dom)
	}
	return charts
}

func requireCharts(t *testing.T, charts map[string]string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, ok := charts[id]; !ok {
			t.Errorf("no %q chart (have %d charts)", id, len(charts))
		}
	}
}

// TestReportInBrowser runs real benches against the simulator, writes the
// report of one run, of a comparison of two, and of a four-rate sweep,
// renders each in headless Chromium and checks that every chart holds
// data. The single-run screenshot is the README's (docs/report.png,
// rewritten with -update-screenshot).
func TestReportInBrowser(t *testing.T) {
	chromium(t)
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	cfg.FaultRates = map[simulator.Fault]float64{simulator.Fault500: 0.04}
	url := startSimulator(t, cfg)
	dir := t.TempDir()
	bench := func(out string, extra ...string) string {
		t.Helper()
		args := append([]string{"bench", "--backend", "vllm", "--base-url", url, "--dataset-name", "random",
			"--tokenizer", "../../tokenizer/testdata/qwen3", "--random-input-len", "128", "--random-output-len", "32",
			"--random-range-ratio", "0.5", "--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10", "--warmup-requests", "0"}, extra...)
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		return stdout
	}

	t.Run("run", func(t *testing.T) {
		html := filepath.Join(dir, "run.html")
		stdout := bench(filepath.Join(dir, "a.jsonl"), "--num-prompts", "240", "--request-rate", "80", "--max-concurrency", "16",
			"--output-details", "--report", html)
		if !strings.Contains(stdout, "Report written to "+html) {
			t.Errorf("bench does not say where the report is:\n%s", stdout)
		}
		page, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		// One file that opens offline: nothing to fetch.
		if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).Match(page) || bytes.Contains(page, []byte("<script")) {
			t.Error("the report references something outside itself")
		}
		shot := filepath.Join(dir, "report.png")
		dom := browse(t, "file://"+html, shot, 2600)
		charts := checkCharts(t, dom, 5)
		requireCharts(t, charts, "throughput", "concurrency", "ttft-hist", "ttft-cdf", "itl-hist", "itl-cdf", "tpot-hist", "tpot-cdf",
			"e2e-hist", "e2e-cdf", "ttft-time", "e2e-time", "ttft-prompt", "timeline",
			// The simulator serves vLLM's /metrics, which bench reads by default.
			"server-kv-cache", "server-requests", "server-ttft-split")
		// The table is the console's.
		if !strings.Contains(dom, "Serving Benchmark Result") || !strings.Contains(stdout, "Serving Benchmark Result") {
			t.Error("the report lacks the summary table")
		}
		// The console prints the row as text, the page as a table row.
		m := regexp.MustCompile(`Successful requests:\s+(\d+)`)
		mp := regexp.MustCompile(`Successful requests:</td><td class="val">(\d+)</td>`)
		if a, b := m.FindStringSubmatch(stdout), mp.FindStringSubmatch(dom); a == nil || b == nil || a[1] != b[1] {
			t.Errorf("successful requests: console %v, report %v", a, b)
		}
		if !strings.Contains(dom, "Failed requests by outcome") {
			t.Error("no failures chart, though the simulator failed 4% of requests")
		}
		checkPNG(t, shot)
		if *updateScreenshot {
			b, _ := os.ReadFile(shot)
			if err := os.WriteFile(filepath.Join("..", "..", "docs", "report.png"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The same report drawn later from the JSONL alone.
		again := filepath.Join(dir, "again.html")
		if code, _, stderr := runCLI(t, "report", "-o", again, filepath.Join(dir, "a.jsonl")); code != 0 {
			t.Fatalf("report exited %d: %s", code, stderr)
		}
		checkCharts(t, browse(t, "file://"+again, "", 2600), 5)
	})

	t.Run("comparison", func(t *testing.T) {
		a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
		if _, err := os.Stat(a); err != nil {
			bench(a, "--num-prompts", "120", "--request-rate", "80", "--output-details")
		}
		bench(b, "--num-prompts", "120", "--request-rate", "20", "--max-concurrency", "4", "--output-details")
		html := filepath.Join(dir, "cmp.html")
		if code, _, stderr := runCLI(t, "report", "-o", html, a, b); code != 0 {
			t.Fatalf("report exited %d: %s", code, stderr)
		}
		dom := browse(t, "file://"+html, "", 2200)
		charts := checkCharts(t, dom, 4)
		requireCharts(t, charts, "ttft-percentiles", "itl-percentiles", "e2e-percentiles", "ttft-cdf-compare", "e2e-cdf-compare")
		// Both records hold intervals, and 120 requests bound a mean and a
		// median on both sides: each run's are drawn as error bars.
		for _, id := range []string{"ttft-percentiles", "e2e-percentiles"} {
			for _, s := range []string{"0", "1"} {
				if n := strings.Count(charts[id], `class="errbar" data-series="`+s+`"`); n < 2 {
					t.Errorf("%s: run %s has %d error bars, want its mean's and median's at least", id, s, n)
				}
			}
		}
		if !strings.Contains(dom, "Δ vs a.jsonl") || !strings.Contains(dom, "Δ %") {
			t.Error("the comparison table lacks the differences")
		}
	})

	t.Run("sweep", func(t *testing.T) {
		out := filepath.Join(dir, "sweep.jsonl")
		bench(out, "--num-prompts", "24", "--sweep-request-rates", "10,20,40,80", "--sweep-cooldown", "0")
		html := filepath.Join(dir, "sweep.html")
		if code, _, stderr := runCLI(t, "report", "-o", html, out); code != 0 {
			t.Fatalf("report exited %d: %s", code, stderr)
		}
		shot := filepath.Join(dir, "sweep.png")
		dom := browse(t, "file://"+html, shot, 1400)
		checkPNG(t, shot)
		charts := checkCharts(t, dom, 3)
		requireCharts(t, charts, "ttft-curve", "itl-curve", "e2e-curve")
		for id, svg := range charts {
			if !strings.Contains(svg, `data-points="4"`) {
				t.Errorf("curve %s does not have one point per sweep point (4)", id)
			}
		}
	})
}

// TestLandingPageInBrowser: the daemon's landing page, once every probe
// loop of the built-in simulator has succeeded three times, renders with a
// sparkline of recent TTFT and ITL for every target that holds points.
func TestLandingPageInBrowser(t *testing.T) {
	chromium(t)
	addr := freeAddr(t)
	startServe(t, "serve", "--demo", "--web.listen-address="+addr)
	c := client{t: t, base: "http://" + addr}
	// The demo's four (target, module) loops probe every 5 s; wait for
	// three successes of each, not for a guess at how long they take.
	success := regexp.MustCompile(`(?m)^servingprobe_requests_total\{[^}]*mode="probe"[^}]*outcome="success"[^}]*\} (\S+)$`)
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, body := c.do("GET", "/metrics")
		ms := success.FindAllStringSubmatch(body, -1)
		ready := len(ms) >= 4
		for _, m := range ms {
			v, _ := strconv.ParseFloat(m[1], 64)
			ready = ready && v >= 3
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every probe loop succeeded three times within 90 s: %q", ms)
		}
		time.Sleep(200 * time.Millisecond)
	}
	dom := browse(t, "http://"+addr+"/", "", 1600)
	rows := regexp.MustCompile(`(?s)<tr class="target[^"]*">.*?</tr>`).FindAllString(dom, -1)
	if len(rows) < 3 {
		t.Fatalf("%d target rows on the landing page, want one per demo target and module:\n%.3000s", len(rows), dom)
	}
	spark := regexp.MustCompile(`<svg class="spark"[^>]*>.*?<polyline points="([^"]+)"`)
	for i, row := range rows {
		sp := spark.FindAllStringSubmatch(row, -1)
		if len(sp) < 2 {
			t.Errorf("row %d has %d sparklines, want TTFT and ITL:\n%s", i, len(sp), row)
			continue
		}
		for _, s := range sp {
			if n := len(strings.Fields(s[1])); n < 3 {
				t.Errorf("row %d: a sparkline with %d points after three successful probes", i, n)
			}
		}
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 1000 {
		t.Errorf("screenshot is %v", b)
	}
}

// TestReadmeScreenshot: the README shows the report test's screenshot.
func TestReadmeScreenshot(t *testing.T) {
	checkPNG(t, filepath.Join("..", "..", "docs", "report.png"))
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("(docs/report.png)")) {
		t.Error("README.md does not show docs/report.png")
	}
}
