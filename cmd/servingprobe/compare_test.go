package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// simBench runs the bench engine against a fresh simulator whose base
// time to first token is ttft (normal jitter on it and on each decode
// step, drawn from seed), in a synctest bubble over in-memory connections: every
// latency is the simulator's, to the nanosecond of virtual time, whatever
// the load on the machine. The record, with its details, is appended to
// path as bench --output-details writes it.
func simBench(t *testing.T, ttft time.Duration, seed uint64, path string) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		cfg := simulator.DefaultConfig()
		cfg.TTFT, cfg.TTFTJitter = ttft, 40*time.Millisecond
		cfg.ITL, cfg.ITLJitter = 50*time.Millisecond, 10*time.Millisecond
		cfg.Jitter = simulator.Normal
		cfg.PrefillPerToken = 0
		cfg.Seed = seed
		sim, err := simulator.New(cfg, log.NewNopLogger())
		if err != nil {
			t.Fatal(err)
		}
		l := llmtest.NewPipeListener()
		srv := &http.Server{Handler: sim.Handler()}
		go func() { _ = srv.Serve(l) }()

		s := runner.DefaultSpec()
		s.Backend, s.BaseURL, s.Model = "vllm", "http://sim.test", cfg.Model
		s.Dataset, s.Tokenizer = "random", "../../tokenizer/testdata/qwen3"
		s.Options.RandomInputLen, s.Options.RandomOutputLen, s.Options.RandomRangeRatio = 16, 2, 1
		s.NumPrompts, s.MaxConcurrency, s.Seed = 2000, 200, 1
		s.WarmupRequests, s.ReadyCheckTimeout, s.NoServerMetrics = 0, 0, true
		s.Details, s.DetailsNoTexts = true, true
		ctx := t.Context()
		p, err := runner.Prepare(ctx, s, runner.Env{})
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{DialContext: l.Dial}
		p.Client.Transport = tr
		p.Prober.Client = p.Client
		zero := time.Duration(0)
		out, err := p.Run(ctx, runner.Env{PauseAfterWarmup: &zero})
		tr.CloseIdleConnections()
		_ = srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if out.Summary.Completed != 2000 {
			t.Fatalf("%d of 2000 requests completed", out.Summary.Completed)
		}
		if err := out.Summary.AppendJSONL(path, bench.JSONOptions{Details: true}); err != nil {
			t.Fatal(err)
		}
	})
}

// rowVerdict reads each row's significance column from compare's table:
// true where significant, false where "~".
func rowVerdicts(t *testing.T, stdout string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`^((?:Mean|Median|P\d+) (?:TTFT|TPOT|ITL|E2E latency) \(ms\)|(?:Request|Output token|Total token) throughput \([a-z/]+\)) .*  (~ \(|p[<=])`)
	for line := range strings.SplitSeq(stdout, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			out[m[1]] = m[2] != "~ ("
		}
	}
	if len(out) != 23 {
		t.Fatalf("read %d rows of compare's table, want 23:\n%s", len(out), stdout)
	}
	return out
}

// TestCompareSimulator is the comparison and the gate end to end, with
// three runs a side (each a record of the file, as bench --runs 3 writes
// them), the simulator's jitter drawn from another seed each run: two sets
// of the same server compare as ~ on every row, and the gate passes; a set
// whose time to first token is 10% longer is significant on the TTFT's
// mean and median and on no TPOT or ITL row (E2E includes the TTFT, and at
// a fixed concurrency a slower first token lowers the throughputs, so
// those may move with it), and the gate fails naming the figure.
// One run a side marks nothing, and says why.
func TestCompareSimulator(t *testing.T) {
	dir := t.TempDir()
	base, same, slow, one := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "same.jsonl"), filepath.Join(dir, "slow.jsonl"), filepath.Join(dir, "one.jsonl")
	for i := range uint64(3) {
		simBench(t, 200*time.Millisecond, 1+i, base)
		simBench(t, 200*time.Millisecond, 4+i, same)
		simBench(t, 220*time.Millisecond, 7+i, slow)
	}
	simBench(t, 220*time.Millisecond, 10, one)
	gate := "ttft:median>+5%,output_throughput<-10%"

	code, stdout, stderr := runCLI(t, "compare", base, same, "--fail-on", gate)
	t.Logf("same server:\n%s", stdout)
	if code != 0 {
		t.Errorf("same server: compare exited %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	for row, sig := range rowVerdicts(t, stdout) {
		if sig {
			t.Errorf("same server: %s significant, want ~\n%s", row, stdout)
		}
	}
	if !strings.Contains(stdout, "Regression gate, 3 runs against 3") || !strings.Contains(stdout, "runs 3 v 3, whose spread lets the test detect a change of") {
		t.Errorf("the gate does not say the runs a side and what they can detect:\n%s", stdout)
	}

	code, stdout, stderr = runCLI(t, "compare", base, slow, "--fail-on", gate)
	t.Logf("TTFT +10%%:\n%s", stdout)
	if code != exitRegression {
		t.Errorf("compare with TTFT +10%% exited %d, want %d\n%s\n%s", code, exitRegression, stdout, stderr)
	}
	for row, sig := range rowVerdicts(t, stdout) {
		switch {
		case (row == "Mean TTFT (ms)" || row == "Median TTFT (ms)") && !sig:
			t.Errorf("TTFT +10%%: %s ~, want significant\n%s", row, stdout)
		case (strings.Contains(row, "TPOT") || strings.Contains(row, "ITL")) && sig:
			t.Errorf("TTFT +10%%: %s significant, want ~\n%s", row, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^FAIL ttft:median>\+5%: Median TTFT \(ms\) .*significant: p`).MatchString(stdout) {
		t.Errorf("the gate does not say why ttft:median failed:\n%s", stdout)
	}
	if !strings.Contains(stderr, "regression: ttft:median>+5%") {
		t.Errorf("stderr does not name the failed figure: %q", stderr)
	}
	if regexp.MustCompile(`(?m)^FAIL output_throughput`).MatchString(stdout) {
		t.Errorf("output_throughput failed the gate:\n%s", stdout)
	}

	// One run against three: every change shown, nothing significant, the
	// gate on the bound alone, saying so.
	code, stdout, _ = runCLI(t, "compare", one, base, "--fail-on", "ttft:median>+50%")
	if code != 0 || !strings.Contains(stdout, "one run cannot separate a change from the drift") ||
		!strings.Contains(stdout, "judged against the bound alone") || strings.Contains(stdout, " t\n") {
		t.Errorf("one run against three: exit %d\n%s", code, stdout)
	}
	if n := strings.Count(stdout, "? (one run)"); n != 23 {
		t.Errorf("one run against three: %d rows read ? (one run), want 23\n%s", n, stdout)
	}
}

// TestCompareGateErrors checks the gate's refusals: a bad --fail-on and a
// bound in the wrong direction exit 2 with the reason.
func TestCompareGateErrors(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.jsonl")
	// A bench_serving record: no intervals, no details.
	rec := `{"backend": "vllm", "dataset_name": "random", "request_rate": 1.0, "duration": 1.0, "completed": 1, "output_throughput": 10.0, "p99_ttft_ms": 5.0}` + "\n"
	if err := os.WriteFile(old, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad bound", []string{"compare", old, old, "--fail-on", "ttft:p99>5"}, "--fail-on: \"ttft:p99>5\": the bound must be a percentage"},
		{"wrong direction", []string{"compare", old, old, "--fail-on", "output_throughput>-5%"}, "write output_throughput<-5%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != exitGateError || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q\n%s", code, stderr, exitGateError, tc.want, stdout)
			}
		})
	}
}

// TestBenchBaselineGate checks bench --baseline --fail-on through the CLI
// against loopback simulators: a run 100 times slower to its first token
// than its baseline fails ttft:median (an effect no machine's noise can
// make or hide), a run of the baseline's server passes a loose bound, and
// a bad gate stops bench before it sends anything.
func TestBenchBaselineGate(t *testing.T) {
	fast, slow := simulator.DefaultConfig(), simulator.DefaultConfig()
	fast.TTFT, fast.TTFTJitter, fast.ITL, fast.ITLJitter = time.Millisecond, 0, time.Millisecond, 0
	slow.TTFT, slow.TTFTJitter, slow.ITL, slow.ITLJitter = 100*time.Millisecond, 0, time.Millisecond, 0
	fastURL, slowURL := startSimulator(t, fast), startSimulator(t, slow)
	dir := t.TempDir()
	base, cand := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "cand.jsonl")
	bench := func(url, out string, extra ...string) (int, string, string) {
		args := append([]string{"bench", "--backend", "vllm", "--base-url", url, "--dataset-name", "random",
			"--tokenizer", "../../tokenizer/testdata/qwen3", "--random-input-len", "16", "--random-output-len", "4",
			"--random-range-ratio", "1", "--num-prompts", "60", "--max-concurrency", "8", "--output-file", out,
			"--disable-tqdm", "--output-details"}, extra...)
		return runCLI(t, args...)
	}
	if code, stdout, stderr := bench(fastURL, base); code != 0 {
		t.Fatalf("baseline bench exited %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := bench(slowURL, cand, "--baseline", base, "--fail-on", "ttft:median>+50%")
	if code != exitRegression || !strings.Contains(stderr, "regression: ttft:median>+50%") {
		t.Errorf("a run 100x slower to its first token: exit %d, stderr %q; want %d naming ttft:median", code, stderr, exitRegression)
	}
	if !regexp.MustCompile(`(?m)^FAIL ttft:median>\+50%: Median TTFT \(ms\) .* beyond >\+50%; runs 1 v 1: judged against the bound alone`).MatchString(stdout) {
		t.Errorf("bench --fail-on does not say why:\n%s", stdout)
	}
	if code, stdout, stderr := bench(fastURL, cand, "--baseline", base, "--fail-on", "ttft:median>+100000%"); code != 0 {
		t.Errorf("a run of the baseline's server with a loose bound exited %d\n%s\n%s", code, stdout, stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"fail-on alone", []string{"--fail-on", "ttft:p99>+5%"}, "--fail-on needs --baseline"},
		{"ab with baseline", []string{"--baseline", base, "--ab-base-url", fastURL, "--ab-output-file", filepath.Join(dir, "b.jsonl")}, "--ab-base-url compares its two servers' runs"},
		{"bad bound", []string{"--baseline", base, "--fail-on", "ttft:p99>5"}, "the bound must be a percentage"},
		{"missing baseline", []string{"--baseline", filepath.Join(dir, "none.jsonl")}, "--baseline:"},
		{"remote", []string{"--remote", "http://127.0.0.1:1", "--baseline", base}, "--baseline and --fail-on gate a local run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".jsonl")
			code, _, stderr := bench(fastURL, out, tc.args...)
			if code != exitGateError || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitGateError, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("bench wrote %s despite a bad gate (stat: %v)", out, err)
			}
		})
	}
}

// TestBenchRuns checks bench --runs and the interleaved A/B set through
// the CLI against loopback simulators: --runs 3 appends three records and
// gates them against a baseline of three; an A/B set alternates the
// servers (A B B A A B), writes each side's runs to its file, and its
// gate fails on a server five times slower to its first token; a bad set
// is refused before anything is sent.
func TestBenchRuns(t *testing.T) {
	fast, slow := simulator.DefaultConfig(), simulator.DefaultConfig()
	fast.TTFT, fast.TTFTJitter, fast.ITL, fast.ITLJitter = 20*time.Millisecond, 0, time.Millisecond, 0
	slow.TTFT, slow.TTFTJitter, slow.ITL, slow.ITLJitter = 100*time.Millisecond, 0, time.Millisecond, 0
	fastURL, slowURL := startSimulator(t, fast), startSimulator(t, slow)
	dir := t.TempDir()
	bench := func(url string, extra ...string) (int, string, string) {
		args := append([]string{"bench", "--backend", "vllm", "--base-url", url, "--dataset-name", "random",
			"--tokenizer", "../../tokenizer/testdata/qwen3", "--random-input-len", "16", "--random-output-len", "4",
			"--random-range-ratio", "1", "--num-prompts", "40", "--max-concurrency", "8",
			"--disable-tqdm", "--runs-pause-sec", "0"}, extra...)
		return runCLI(t, args...)
	}
	records := func(path string) int {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	base, cand := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "cand.jsonl")
	if code, stdout, stderr := bench(fastURL, "--runs", "3", "--output-file", base); code != 0 || records(base) != 3 ||
		!strings.Contains(stdout, "=== Run 3 of 3: ") || !strings.Contains(stdout, "Across 3 runs of ") {
		t.Fatalf("bench --runs 3 exited %d with %d records\n%s\n%s", code, records(base), stdout, stderr)
	}
	code, stdout, stderr := bench(fastURL, "--runs", "3", "--output-file", cand, "--baseline", base, "--fail-on", "ttft:median>+50%")
	if code != 0 || !strings.Contains(stdout, "Regression gate, 3 runs against 3") || strings.Count(stdout, "Regression gate") != 1 {
		t.Errorf("--runs 3 against a baseline of 3 of the same server: exit %d\n%s\n%s", code, stdout, stderr)
	}

	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	code, stdout, stderr = bench(fastURL, "--runs", "3", "--output-file", a, "--ab-base-url", slowURL, "--ab-output-file", b,
		"--fail-on", "ttft:median>+50%")
	if code != exitRegression || records(a) != 3 || records(b) != 3 {
		t.Errorf("A/B against a server 5x slower: exit %d, records %d and %d; want %d, 3 and 3\n%s\n%s", code, records(a), records(b), exitRegression, stdout, stderr)
	}
	var order []string
	for _, m := range regexp.MustCompile(`(?m)^=== Run \d of 6: (\S+) ===$`).FindAllStringSubmatch(stdout, -1) {
		order = append(order, map[bool]string{true: "A", false: "B"}[strings.TrimSuffix(m[1], "/") == strings.TrimSuffix(fastURL, "/")])
	}
	if got := strings.Join(order, " "); got != "A B B A A B" {
		t.Errorf("A/B order %q, want A B B A A B", got)
	}
	if !strings.Contains(stdout, "Interleaved A/B, 3 runs a side") || !regexp.MustCompile(`(?m)^FAIL ttft:median>\+50%: .*significant`).MatchString(stdout) {
		t.Errorf("A/B does not compare and gate its sides:\n%s", stdout)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"zero runs", []string{"--runs", "0"}, "--runs: must be at least 1, got 0"},
		{"ab without a file", []string{"--ab-base-url", slowURL}, "--ab-base-url needs --ab-output-file"},
		{"file without ab", []string{"--ab-output-file", b}, "--ab-output-file needs --ab-base-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".jsonl")
			code, _, stderr := bench(fastURL, append(tc.args, "--output-file", out)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error with %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("bench wrote %s despite a bad set (stat: %v)", out, err)
			}
		})
	}
}

// TestCompareReadsVLLMResultFiles: compare reads the result objects
// `vllm bench serve --save-result` writes, so a vLLM run sits beside ours.
// The two files in testdata are written by hand in the shape
// vllm/benchmarks/serve.py gives them (main_async's result_json, then
// benchmark()'s result dict and process_one_metric's mean_/median_/std_/
// pXX_ keys, without --save-detailed's arrays; request_rate "inf" as vLLM
// writes an unlimited rate), the second with twice the first's TTFT.
func TestCompareReadsVLLMResultFiles(t *testing.T) {
	code, stdout, stderr := runCLI(t, "compare", "testdata/vllm-bench-serve-a.json", "testdata/vllm-bench-serve-b.json")
	if code != 0 {
		t.Fatalf("compare exited %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Median TTFT \(ms\)\s+214\.00\s+428\.00\s`),
		regexp.MustCompile(`(?m)^P99 TTFT \(ms\)\s+402\.70\s+805\.40\s`),
		regexp.MustCompile(`(?m)^Output token throughput \(tok/s\)\s+618\.80\s+560\.10\s`),
	} {
		if !want.MatchString(stdout) {
			t.Errorf("compare of two vLLM result files lacks %s:\n%s", want, stdout)
		}
	}
}

// TestBenchRemoteRuns: `bench --remote --runs 3` runs the set as one
// daemon bench window (its body's runs), prints each run's table and
// appends each run's record to the output file, as a local set does, so
// that compare reads it as three runs; the window's report draws them as
// one set.
func TestBenchRemoteRuns(t *testing.T) {
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
		"--num-prompts", "6", "--runs", "3", "--runs-pause-sec", "0", "--output-file", out, "--disable-tqdm")
	if code != 0 {
		t.Fatalf("bench --remote --runs 3 exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if n := strings.Count(stdout, "Serving Benchmark Result"); n != 3 || !strings.Contains(stdout, "=== Run 3 of 3: ") {
		t.Errorf("%d tables printed, want 3 with their run headers:\n%s", n, stdout)
	}
	recs := readRecords(t, out)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, r := range recs {
		if r["completed"] != float64(6) {
			t.Errorf("record %d: completed %v, want 6", i+1, r["completed"])
		}
	}
	code, stdout, stderr = runCLI(t, "compare", out, out)
	if code != 0 || !strings.Contains(stdout, "(3 runs); new: ") {
		t.Errorf("compare of the window's runs: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
