package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/report"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/prober"
)

// addBenchCommand registers bench, a drop-in for python -m
// sglang.bench_serving: the same flags and defaults, table and JSONL.
func addBenchCommand(app *kingpin.Application) func(context.Context, *cliEnv) error {
	cmd := app.Command("bench", "Run a one-shot benchmark, a drop-in for python -m sglang.bench_serving (same flags, table and JSONL), or trigger one on a daemon with --remote.")
	f := addBenchFlags(cmd)
	return func(ctx context.Context, env *cliEnv) error { return runBench(ctx, env, f, os.Getenv) }
}

func runBench(ctx context.Context, env *cliEnv, f *benchFlags, getenv func(string) string) error {
	if f.remote.url != "" {
		if f.gate.baseline != "" || f.gate.failOn != "" {
			return &exitError{code: exitGateError, err: errors.New("--baseline and --fail-on gate a local run; compare a remote run's record with servingprobe compare")}
		}
		if f.runs.abURL != "" {
			return errors.New("--ab-base-url runs a set locally against two servers; a daemon's window measures its own target")
		}
		return runRemoteBench(ctx, env, f)
	}
	s, err := f.benchSpec(getenv)
	if err != nil {
		return err
	}
	if err := f.runs.check(s.Sweep != nil, &f.gate); err != nil {
		return err
	}
	if err := f.gate.load(s.Sweep != nil, f.runs.abURL != ""); err != nil {
		return err // before the run: a bad gate loses no measurement
	}
	prog := &prober.Progress{}
	renv := runner.Env{Logger: env.Logger, Stdout: env.Stdout, Progress: prog, Getenv: getenv, DialContext: env.Dial}
	if f.printRequests {
		// bench_serving prints these lines to stdout, among its own.
		renv.RequestLog = env.Stdout
	}
	prep, err := runner.Prepare(ctx, s, renv)
	if err != nil {
		return err
	}
	f.vllm.model, f.vllm.tokenizer = prep.Model, prep.TokenizerName
	if s.Sweep != nil {
		return runSweep(ctx, env, f, prep, renv)
	}
	if s.Runs > 1 || f.runs.abURL != "" {
		return runSet(ctx, env, f, s, prep, renv)
	}
	_, err = benchOnce(ctx, env, f, prep, renv, s.RunParams())
	return err
}

// benchOnce runs the prepared benchmark once and writes its table and
// record; the summary is nil when the run produced none.
func benchOnce(ctx context.Context, env *cliEnv, f *benchFlags, prep *runner.Prepared, renv runner.Env, p bench.Params) (*bench.Summary, error) {
	stop := startProgressBar(env.Stderr, renv.Progress, !f.disableTqdm && isTerminal(env.Stderr), time.Now)
	out, err := prep.Run(ctx, renv)
	stop()
	return benchResult(env, f, out, err, p)
}

// benchResult writes a finished run's table and record (an interrupted
// run's too, marked so, before its error); the summary is nil when the
// run produced none.
func benchResult(env *cliEnv, f *benchFlags, out *runner.Output, err error, p bench.Params) (*bench.Summary, error) {
	if err != nil {
		// Interrupted (Ctrl-C) mid-run: what finished is still a result,
		// printed and appended marked as interrupted, before the error.
		if out != nil && out.Summary.Stopped == bench.StoppedInterrupted && out.Summary.Requests > 0 {
			if werr := writeBenchOutput(env.Stdout, &out.Summary, f, p); werr != nil {
				// The interruption decides the exit status, not a
				// report that failed after it.
				return nil, fmt.Errorf("%w; %v", err, werr)
			}
		}
		return nil, err
	}
	return &out.Summary, writeBenchOutput(env.Stdout, &out.Summary, f, p)
}

// writeBenchOutput prints the table and appends the JSONL record.
func writeBenchOutput(w io.Writer, sum *bench.Summary, f *benchFlags, p bench.Params) error {
	defer sum.SpooledDetails.Close() // the record is their last reader
	path := f.outputFile
	if f.vllm.on {
		// vLLM's block and result file; the JSONL only when asked.
		name, err := f.vllm.write(w, sum, p, f.spec)
		if err != nil {
			return err
		}
		if path == "" {
			path = name
		}
	} else if err := f.writeTable(w, sum); err != nil {
		return err
	}
	if path == "" && !f.vllm.on {
		path = bench.DefaultOutputFile(p, time.Now())
	}
	if (!f.vllm.on || f.outputFile != "") && path != "" {
		if err := sum.AppendJSONL(path, bench.JSONOptions{Strict: f.strictJSON, Details: f.outputDetails}); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
	}
	if f.plotThroughput {
		if err := sum.Timeline(100).WritePlot(w); err != nil {
			return err
		}
	}
	if f.report != "" && sum.Sweep == nil {
		if err := writeReport(w, f.report, []report.Run{{Name: filepath.Base(path), Summary: sum}}); err != nil {
			return err
		}
	}
	if sum.Stopped != bench.StoppedInterrupted && !f.runs.more {
		return f.gate.check(w, path, f.spec.Runs)
	}
	return nil
}

// writeTable writes bench_serving's table of the run. A --remote run
// that did not set --max-concurrency ran at the daemon's
// bench.max_concurrency, the body's default (docs/api.md); the row's label
// says so, where bench_serving's would read as the user's own setting. A
// local run's table stays bench_serving's, byte for byte.
func (f *benchFlags) writeTable(w io.Writer, sum *bench.Summary) error {
	if f.remote.url == "" || f.given("max-concurrency") || sum.MaxConcurrency <= 0 {
		return sum.WriteTable(w)
	}
	var b bytes.Buffer
	if err := sum.WriteTable(&b); err != nil {
		return err
	}
	// Both labels pad to bench_serving's 40 columns, so the values stay
	// in line.
	row := fmt.Sprintf("%-40s ", "Max request concurrency:")
	limit := fmt.Sprintf("%-40s ", "Max request concurrency (daemon limit):")
	_, err := w.Write(bytes.Replace(b.Bytes(), []byte(row), []byte(limit), 1))
	return err
}

// exitReportFailed is bench's exit status when the run's results were
// written but its --report was not: the results are good and kept, and a
// script can tell this from a failed run (1) and a usage error (2).
const exitReportFailed = 3

// writeReport writes the HTML report of runs to path and says where. It
// is called after the runs' results are written, so a failure says that
// they were, and exits with exitReportFailed.
func writeReport(w io.Writer, path string, runs []report.Run) error {
	if err := writeReportOpts(w, path, runs, report.Options{}); err != nil {
		return &exitError{code: exitReportFailed, err: fmt.Errorf("%w (the results were written; only the report failed)", err)}
	}
	return nil
}

func writeReportOpts(w io.Writer, path string, runs []report.Run, o report.Options) error {
	var b bytes.Buffer
	if err := report.Write(&b, runs, o); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	fmt.Fprintf(w, "Report written to %s\n", path)
	return nil
}
