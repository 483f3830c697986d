package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/report"
)

// Exit codes of compare and of bench --baseline: a regression the gate
// found, and a gate that could not be checked (a figure the records
// cannot test, an unreadable baseline).
const (
	exitRegression = 1
	exitGateError  = 2
)

// addCompareCommand registers compare: two runs' figures side by side,
// each significant or ~, and the --fail-on gate.
func addCompareCommand(app *kingpin.Application) func(context.Context, *cliEnv) error {
	cmd := app.Command("compare", "Compare a candidate's runs with a baseline's (bench JSONL files, every record of each: bench --runs N writes N): every figure with its change and, with two runs or more a side, whether it is significant against the spread between runs; with --fail-on a regression gate that exits 1 when a listed figure is worse than its bound.")
	var (
		baseFile, newFile string
		failOn            string
	)
	cmd.Arg("baseline", "The baseline's JSONL file; each of its records is one of the baseline's runs.").Required().ExistingFileVar(&baseFile)
	cmd.Arg("candidate", "The candidate's JSONL file; each of its records is one of the candidate's runs.").Required().ExistingFileVar(&newFile)
	cmd.Flag("fail-on", "Regression bounds, comma-separated, such as 'ttft:p99>+5%,output_throughput<-3%': exit 1 when a figure changed beyond its bound and, with two runs or more a side, the change is significant (with one run a side, beyond its bound).").PlaceHolder("FIGURE>+N%,...").StringVar(&failOn)
	return func(_ context.Context, env *cliEnv) error {
		var bounds []bench.Bound
		if failOn != "" {
			var err error
			if bounds, err = bench.ParseGate(failOn); err != nil {
				return &exitError{code: exitGateError, err: fmt.Errorf("--fail-on: %w", err)}
			}
		}
		base, err := lastRuns(baseFile, 0)
		if err != nil {
			return &exitError{code: exitGateError, err: err}
		}
		cand, err := lastRuns(newFile, 0)
		if err != nil {
			return &exitError{code: exitGateError, err: err}
		}
		return compareRuns(env.Stdout, baseFile, base, newFile, cand, bounds)
	}
}

// lastRuns are the last n runs recorded in a bench JSONL file, all of
// them when n is 0 or more than the file holds.
func lastRuns(path string, n int) ([]*bench.Summary, error) {
	runs, err := report.Load(path)
	if err != nil {
		return nil, err
	}
	if n > 0 && n < len(runs) {
		runs = runs[len(runs)-n:]
	}
	out := make([]*bench.Summary, len(runs))
	for i, r := range runs {
		out[i] = r.Summary
	}
	return out, nil
}

// compareRuns writes the comparison of the runs cand with the runs base,
// after a warning for each way their workloads differ, and checks the
// gate's bounds, if any: an *exitError with exitRegression naming each
// figure that failed, or exitGateError for a bound it could not check.
func compareRuns(w io.Writer, baseName string, base []*bench.Summary, candName string, cand []*bench.Summary, bounds []bench.Bound) error {
	var b strings.Builder
	for _, d := range bench.WorkloadDifferences(base, cand) {
		fmt.Fprintf(&b, "warning: not the same workload: %s\n", d)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	rows := bench.CompareRuns(base, cand)
	if err := bench.WriteComparison(w, baseName, candName, rows); err != nil {
		return err
	}
	if len(bounds) == 0 {
		return nil
	}
	results, gateErr := bench.CheckGate(bounds, rows)
	b.Reset()
	if len(base) < 2 || len(cand) < 2 {
		fmt.Fprintf(&b, "\nRegression gate, %d run(s) against %d: with one run a side no change can be significant, so each bound is judged against the change alone:\n", len(base), len(cand))
	} else {
		fmt.Fprintf(&b, "\nRegression gate, %d runs against %d (p-values Holm-adjusted over its bounds):\n", len(base), len(cand))
	}
	var failed []string
	for _, r := range results {
		word := "ok  "
		if r.Failed {
			word = "FAIL"
			failed = append(failed, r.Bound.String())
		}
		fmt.Fprintf(&b, "%s %s: %s\n", word, r.Bound, r.Reason)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if gateErr != nil {
		return &exitError{code: exitGateError, err: fmt.Errorf("gate not checked: %w", gateErr)}
	}
	if len(failed) > 0 {
		return &exitError{code: exitRegression, err: errors.New("regression: " + strings.Join(failed, ", "))}
	}
	return nil
}

// gateFlags are bench's --baseline and --fail-on: the runs' records,
// once written, compared with the baseline's as compare does.
type gateFlags struct {
	baseline, failOn string

	base   []*bench.Summary
	bounds []bench.Bound
}

// load reads the baseline and the bounds before the run, so that a
// mistake in either is reported before any request is sent. An A/B set
// (ab) gates its own comparison: bounds without a baseline.
func (g *gateFlags) load(sweep, ab bool) error {
	if g.baseline == "" {
		switch {
		case g.failOn != "" && ab:
			var err error
			if g.bounds, err = bench.ParseGate(g.failOn); err != nil {
				return &exitError{code: exitGateError, err: fmt.Errorf("--fail-on: %w", err)}
			}
		case g.failOn != "":
			return &exitError{code: exitGateError, err: errors.New("--fail-on needs --baseline (or --ab-base-url)")}
		}
		return nil
	}
	if sweep {
		return &exitError{code: exitGateError, err: errors.New("--baseline compares one run; a sweep's points are compared with servingprobe report")}
	}
	if g.failOn != "" {
		var err error
		if g.bounds, err = bench.ParseGate(g.failOn); err != nil {
			return &exitError{code: exitGateError, err: fmt.Errorf("--fail-on: %w", err)}
		}
	}
	base, err := lastRuns(g.baseline, 0)
	if err != nil {
		return &exitError{code: exitGateError, err: fmt.Errorf("--baseline: %w", err)}
	}
	g.base = base
	return nil
}

// check compares the n records just appended to path (read back from the
// file, so that the gate sees what compare would) with the baseline.
func (g *gateFlags) check(w io.Writer, path string, n int) error {
	if g.base == nil {
		return nil
	}
	cand, err := lastRuns(path, max(n, 1))
	if err != nil {
		return &exitError{code: exitGateError, err: fmt.Errorf("--baseline: read the run back: %w", err)}
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return compareRuns(w, g.baseline, g.base, path, cand, g.bounds)
}
