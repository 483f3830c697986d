package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/bench"
)

// validRuns writes one record a run, each with the share of valid answers
// of pcts (of 1000 judged answers) and the same latencies, as bench --runs
// writes a set to its file.
func validRuns(t *testing.T, path string, pcts ...float64) {
	t.Helper()
	var b []byte
	for _, p := range pcts {
		s := bench.Summary{Backend: "vllm-chat", Completed: 1000, Requests: 1000, Duration: 10, RequestThroughput: 100,
			TTFT: bench.Stats{Mean: 50, Median: 50, P90: 60, P95: 65, P99: 70}, Answers: bench.Answers{Judged: 1000, Valid: int(p * 10)}}
		rec, err := s.Record(bench.JSONOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, rec...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCompareValid: compare reads each run's share of valid answers from
// its record, shows it as a row, and the gate valid<-N% fails a set whose
// validity dropped beyond the spread between runs, while the latencies,
// unchanged, pass.
func TestCompareValid(t *testing.T) {
	dir := t.TempDir()
	base, same, worse := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "same.jsonl"), filepath.Join(dir, "worse.jsonl")
	validRuns(t, base, 99.5, 99.6, 99.4)
	validRuns(t, same, 99.6, 99.4, 99.5)
	validRuns(t, worse, 95, 96, 94)
	gate := "valid<-1%,ttft:median>+5%"
	code, stdout, stderr := runCLI(t, "compare", base, same, "--fail-on", gate)
	if code != 0 || !regexp.MustCompile(`(?m)^Valid answers \(%\) +99\.50 +99\.50 `).MatchString(stdout) {
		t.Errorf("same validity: exit %d, want 0 and the row\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "compare", base, worse, "--fail-on", gate)
	if code != exitRegression || !regexp.MustCompile(`(?m)^FAIL valid<-1%: Valid answers \(%\) 99\.50 -> 95\.00 \(-4\.5%\).*significant`).MatchString(stdout) ||
		!strings.Contains(stderr, "regression: valid<-1%") {
		t.Errorf("validity -4.5%%: exit %d, want %d and the gate naming valid\n%s\n%s", code, exitRegression, stdout, stderr)
	}
}
