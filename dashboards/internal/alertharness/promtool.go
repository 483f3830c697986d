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

// queries are the PromQL a run ends with, each with its evaluation time.
// Rules write the ALERTS series of a firing alert at every evaluation and a
// stale marker when it resolves, so a rising edge is a firing sample with
// none one evaluation earlier. A healthy run is counted a day at a time:
// promtool caps a query at 10000 samples, and a subquery over weeks at one
// step per evaluation passes that.
func (r Run) queries(eval time.Duration, from time.Duration) (exprs []string, at []time.Duration) {
	step := promDuration(eval)
	if r.Scenario != nil {
		return []string{fmt.Sprintf(`min_over_time(timestamp(ALERTS{alertstate="firing"})[%s:%s])`, promDuration(r.Span-from), step)},
			[]time.Duration{r.Span}
	}
	for t := from; t < r.Span; t += 24 * time.Hour {
		end := min(t+24*time.Hour, r.Span)
		exprs = append(exprs, fmt.Sprintf(`count_over_time((ALERTS{alertstate="firing"} unless ALERTS{alertstate="firing"} offset %s)[%s:%s])`,
			step, promDuration(end-t), step))
		at = append(at, end)
	}
	return exprs, at
}

// evaluate writes r as a promtool unit test against the rule files, runs
// promtool test rules, and returns the alerts the query found. The test
// expects nothing, so promtool prints every sample it got.
func evaluate(ctx context.Context, promtool, dir string, ruleFiles, groupOrder []string, m Model, r Run, eval, from time.Duration) ([]Firing, error) {
	f, err := os.CreateTemp(dir, "run-*.yaml")
	if err != nil {
		return nil, err
	}
	if os.Getenv("KEEP") == "" {
		defer os.Remove(f.Name())
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, "rule_files:\n")
	for _, rf := range ruleFiles {
		fmt.Fprintf(w, "  - %q\n", rf)
	}
	fmt.Fprintf(w, "group_eval_order:\n")
	for _, g := range groupOrder {
		fmt.Fprintf(w, "  - %q\n", g)
	}
	fmt.Fprintf(w, "evaluation_interval: %s\ntests:\n- interval: %s\n  input_series:\n", promDuration(eval), promDuration(r.Scrape))
	r.writeSeries(m, w)
	fmt.Fprintf(w, "  promql_expr_test:\n")
	exprs, at := r.queries(eval, from)
	for i, e := range exprs {
		fmt.Fprintf(w, "  - expr: '%s'\n    eval_time: %s\n    exp_samples: []\n", e, promDuration(at[i]))
	}
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
	if os.Getenv("KEEP") != "" {
		os.WriteFile(f.Name()+".out", out, 0o644)
	}
	return parseGot(string(out), err == nil)
}

var (
	sampleRE = regexp.MustCompile(`\{([^}]*)\} ([-+0-9.eE]+|NaN)`)
	labelRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// parseGot reads the samples of the failing expression tests from
// promtool's report. passed means promtool found nothing, i.e. no alert.
func parseGot(out string, passed bool) ([]Firing, error) {
	if passed {
		return nil, nil
	}
	if strings.Contains(out, "err:") || strings.Contains(out, "error") || !strings.Contains(out, "got: ") {
		return nil, fmt.Errorf("promtool failed:\n%s", truncate(out, 4000))
	}
	var fs []Firing
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "got: ") {
			continue
		}
		ms := sampleRE.FindAllStringSubmatch(line, -1)
		if len(ms) == 0 {
			return nil, fmt.Errorf("promtool reported no samples:\n%s", truncate(out, 4000))
		}
		for _, m := range ms {
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
	}
	return fs, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
