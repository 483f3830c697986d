package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestBenchHelpNotSupported: bench --help says "not supported" of one
// thing only, bench_serving's gserver backend, whose request function
// raises NotImplementedError; every other bench_serving flag and backend
// it lists works.
func TestBenchHelpNotSupported(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "--help")
	if code != 0 {
		t.Fatalf("bench --help exited %d: %s", code, stderr)
	}
	help := regexp.MustCompile(`\s+`).ReplaceAllString(stdout+stderr, " ")
	n := strings.Count(help, "not supported")
	if n != 1 || !strings.Contains(help, "gserver is not supported: its request function raises NotImplementedError") {
		t.Errorf("bench --help says \"not supported\" %d times, want once, of gserver:\n%s", n, help)
	}
}
