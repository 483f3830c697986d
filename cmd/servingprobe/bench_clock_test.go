package main

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/simulator"
)

// TestBenchClock runs the same bench with the default clock and with
// --compat user-clock over loopback TCP: the table's Timestamps row and
// the record's servingprobe.clocks say which clock stamped the requests.
// Linux turns timestamping on asynchronously, so a process's first
// connections may be stamped by the user clock; by default most are not.
func TestBenchClock(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	url := startSimulator(t, cfg)
	const n = 20
	for _, tc := range []struct {
		name   string
		extra  []string
		row    *regexp.Regexp
		kernel bool
	}{
		{"default", nil, regexp.MustCompile(`(?m)^Timestamps:\s+kernel \d+`), true},
		{"user-clock", []string{"--compat", "user-clock"}, regexp.MustCompile(`(?m)^Timestamps:\s+user 20\s*$`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "clock.jsonl")
			code, stdout, stderr := runCLI(t, sweepArgs(url, out, n, append([]string{"--random-output-len", "8", "--strict-json"}, tc.extra...)...)...)
			if code != 0 {
				t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !tc.row.MatchString(stdout) {
				t.Errorf("table lacks %s:\n%s", tc.row, stdout)
			}
			sp, _ := readRecords(t, out)[0]["servingprobe"].(map[string]any)
			clocks, _ := sp["clocks"].(map[string]any)
			kernel, _ := clocks["kernel"].(float64)
			user, _ := clocks["user"].(float64)
			mixed, _ := clocks["mixed"].(float64)
			if kernel+user+mixed != n {
				t.Errorf("clocks %v do not count the %d requests", clocks, n)
			}
			if tc.kernel && kernel < n/2 || !tc.kernel && user != n {
				t.Errorf("clocks %v", clocks)
			}
		})
	}
}
