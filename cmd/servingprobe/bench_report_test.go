package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/simulator"
)

// TestBenchOneRequestReport: bench --num-prompts 1 --report against the
// simulator writes its record and a report with charts. With one request
// every distribution is one value, and the summary's percentiles of it may
// differ by an ulp from the value the report computes from the recorded
// times; the chart's axis was then an ulp wide and its tick loop never
// ended. report's TestOneRequestReport builds each such offset on purpose,
// so one run here is enough for the wiring.
func TestBenchOneRequestReport(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	url := startSimulator(t, cfg)
	dir := t.TempDir()
	out, html := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.html")
	code, stdout, stderr := runCLI(t, "bench", "--backend", "vllm", "--base-url", url, "--dataset-name", "random",
		"--tokenizer", "../../tokenizer/testdata/qwen3", "--random-input-len", "16", "--random-output-len", "6",
		"--num-prompts", "1", "--warmup-requests", "0", "--output-file", out, "--output-details", "--disable-tqdm",
		"--ready-check-timeout-sec", "10", "--report", html)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ttft-hist", "ttft-cdf", "e2e-cdf", "timeline"} {
		if !bytes.Contains(page, []byte(`data-chart="`+id+`"`)) {
			t.Errorf("the report has no %s chart", id)
		}
	}
	if bytes.Contains(page, []byte("NaN")) {
		t.Errorf("the report draws NaN")
	}
	if n := countRecords(t, out); n != 1 {
		t.Errorf("%d records, want the run's (1)", n)
	}
}

// TestBenchReportFailureKeepsResults: when the report cannot be written
// the run's record is still appended, the error says that only the report
// failed, and the exit status is exitReportFailed, not a failed run's 1.
func TestBenchReportFailureKeepsResults(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	url := startSimulator(t, cfg)
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	code, stdout, stderr := runCLI(t, "bench", "--backend", "vllm", "--base-url", url, "--dataset-name", "random",
		"--tokenizer", "../../tokenizer/testdata/qwen3", "--random-input-len", "16", "--random-output-len", "6",
		"--num-prompts", "2", "--warmup-requests", "0", "--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10",
		"--report", filepath.Join(dir, "no-such-dir", "r.html"))
	if code != exitReportFailed {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitReportFailed, stdout, stderr)
	}
	if !strings.Contains(stderr, "--report:") || !strings.Contains(stderr, "the results were written; only the report failed") {
		t.Errorf("stderr does not say that only the report failed:\n%s", stderr)
	}
	if !regexp.MustCompile(`Successful requests:\s+2`).MatchString(stdout) {
		t.Errorf("the table was not printed:\n%s", stdout)
	}
	if n := countRecords(t, out); n != 1 {
		t.Errorf("%d records, want the run's (1)", n)
	}
}

// countRecords reads a JSONL file back as bench records.
func countRecords(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	n := 0
	for sc.Scan() {
		if _, err := bench.ParseRecord(sc.Bytes()); err != nil {
			t.Fatalf("record %d: %v", n+1, err)
		}
		n++
	}
	return n
}
