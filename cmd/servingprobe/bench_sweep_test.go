package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// sweepArgs is a bench over the simulator with 4-token outputs and
// nearly constant arrivals, the rest of a sweep's flags appended.
func sweepArgs(url, out string, numPrompts int, extra ...string) []string {
	return append([]string{"bench", "--backend", "sglang", "--base-url", url,
		"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--random-input-len", "32", "--random-output-len", "4", "--random-range-ratio", "1",
		"--num-prompts", strconv.Itoa(numPrompts), "--burstiness", "100", "--sweep-cooldown", "0",
		"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10"}, extra...)
}

// readRecords decodes every JSONL record of path: the runs, without an
// SLO search's answer line (readLines).
func readRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	recs, _ := readLines(t, path)
	return recs
}

// readLines decodes every line of path: the runs' records, and an SLO
// search's answer ({"servingprobe": {"search_answer": ...}}), which must
// come last.
func readLines(t *testing.T, path string) (recs []map[string]any, answer map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: record %d does not parse: %v\n%q", path, len(recs)+1, err, sc.Bytes())
		}
		if answer != nil {
			t.Fatalf("%s: a line after the search's answer: %q", path, sc.Bytes())
		}
		if sp, _ := r["servingprobe"].(map[string]any); len(r) == 1 && sp["search_answer"] != nil {
			answer = sp["search_answer"].(map[string]any)
			continue
		}
		recs = append(recs, r)
	}
	return recs, answer
}

// runCLISim runs the command line that args gives for the simulator
// with cfg at a URL, in a testing/synctest bubble over in-memory
// connections (llmtest.PipeListener): every latency is the simulator's
// and every clock the bench reads is the bubble's, so what it measures
// does not depend on how busy the machine is. The server's /metrics is
// not read (--no-server-metrics): its reads would dial the network.
func runCLISim(t *testing.T, cfg simulator.Config, args func(url string) []string) (code int, stdout, stderr string) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		sim, err := simulator.New(cfg, log.NewNopLogger())
		if err != nil {
			t.Fatal(err)
		}
		l := llmtest.NewPipeListener()
		srv := &http.Server{Handler: sim.Handler()}
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(l) }()
		var out, errb bytes.Buffer
		code = runDial(t.Context(), append(args("http://sim.test"), "--no-server-metrics"), strings.NewReader(""), &out, &errb, l.Dial)
		_ = srv.Close()
		<-done
		stdout, stderr = out.String(), errb.String()
	})
	return code, stdout, stderr
}

// TestBenchSLOSearchFindsCapacity runs the SLO search against a server
// whose capacity can be worked out by hand. The simulator runs at most 8
// requests at once, each holding its slot for TTFT + 3 decode steps =
// 40 + 3×40 = 160 ms (4 output tokens, no jitter), so it completes at most
// 8/0.16 = 50 req/s. Below that a request waits for nothing and its TTFT is
// 40 ms; above it the queue grows for the whole run, and with 120 requests
// the last one waits 120×(1-50/r)/50 s, which passes the 80 ms of slack a
// 120 ms p99 TTFT leaves at r ≈ 51.7 req/s. The search starts from its
// anchors (one request at a time, about 6 req/s, then a concurrency ramp
// that levels off at 50) and answers strictly below the ramp's capacity,
// within its 10% precision: from 50/1.1 = 45.45 up to 50 req/s. It runs
// in a synctest bubble over in-memory connections (runCLISim), so the
// simulator's times are exact however busy the machine. It sends 120
// prompts a point, as --num-prompts asks, but for points whose verdict
// broke early.
func TestBenchSLOSearchFindsCapacity(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 40*time.Millisecond, 40*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 8
	out := filepath.Join(t.TempDir(), "slo.jsonl")
	code, stdout, stderr := runCLISim(t, cfg, func(url string) []string {
		return sweepArgs(url, out, 120, "--slo", "ttft:p99<=120ms", "--strict-json")
	})
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`Highest request rate meeting the SLO: ([\d.]+) req/s`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no answer line in:\n%s", stdout)
	}
	got, _ := strconv.ParseFloat(m[1], 64)
	if got < 45.45 || got >= 50 {
		t.Errorf("SLO search found %v req/s, want 45.45 to 50 (the server's capacity, excluded)\n%s", got, stdout)
	}
	// Its failing end is a point that broke the objective, or the
	// completion capacity, at or above which no rate is sustained.
	if !regexp.MustCompile(`Broke first: ttft:p99<=120ms|below the completion capacity`).MatchString(stdout) {
		t.Errorf("the search does not say what bounds the answer:\n%s", stdout)
	}
	// Cost: the points run against a fixed grid at the same precision.
	cost := regexp.MustCompile(`(\d+) points, (\d+) requests; a fixed grid at the same precision over the values tried would run (\d+) points`).FindStringSubmatch(stdout)
	if cost == nil {
		t.Fatalf("no cost line in:\n%s", stdout)
	}
	points, _ := strconv.Atoi(cost[1])
	requests, _ := strconv.Atoi(cost[2])
	grid, _ := strconv.Atoi(cost[3])
	if requests > points*120 || grid <= points {
		t.Errorf("%d points, %d requests, grid %d: want at most 120 requests a point and a grid larger than the search", points, requests, grid)
	}
	t.Logf("SLO search: %v req/s in %d points (%d requests); a grid would run %d points", got, points, requests, grid)

	recs, answer := readLines(t, out)
	if len(recs) != points {
		t.Fatalf("%d JSONL records, want one per point (%d)", len(recs), points)
	}
	if c, _ := answer["capacity"].(float64); answer == nil || bench.FormatValue(bench.ByRequestRate, c) != m[1]+" req/s" || answer["points"] != float64(points) {
		t.Errorf("the file's answer line %v: want capacity %v over %d points", answer, got, points)
	}
	passed, failed := map[float64]bool{}, map[float64]bool{}
	for i, r := range recs {
		sw, ok := r["sweep"].(map[string]any)
		if !ok {
			t.Fatalf("record %d has no sweep object: %v", i+1, r)
		}
		if sw["mode"] != "slo" || sw["by"] != "request_rate" || sw["index"] != float64(i+1) {
			t.Errorf("record %d sweep = %v", i+1, sw)
		}
		if i == 0 && sw["role"] != "synchronous" {
			t.Errorf("record 1 role %v, want synchronous", sw["role"])
		}
		if sw["role"] != nil {
			if i > 0 && (sw["role"] != "ramp" || r["max_concurrency"] != sw["concurrency"] || r["completed"].(float64) > max(16, 8*sw["concurrency"].(float64))) {
				t.Errorf("record %d: role %v, max_concurrency %v, concurrency %v, completed %v: want a ramp step of at most 8 requests per slot (16 at least)",
					i+1, sw["role"], r["max_concurrency"], sw["concurrency"], r["completed"])
			}
			continue
		}
		// Every point is a full bench_serving record of its own rate;
		// a passing one sent every prompt, a failing one may have
		// stopped once its verdict was certain, and says so.
		if r["request_rate"] != sw["value"] || (sw["pass"] == true && r["completed"] != float64(120)) ||
			(r["completed"] != float64(120) && sw["ended"] == nil) {
			t.Errorf("record %d: request_rate %v, completed %v, sweep value %v", i+1, r["request_rate"], r["completed"], sw["value"])
		}
		if sw["pass"] == true {
			passed[sw["value"].(float64)] = true
		} else {
			failed[sw["value"].(float64)] = true
		}
	}
	// The answer is the highest rate that held every time it ran: it is
	// run twice, and one that failed its second run is not an answer.
	best := 0.0
	for v := range passed {
		if !failed[v] {
			best = max(best, v)
		}
	}
	if bench.FormatValue(bench.ByRequestRate, best) != m[1]+" req/s" {
		t.Errorf("the records' highest passing point is %v, the answer line says %v", best, got)
	}
	c := regexp.MustCompile(`Completion capacity: ([\d.]+) req/s`).FindStringSubmatch(stdout)
	if c == nil {
		t.Fatalf("no completion capacity line in:\n%s", stdout)
	}
	if capacity, _ := strconv.ParseFloat(c[1], 64); !(got < capacity) {
		t.Errorf("the answer %v req/s is not below the completion capacity %v req/s", got, capacity)
	}
}

// TestBenchSweepRates: a sweep over four rates writes four records, each a
// full run at its rate, in the order given.
func TestBenchSweepRates(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, 2*time.Millisecond
	url := startSimulator(t, cfg)
	out := filepath.Join(t.TempDir(), "sweep.jsonl")
	code, stdout, stderr := runCLI(t, sweepArgs(url, out, 20, "--sweep-request-rates", "20,40,80,160")...)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs := readRecords(t, out)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	for i, want := range []float64{20, 40, 80, 160} {
		r := recs[i]
		sw, _ := r["sweep"].(map[string]any)
		if r["request_rate"] != want || sw["value"] != want || sw["mode"] != "rates" || sw["points"] != float64(4) || r["completed"] != float64(20) {
			t.Errorf("record %d: request_rate %v completed %v sweep %v, want rate %v", i+1, r["request_rate"], r["completed"], sw, want)
		}
	}
	if n := len(regexp.MustCompile(`=+ Serving Benchmark Result =+`).FindAllString(stdout, -1)); n != 4 {
		t.Errorf("%d result tables, want 4", n)
	}
	if !regexp.MustCompile(`(?m)^\s+4\s+160\s`).MatchString(stdout) {
		t.Errorf("sweep table lacks the fourth point:\n%s", stdout)
	}
}

func TestBenchSweepFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sweep-request-rates", "1,x"}, `--sweep-request-rates: "x" is not a positive number`},
		{[]string{"--sweep-request-rates", "1", "--slo", "ttft:p99<=1s"}, "exclude each other"},
		{[]string{"--slo", "ttft:p100<=500ms"}, "--slo: invalid objective"},
		{[]string{"--slo", "ttft:p99>=5ms"}, "--slo: invalid objective"},
		{[]string{"--slo", "nosuch:p99<=5ms"}, "unknown metric"},
	} {
		code, _, stderr := runCLI(t, append([]string{"bench", "--base-url", "http://127.0.0.1:1", "--dataset-name", "random"}, tc.args...)...)
		if code == 0 || !regexp.MustCompile(regexp.QuoteMeta(tc.want)).MatchString(stderr) {
			t.Errorf("%v: exit %d, stderr %q, want an error containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestBenchRemoteSweep: `bench --remote` with sweep flags runs the sweep as
// a daemon bench window, prints its points and appends every point's
// record to the output file; the daemon exports the points' gauges.
func TestBenchRemoteSweep(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, 2*time.Millisecond
	simURL := startSimulator(t, cfg)
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(conf, []byte(`
targets:
  - name: sim
    url: `+simURL+`
    backend: sglang
    model: `+cfg.Model+`
    modules: [short]
    interval: 1h
modules:
  short:
    dataset: random
    input_len: 16
    output_len: 4
bench:
  results_dir: `+filepath.Join(dir, "results")+`
`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startServe(t, "serve", "--config.file="+conf, "--web.listen-address="+addr)
	c := client{t: t, base: "http://" + addr}
	c.waitMetric(`servingprobe_bench_running{target="sim"} 0`)

	out := filepath.Join(dir, "remote.jsonl")
	code, stdout, stderr := runCLI(t, "bench", "--remote", "http://"+addr, "--remote.target", "sim", "--remote.poll-interval", "100ms",
		"--num-prompts", "10", "--sweep-request-rates", "20,40", "--sweep-cooldown", "0", "--output-file", out, "--disable-tqdm",
		"--report", filepath.Join(dir, "remote.html"))
	if code != 0 {
		t.Fatalf("bench --remote exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`Sweep \(rates over request_rate\): 2 points`).MatchString(stdout) {
		t.Errorf("stdout:\n%s", stdout)
	}
	recs := readRecords(t, out)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if page, err := os.ReadFile(filepath.Join(dir, "remote.html")); err != nil || !strings.Contains(string(page), `data-chart="ttft-curve"`) {
		t.Errorf("the remote sweep's report: %v", err)
	}
	for i, want := range []float64{20, 40} {
		if sw, _ := recs[i]["sweep"].(map[string]any); recs[i]["request_rate"] != want || sw["value"] != want || recs[i]["completed"] != float64(10) {
			t.Errorf("record %d: request_rate %v sweep %v completed %v", i+1, recs[i]["request_rate"], sw, recs[i]["completed"])
		}
	}
	_, metrics := c.do("GET", "/metrics")
	for _, want := range []string{
		`servingprobe_bench_runs_total{result="completed",target="sim"} 1`,
		`servingprobe_bench_request_rate_requests_per_second{target="sim"} 0`,
		`servingprobe_bench_point_start_timestamp_seconds{target="sim"} `,
	} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(metrics) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestBenchSweepAutoAndConcurrency: an auto sweep measures one request at
// a time and the saturated throughput, then spreads its points between the
// two; a concurrency sweep records each point's concurrency. The auto
// sweep runs in a synctest bubble (runCLISim): the capacity above the
// synchronous rate exists because the simulator serves requests at once,
// which it does in simulated time; over a real socket on a machine busy
// with other work, the simulator's CPU cost outweighed its 5 ms steps, so
// that concurrency bought nothing and the sweep found no range. The
// concurrency sweep asserts nothing about time and runs over a socket: in
// the bubble, where a request can start at the very nanosecond the one
// before it ended, its peak came out one above its limit (bench sums a
// request's start and E2E as float seconds, so that such an end can land
// past the next start).
func TestBenchSweepAutoAndConcurrency(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 10*time.Millisecond, 5*time.Millisecond

	out := filepath.Join(t.TempDir(), "auto.jsonl")
	// --strict-json: the ramp's steps run at an infinite rate (bounded by
	// their concurrency), which the default JSONL writes as
	// bench_serving's bare Infinity.
	code, stdout, stderr := runCLISim(t, cfg, func(url string) []string {
		return sweepArgs(url, out, 16, "--sweep", "auto", "--sweep-points", "2", "--strict-json")
	})
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs := readRecords(t, out)
	if len(recs) < 4 {
		t.Fatalf("%d records, want the synchronous anchor, at least one ramp step and 2 points", len(recs))
	}
	n := len(recs)
	sync, capacity := 0.0, 0.0
	var vals []float64
	for i, r := range recs {
		sw, _ := r["sweep"].(map[string]any)
		if sw["mode"] != "auto" || sw["index"] != float64(i+1) {
			t.Errorf("record %d sweep %v", i+1, sw)
		}
		v := sw["value"].(float64)
		switch {
		case i == 0:
			if sw["role"] != "synchronous" || r["max_concurrency"] != float64(1) {
				t.Errorf("record 1: role %v at max_concurrency %v, want the synchronous anchor", sw["role"], r["max_concurrency"])
			}
			sync, capacity = v, v
		case i < n-2:
			// The ramp: closed-loop steps, never every prompt at once.
			if sw["role"] != "ramp" || r["max_concurrency"] != sw["concurrency"] {
				t.Errorf("record %d: role %v, max_concurrency %v, concurrency %v: want a ramp step", i+1, sw["role"], r["max_concurrency"], sw["concurrency"])
			}
			capacity = max(capacity, v)
		default:
			if sw["role"] != nil || sw["points"] != float64(n) {
				t.Errorf("record %d: role %v, points %v: want a rate point of %d", i+1, sw["role"], sw["points"], n)
			}
			vals = append(vals, v)
		}
	}
	// The anchors' values are their measured request throughputs; the
	// points lie evenly between the synchronous rate and the capacity,
	// each a run at its own rate.
	if !(sync > 0 && capacity > sync) {
		t.Fatalf("anchors: synchronous %v req/s, capacity %v req/s", sync, capacity)
	}
	for i, want := range []float64{sync + (capacity-sync)/3, sync + 2*(capacity-sync)/3} {
		if got := vals[i]; got < want*0.999 || got > want*1.001 || recs[n-2+i]["request_rate"] != got {
			t.Errorf("point %d = %v (request_rate %v), want %v", i+1, got, recs[n-2+i]["request_rate"], want)
		}
	}

	out = filepath.Join(t.TempDir(), "conc.jsonl")
	code, stdout, stderr = runCLI(t, sweepArgs(startSimulator(t, cfg), out, 12, "--sweep-max-concurrency", "1,4", "--strict-json")...)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs = readRecords(t, out)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for i, want := range []float64{1, 4} {
		sw, _ := recs[i]["sweep"].(map[string]any)
		if recs[i]["max_concurrency"] != want || sw["by"] != "max_concurrency" || sw["value"] != want {
			t.Errorf("record %d: max_concurrency %v sweep %v, want %v", i+1, recs[i]["max_concurrency"], sw, want)
		}
		if peak, _ := recs[i]["max_concurrent_requests"].(float64); peak > want {
			t.Errorf("record %d: peak concurrency %v above its max %v", i+1, peak, want)
		}
	}
}

// TestBenchStatsSketch: --stats sketch through the CLI labels the table
// and the record; a bad value names the flag and its choices.
func TestBenchStatsSketch(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	url := startSimulator(t, cfg)
	out := filepath.Join(t.TempDir(), "sk.jsonl")
	code, stdout, stderr := runCLI(t, sweepArgs(url, out, 20, "--stats", "sketch", "--random-output-len", "16", "--strict-json")...)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^Latency statistics:\s+sketch, within 1%`).MatchString(stdout) {
		t.Errorf("table lacks the sketch label:\n%s", stdout)
	}
	recs := readRecords(t, out)
	if sp, _ := recs[0]["servingprobe"].(map[string]any); sp["stats"] != "sketch" || sp["stats_relative_error"] != 0.01 {
		t.Errorf("record's servingprobe block: %v", sp)
	}
	if code, _, stderr := runCLI(t, "bench", "--stats", "approx"); code == 0 || !strings.Contains(stderr, "argument --stats: invalid choice: 'approx' (choose from 'exact', 'sketch')") {
		t.Errorf("--stats approx: exit %d, %s", code, stderr)
	}
}

// sampleSearchArgs is an SLO search over the simulator without
// --num-prompts: its points are sized by samples and time.
func sampleSearchArgs(url, out string, outputLen int, extra ...string) []string {
	return append([]string{"bench", "--backend", "sglang", "--base-url", url,
		"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--random-input-len", "32", "--random-output-len", strconv.Itoa(outputLen), "--random-range-ratio", "1",
		"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10", "--strict-json"}, extra...)
}
