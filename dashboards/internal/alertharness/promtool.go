package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Firing is one alert series of a run and a number: the time it first fired
// (scenario runs) or how many times it began to fire (healthy runs).
type Firing struct {
	Labels map[string]string
	Value  float64
}

// promDuration spells d as a Prometheus duration in whole seconds.
func promDuration(d time.Duration) string { return fmt.Sprintf("%ds", int64(d/time.Second)) }

// query is the PromQL a run ends with. Rules write the ALERTS series of a
// firing alert at every evaluation and a stale marker when it resolves, so
// a rising edge is a firing sample with none one evaluation earlier.
func (r Run) query(eval time.Duration, from time.Duration) string {
	window := promDuration(r.Span - from)
	step := promDuration(eval)
	if r.Scenario != nil {
		return fmt.Sprintf(`min_over_time(timestamp(ALERTS{alertstate="firing"})[%s:%s])`, window, step)
	}
	return fmt.Sprintf(`count_over_time((ALERTS{alertstate="firing"} unless ALERTS{alertstate="firing"} offset %s)[%s:%s])`, step, window, step)
}

// evaluate writes r as a promtool unit test against the rule files, runs
// promtool test rules, and returns the alerts the query found. The test
// expects nothing, so promtool prints every sample it got.
func evaluate(ctx context.Context, promtool, dir string, ruleFiles []string, m Model, r Run, eval, from time.Duration) ([]Firing, error) {
	f, err := os.CreateTemp(dir, "run-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, "rule_files:\n")
	for _, rf := range ruleFiles {
		fmt.Fprintf(w, "  - %q\n", rf)
	}
	fmt.Fprintf(w, "evaluation_interval: %s\ntests:\n- interval: %s\n  input_series:\n", promDuration(eval), promDuration(r.Scrape))
	r.writeSeries(m, w)
	fmt.Fprintf(w, "  promql_expr_test:\n  - expr: '%s'\n    eval_time: %s\n    exp_samples: []\n", r.query(eval, from), promDuration(r.Span))
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, promtool, "test", "rules", filepath.Base(f.Name()))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("promtool: %w", err)
	}
	return parseGot(string(out), err == nil)
}

var (
	sampleRE = regexp.MustCompile(`\{([^}]*)\} ([-+0-9.eE]+|NaN)`)
	labelRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// parseGot reads the samples of the one failing expression test from
// promtool's report. passed means promtool found nothing, i.e. no alert.
func parseGot(out string, passed bool) ([]Firing, error) {
	if passed {
		return nil, nil
	}
	i := strings.Index(out, "got: ")
	if i < 0 || strings.Contains(out, "error in") || strings.Contains(out, "error loading") {
		return nil, fmt.Errorf("promtool failed:\n%s", truncate(out, 4000))
	}
	line := out[i+len("got: "):]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	var fs []Firing
	for _, m := range sampleRE.FindAllStringSubmatch(line, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("promtool value %q: %w", m[2], err)
		}
		l := map[string]string{}
		for _, lm := range labelRE.FindAllStringSubmatch(m[1], -1) {
			l[lm[1]] = lm[2]
		}
		fs = append(fs, Firing{Labels: l, Value: v})
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("promtool reported no samples:\n%s", truncate(out, 4000))
	}
	return fs, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
