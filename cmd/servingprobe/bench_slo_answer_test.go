package main

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench/api"
	"github.com/servingprobe/servingprobe/bench/report"
	"github.com/servingprobe/servingprobe/simulator"
)

// cliAnswer is the answer an SLO search's sweep table printed: its lines
// after the last point's row, up to the closing rule.
func cliAnswer(t *testing.T, stdout string) string {
	t.Helper()
	i := strings.LastIndex(stdout, " SLO search: ")
	if i < 0 {
		t.Fatalf("no SLO search table in:\n%s", stdout)
	}
	var b strings.Builder
	row := regexp.MustCompile(`^\s*\d+ `)
	for _, line := range strings.Split(stdout[i:], "\n")[3:] { // the title and the two heads
		switch {
		case strings.HasPrefix(line, "====="):
			return b.String()
		case b.Len() == 0 && row.MatchString(line):
			continue
		}
		b.WriteString(line + "\n")
	}
	t.Fatalf("the SLO search table has no closing rule:\n%s", stdout[i:])
	return ""
}

// reportAnswer is the answer the report's page states, its paragraphs
// one a line, unescaped.
func reportAnswer(t *testing.T, page string) string {
	t.Helper()
	var b strings.Builder
	for _, m := range regexp.MustCompile(`<p class="answer">(.*?)</p>`).FindAllStringSubmatch(page, -1) {
		b.WriteString(html.UnescapeString(m[1]) + "\n")
	}
	return b.String()
}

// TestSLOSearchAnswerOneText: an SLO search's answer is the same text on
// every surface. The CLI prints it under its sweep table and stores it
// after the points in the JSONL; `report` on that file states it byte for
// byte (never a capacity of its own from the points: the file of an
// unstable search once got "Highest point meeting every objective" in the
// report where the CLI said "No stable answer"); the API's answer of the
// stored answer is the same words. The searches run against the
// simulator in a synctest bubble (runCLISim): one with a stable answer
// (the server of TestBenchSLOSearchFindsCapacity), and one whose verdicts
// hang on a few failures: 1.2% of the requests fail at random against an
// errors<=1% objective, so a point's pass or fail is a draw, and the
// answer fails its second run twice; and one whose errors do not depend
// on load.
func TestSLOSearchAnswerOneText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   func(*simulator.Config)
		extra []string
		want  string
	}{
		{"stable", func(*simulator.Config) {}, nil, "Highest request rate meeting the SLO: "},
		{"unstable", func(c *simulator.Config) {
			c.FaultRates = map[simulator.Fault]float64{simulator.Fault500: 0.012}
		}, nil, "No stable answer: 2 times"},
		// At 1.5% the one-at-a-time anchor fails as often as the points
		// do: the errors do not depend on load, and the answer says so
		// instead of walking down.
		{"errors independent of load", func(c *simulator.Config) {
			c.FaultRates = map[simulator.Fault]float64{simulator.Fault500: 0.015}
		}, nil, "independent of load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simulator.DefaultConfig()
			cfg.TTFT, cfg.ITL = 40*time.Millisecond, 40*time.Millisecond
			cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
			cfg.MaxRunningRequests = 8
			tc.cfg(&cfg)
			dir := t.TempDir()
			out := filepath.Join(dir, "slo.jsonl")
			code, stdout, stderr := runCLISim(t, cfg, func(url string) []string {
				return sweepArgs(url, out, 120, append([]string{"--slo", "ttft:p99<=120ms", "--strict-json"}, tc.extra...)...)
			})
			if code != 0 {
				t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			cli := cliAnswer(t, stdout)
			t.Logf("the CLI's answer:\n%s", cli)
			if !strings.Contains(cli, tc.want) {
				t.Fatalf("the CLI's answer lacks %q:\n%s", tc.want, cli)
			}
			page := filepath.Join(dir, "report.html")
			if code, stdout, stderr := runCLI(t, "report", "-o", page, out); code != 0 {
				t.Fatalf("report exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			if got := reportAnswer(t, string(b)); got != cli {
				t.Errorf("the report states\n%q\nthe CLI said\n%q", got, cli)
			}
			if tc.name == "unstable" && strings.Contains(string(b), `class="knee"`) {
				t.Errorf("the report of a search with no stable answer marks a knee")
			}
			runs, err := report.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			a := runs[len(runs)-1].Search
			if a == nil {
				t.Fatalf("report.Load: the last point carries no answer")
			}
			if got := (&api.SweepOutput{Search: a}).Answer(); got != strings.TrimSpace(cli) {
				t.Errorf("the API's answer\n%q\nthe CLI said\n%q", got, cli)
			}
		})
	}
}

// TestReportWithoutSearchAnswer: a search's file written before the
// answer was stored (no answer line) gets a page that says so, with no
// capacity and no knee of its own.
func TestReportWithoutSearchAnswer(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 40*time.Millisecond, 40*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 8
	dir := t.TempDir()
	out := filepath.Join(dir, "slo.jsonl")
	code, stdout, stderr := runCLISim(t, cfg, func(url string) []string {
		return sweepArgs(url, out, 120, "--slo", "ttft:p99<=120ms", "--strict-json")
	})
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	old := filepath.Join(dir, "old.jsonl")
	if err := os.WriteFile(old, []byte(strings.Join(lines[:len(lines)-1], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if code, stdout, stderr := runCLI(t, "report", "-o", page, old); code != 0 {
		t.Fatalf("report exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(html); !strings.Contains(s, "This file holds no search answer") || strings.Contains(s, "meeting") || strings.Contains(s, `class="knee"`) {
		t.Errorf("the report of a file with no answer line does not say so, or derives an answer")
	}
}
