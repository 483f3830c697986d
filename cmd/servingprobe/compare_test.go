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
	"github.com/servingprobe/servingprobe/benchrun"
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

		s := benchrun.DefaultSpec()
		s.Backend, s.BaseURL, s.Model = "vllm", "http://sim.test", cfg.Model
		s.Dataset, s.Tokenizer = "random", "../../tokenizer/testdata/qwen3"
		s.Options.RandomInputLen, s.Options.RandomOutputLen, s.Options.RandomRangeRatio = 16, 2, 1
		s.NumPrompts, s.MaxConcurrency, s.Seed = 2000, 200, 1
		s.WarmupRequests, s.ReadyCheckTimeout, s.NoServerMetrics = 0, 0, true
		s.Details, s.DetailsNoTexts = true, true
		ctx := t.Context()
		p, err := benchrun.Prepare(ctx, s, benchrun.Env{})
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{DialContext: l.Dial}
		p.Client.Transport = tr
		p.Prober.Client = p.Client
		zero := time.Duration(0)
		out, err := p.Run(ctx, benchrun.Env{PauseAfterWarmup: &zero})
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

// TestCompareSimulator is the comparison and the gate end to end: two
// runs of the same seeded workload against the simulator compare as ~ on
// every row, and the gate passes; a simulator whose time to first token is
// 10% longer is significant on every TTFT row and on no TPOT, ITL or
// throughput row (E2E includes the TTFT, so it may move with it), and the
// gate fails naming the figure.
func TestCompareSimulator(t *testing.T) {
	dir := t.TempDir()
	base, same, other, slow := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "same.jsonl"), filepath.Join(dir, "other.jsonl"), filepath.Join(dir, "slow.jsonl")
	simBench(t, 200*time.Millisecond, 1, base)
	simBench(t, 200*time.Millisecond, 1, same)
	simBench(t, 200*time.Millisecond, 2, other) // other jitter: the noise between two runs
	simBench(t, 220*time.Millisecond, 1, slow)
	gate := "ttft:p99>+5%,output_throughput<-3%"

	for _, c := range []struct{ name, file string }{{"same workload", same}, {"same server, other jitter", other}} {
		code, stdout, stderr := runCLI(t, "compare", base, c.file, "--fail-on", gate)
		t.Logf("%s:\n%s", c.name, stdout)
		if code != 0 {
			t.Errorf("%s: compare exited %d, want 0\n%s\n%s", c.name, code, stdout, stderr)
		}
		for row, sig := range rowVerdicts(t, stdout) {
			if sig {
				t.Errorf("%s: %s significant, want ~\n%s", c.name, row, stdout)
			}
		}
	}

	code, stdout, stderr := runCLI(t, "compare", base, slow, "--fail-on", gate)
	t.Logf("TTFT +10%%:\n%s", stdout)
	if code != exitRegression {
		t.Errorf("compare with TTFT +10%% exited %d, want %d\n%s\n%s", code, exitRegression, stdout, stderr)
	}
	for row, sig := range rowVerdicts(t, stdout) {
		switch {
		case strings.Contains(row, "TTFT") && !sig:
			t.Errorf("TTFT +10%%: %s ~, want significant\n%s", row, stdout)
		case !strings.Contains(row, "TTFT") && !strings.Contains(row, "E2E") && sig:
			t.Errorf("TTFT +10%%: %s significant, want ~\n%s", row, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^FAIL ttft:p99>\+5%: P99 TTFT \(ms\) .*significant`).MatchString(stdout) {
		t.Errorf("the gate does not say why ttft:p99 failed:\n%s", stdout)
	}
	if !strings.Contains(stderr, "regression: ttft:p99>+5%") {
		t.Errorf("stderr does not name the failed figure: %q", stderr)
	}
	if regexp.MustCompile(`(?m)^FAIL output_throughput`).MatchString(stdout) {
		t.Errorf("output_throughput failed the gate:\n%s", stdout)
	}
}

// TestCompareGateErrors checks the gate's refusals: a bad --fail-on and a
// bound on a record that cannot be tested exit 2 with the reason.
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
		{"untestable", []string{"compare", old, old, "--fail-on", "ttft:p99>+5%"}, "gate not checked: ttft:p99: cannot be tested: no intervals or details in the record"},
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
	if !regexp.MustCompile(`(?m)^FAIL ttft:median>\+50%: Median TTFT \(ms\) .* significant: p<0.001 U$`).MatchString(stdout) {
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
