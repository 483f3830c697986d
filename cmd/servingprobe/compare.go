package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/report"
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
	cmd := app.Command("compare", "Compare a run with a baseline (bench JSONL files, the last record of each): every figure with its change and whether it is significant, and with --fail-on a regression gate that exits 1 when a listed figure is significantly worse than its bound.")
	var (
		baseFile, newFile string
		failOn            string
	)
	cmd.Arg("baseline", "The baseline's JSONL file; its last record is the run compared against.").Required().ExistingFileVar(&baseFile)
	cmd.Arg("candidate", "The candidate's JSONL file; its last record is compared.").Required().ExistingFileVar(&newFile)
	cmd.Flag("fail-on", "Regression bounds, comma-separated, such as 'ttft:p99>+5%,output_throughput<-3%': exit 1 when a figure changed beyond its bound and the change is significant.").PlaceHolder("FIGURE>+N%,...").StringVar(&failOn)
	return func(_ context.Context, env *cliEnv) error {
		var bounds []bench.Bound
		if failOn != "" {
			var err error
			if bounds, err = bench.ParseGate(failOn); err != nil {
				return &exitError{code: exitGateError, err: fmt.Errorf("--fail-on: %w", err)}
			}
		}
		base, err := lastRecord(baseFile)
		if err != nil {
			return &exitError{code: exitGateError, err: err}
		}
		cand, err := lastRecord(newFile)
		if err != nil {
			return &exitError{code: exitGateError, err: err}
		}
		return compareRuns(env.Stdout, baseFile, base, newFile, cand, bounds)
	}
}

// lastRecord is the last run recorded in a bench JSONL file.
func lastRecord(path string) (*bench.Summary, error) {
	runs, err := report.Load(path)
	if err != nil {
		return nil, err
	}
	return runs[len(runs)-1].Summary, nil
}

// compareRuns writes the comparison of cand with base and checks the
// gate's bounds, if any: an *exitError with exitRegression naming each
// figure that failed, or exitGateError for a bound it could not check.
func compareRuns(w io.Writer, baseName string, base *bench.Summary, candName string, cand *bench.Summary, bounds []bench.Bound) error {
	rows := bench.Compare(base, cand)
	if err := bench.WriteComparison(w, baseName, candName, rows); err != nil {
		return err
	}
	if len(bounds) == 0 {
		return nil
	}
	results, gateErr := bench.CheckGate(bounds, rows)
	var b strings.Builder
	b.WriteString("\nRegression gate (p-values Holm-adjusted over its bounds):\n")
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

// gateFlags are bench's --baseline and --fail-on: the run's record,
// once written, compared with the baseline's as compare does.
type gateFlags struct {
	baseline, failOn string

	base   *bench.Summary
	bounds []bench.Bound
}

// load reads the baseline and the bounds before the run, so that a
// mistake in either is reported before any request is sent.
func (g *gateFlags) load(sweep bool) error {
	if g.baseline == "" {
		if g.failOn != "" {
			return &exitError{code: exitGateError, err: errors.New("--fail-on needs --baseline")}
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
	base, err := lastRecord(g.baseline)
	if err != nil {
		return &exitError{code: exitGateError, err: fmt.Errorf("--baseline: %w", err)}
	}
	g.base = base
	return nil
}

// check compares the record just appended to path (read back from the
// file, so that the gate sees what compare would) with the baseline.
func (g *gateFlags) check(w io.Writer, path string) error {
	if g.base == nil {
		return nil
	}
	cand, err := lastRecord(path)
	if err != nil {
		return &exitError{code: exitGateError, err: fmt.Errorf("--baseline: read the run back: %w", err)}
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return compareRuns(w, g.baseline, g.base, path, cand, g.bounds)
}
