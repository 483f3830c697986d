package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/simulator"
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

// readRecords decodes every JSONL record of path.
func readRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: record %d does not parse: %v\n%q", path, len(recs)+1, err, sc.Bytes())
		}
		recs = append(recs, r)
	}
	return recs
}

// TestBenchSLOSearchFindsCapacity runs the SLO search against a server
// whose capacity can be worked out by hand. The simulator runs at most 8
// requests at once, each holding its slot for TTFT + 3 decode steps =
// 40 + 3×40 = 160 ms (4 output tokens, no jitter), so it completes at most
// 8/0.16 = 50 req/s. Below that a request waits for nothing and its TTFT is
// 40 ms; above it the queue grows for the whole run, and with 120 requests
// the last one waits 120×(1-50/r)/50 s, which passes the 80 ms of slack a
// 120 ms p99 TTFT leaves at r ≈ 51.7 req/s. No load on the machine can
// make the server faster, so the answer must be at most 55 req/s; a loaded
// machine (the race detector, other tests) makes every point slower, so
// below 50 the bound is loose (at least 30 req/s, far above the first
// anchor's 6: a search that stopped early fails it), and the answer is
// checked against the points' own verdicts instead. The search starts from its anchors (one request at a time,
// about 6 req/s, then a concurrency ramp that levels off at about 50) and
// sends 120 prompts a point, as --num-prompts asks, but for points whose
// verdict broke early; the answer is strictly below the ramp's capacity.
func TestBenchSLOSearchFindsCapacity(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 40*time.Millisecond, 40*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 8
	url := startSimulator(t, cfg)
	out := filepath.Join(t.TempDir(), "slo.jsonl")
	code, stdout, stderr := runCLI(t, sweepArgs(url, out, 120, "--slo", "ttft:p99<=120ms", "--strict-json")...)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`Highest request rate meeting the SLO: ([\d.]+) req/s`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no answer line in:\n%s", stdout)
	}
	got, _ := strconv.ParseFloat(m[1], 64)
	if got < 30 || got > 55 {
		t.Errorf("SLO search found %v req/s, want at most 55 (the server's capacity) and at least 30\n%s", got, stdout)
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

	recs := readRecords(t, out)
	if len(recs) != points {
		t.Fatalf("%d JSONL records, want one per point (%d)", len(recs), points)
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
	if benchrun.FormatValue(bench.ByRequestRate, best) != m[1]+" req/s" {
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
// two; a concurrency sweep records each point's concurrency.
func TestBenchSweepAutoAndConcurrency(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 10*time.Millisecond, 5*time.Millisecond
	url := startSimulator(t, cfg)

	out := filepath.Join(t.TempDir(), "auto.jsonl")
	// --strict-json: the ramp's steps run at an infinite rate (bounded by
	// their concurrency), which the default JSONL writes as
	// bench_serving's bare Infinity.
	code, stdout, stderr := runCLI(t, sweepArgs(url, out, 16, "--sweep", "auto", "--sweep-points", "2", "--strict-json")...)
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
	code, stdout, stderr = runCLI(t, sweepArgs(url, out, 12, "--sweep-max-concurrency", "1,4", "--strict-json")...)
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

// TestBenchSLOSearchBySamples is the search a user runs without
// --num-prompts, against 8 slots, TTFT 20 ms, ITL 2 ms and 32 output
// tokens: a request holds its slot for 20 + 31×2 = 82 ms, so the server
// completes at most 8/0.082 = 97.6 req/s. Above that the queue grows for
// the whole point and the p99 TTFT breaks 200 ms within seconds. Below it
// (Poisson arrivals, the default), the wait for a slot is shorter than in
// an M/M/8 queue with the same mean service time, where P(wait > t) is at
// most exp(-(97.6-λ)t): for the 180 ms of slack left by the 20 ms TTFT,
// that is under 1% for λ ≤ 97.6 - ln(100)/0.18 = 72 req/s. So the SLO's
// limit is between 72 and 97.6 req/s, and the answer, the highest passing
// point of a bracket within 10%, is at least 72/1.1 = 65; the band below
// leaves room for a busy machine's slower service and for the noise of a
// p99 from a few hundred samples. Its cost is bounded on what the records
// say: the measured time of every point, plus their pauses, within 150 s.
func TestBenchSLOSearchBySamples(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 8
	url := startSimulator(t, cfg)
	out := filepath.Join(t.TempDir(), "slo.jsonl")
	began := time.Now()
	code, stdout, stderr := runCLI(t, sampleSearchArgs(url, out, 32, "--slo", "ttft:p99<=200ms")...)
	wall := time.Since(began)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`Highest request rate meeting the SLO: ([\d.]+) req/s`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no answer line in:\n%s", stdout)
	}
	got, _ := strconv.ParseFloat(m[1], 64)
	if got < 55 || got > 105 {
		t.Errorf("SLO search found %v req/s, want 65 to 97.6 (55 to 105 with room for noise)\n%s", got, stdout)
	}
	recs := readRecords(t, out)
	var measured time.Duration
	for i, r := range recs {
		sw, _ := r["sweep"].(map[string]any)
		d, _ := r["duration"].(float64)
		measured += time.Duration(d * float64(time.Second))
		if i >= 2 && (sw["samples"] == nil || sw["samples"].(float64) <= 0) {
			t.Errorf("record %d does not say how many samples decided it: %v", i+1, sw)
		}
	}
	// Each point also pauses 1 s after its warmup and 2 s before it.
	cost := measured + time.Duration(len(recs))*3*time.Second
	if cost > 150*time.Second {
		t.Errorf("the search measured for %s over %d points (%s with pauses), want within 150 s\n%s", measured, len(recs), cost, stdout)
	}
	if !regexp.MustCompile(`\[\d+ samples`).MatchString(stdout) {
		t.Errorf("the sweep table does not say how many samples decided each point:\n%s", stdout)
	}
	t.Logf("SLO search: %v req/s in %d points, %s measured, %s wall", got, len(recs), measured.Round(time.Second), wall.Round(time.Second))

	// The answer is a rate the server sustains: strictly below the
	// completion capacity the ramp measured (the search once answered
	// the saturated throughput itself, 152.7 req/s, after a point of 520
	// requests whose queue had no time to grow), and a run four times as
	// long as a point's minimum holds the SLO at it.
	saturation, _, _ := answerNumbers(t, stdout)
	if !(got < saturation) {
		t.Errorf("the answer %v req/s is not below the completion capacity %v req/s", got, saturation)
	}
	long := filepath.Join(t.TempDir(), "long.jsonl")
	code, stdout, stderr = runCLI(t, sampleSearchArgs(url, long, 32, "--request-rate", m[1], "--num-prompts", "2000",
		"--percentile-metrics", "ttft", "--metric-percentiles", "99")...)
	if code != 0 {
		t.Fatalf("bench at the answer exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rec := readRecords(t, long)[0]
	if p99, _ := rec["p99_ttft_ms"].(float64); !(p99 > 0 && p99 <= 200) || rec["completed"] != float64(2000) {
		t.Errorf("2000 requests at the answer, %v req/s: p99 TTFT %v ms, %v completed; want within 200 ms", got, rec["p99_ttft_ms"], rec["completed"])
	}
}

// TestBenchSLOSearchSlowServerBudget: a server that completes about one
// request every 1.85 s (one slot, 300 ms TTFT, 31 × 50 ms decode steps:
// 0.54 req/s) cannot be searched to 10% in a 20 s budget; the search ends
// within it and states only the bracket its points measured.
func TestBenchSLOSearchSlowServerBudget(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 300*time.Millisecond, 50*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 1
	url := startSimulator(t, cfg)
	out := filepath.Join(t.TempDir(), "slow.jsonl")
	began := time.Now()
	code, stdout, stderr := runCLI(t, sampleSearchArgs(url, out, 32, "--slo", "ttft:p99<=1s", "--slo-budget", "20s", "--sweep-cooldown", "0")...)
	wall := time.Since(began)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// The budget is held on what the points measured (below), not on the
	// wall clock, which the tokenizer load, the ready check and a shared
	// machine also spend.
	recs := readRecords(t, out)
	var measured time.Duration
	held, failed := 0.0, 0.0
	for _, r := range recs {
		d, _ := r["duration"].(float64)
		measured += time.Duration(d * float64(time.Second))
		sw, _ := r["sweep"].(map[string]any)
		if sw["role"] != nil {
			continue
		}
		v := sw["value"].(float64)
		if sw["pass"] == true {
			held = max(held, v)
		} else if failed == 0 || v < failed {
			failed = v
		}
	}
	if measured > 20*time.Second {
		t.Errorf("the points measured for %s, over the 20 s budget", measured)
	}
	if strings.Contains(stdout, "Highest request rate meeting the SLO") {
		// An answer within budget is fine too; it must be a point's.
		return
	}
	if !strings.Contains(stdout, "budget (--slo-budget, slo_budget in a bench window: 20s) ran out") {
		t.Fatalf("no budget line in:\n%s", stdout)
	}
	if held > 0 && !strings.Contains(stdout, "The SLO held at "+benchrun.FormatValue(bench.ByRequestRate, held)) {
		t.Errorf("the answer does not state the highest point that held (%v):\n%s", held, stdout)
	}
	if held == 0 && !strings.Contains(stdout, "No point measured held the SLO") {
		t.Errorf("the answer claims a rate no point held:\n%s", stdout)
	}
	if failed == 0 && !strings.Contains(stdout, "no point measured failed it") {
		t.Errorf("the answer claims a rate no point failed:\n%s", stdout)
	}
	t.Logf("slow server: %d records, %s measured, %s wall\n%s", len(recs), measured.Round(time.Second), wall.Round(time.Second), stdout[strings.LastIndex(stdout, "budget"):])
}
