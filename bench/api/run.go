package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/report"
	"github.com/servingprobe/servingprobe/bench/runner"
)

// Runner runs the daemon's bench windows with the same code as the CLI:
// the request's Spec runs on the target's client (its
// http_client_config carries auth and TLS).
func Runner() RunFunc { return runnerDial(nil) }

// runnerDial is Runner with the runs' connections to the server made by
// dial (runner.Env.DialContext): a test's way to serve the target over
// in-memory connections in a testing/synctest bubble.
func runnerDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) RunFunc {
	return func(ctx context.Context, job Job) (Output, error) {
		s := job.Request.Spec
		if s.Tokenizer == "server" {
			return Output{}, errors.New("module tokenizer \"server\" is not supported for bench runs: the datasets need a local tokenizer (a path or hub id)")
		}
		t := job.Request.Target
		env := runner.Env{
			Logger: job.Logger, Target: &t, Module: job.Request.ModuleName,
			Observer: job.Observer, Progress: job.Progress, OnStart: job.Started,
			DialContext: dial, MemoryBudget: maxWindowBytes,
		}
		// The window's report draws every request.
		s.Details, s.DetailsNoTexts = true, true
		prep, err := runner.Prepare(ctx, s, env)
		if err != nil {
			return Output{}, err
		}
		if s.Sweep != nil {
			return daemonSweep(ctx, prep, env, job.ID)
		}
		if s.Runs > 1 {
			return daemonRuns(ctx, prep, env, job.ID)
		}
		out, runErr := prep.Run(ctx, env)
		if out == nil || out.Summary.Backend == "" {
			return Output{}, runErr
		}
		html, repErr := reportHTML(job.ID, []report.Run{{Name: job.ID, Summary: &out.Summary}})
		// The per-request data went into the report; the summary the API
		// and the results file keep stays small.
		out.Summary.Details = nil
		res, err := benchOutput(&out.Summary)
		res.Report, res.ReportError = html, repErr
		return res, errors.Join(runErr, err)
	}
}

// reportHTML is a window's HTML report, or, if it cannot be drawn, why
// not: the run's result does not depend on it, so a report that fails is
// stated beside the result (View.ReportError) rather than failing the run.
// report.Write returns a fault while drawing as an error, so it cannot
// take the daemon down.
func reportHTML(id string, runs []report.Run) ([]byte, string) {
	var b bytes.Buffer
	if err := report.Write(&b, runs, report.Options{Title: "servingprobe bench window " + id}); err != nil {
		return nil, err.Error()
	}
	return b.Bytes(), ""
}

// daemonSweep runs a sweep window: each point's record as it ends, the
// answer at the end. A sweep cut short returns the points that ran.
func daemonSweep(ctx context.Context, prep *runner.Prepared, env runner.Env, id string) (Output, error) {
	var records []json.RawMessage
	var runs []report.Run
	res, runErr := prep.Sweep(ctx, env, func(pt runner.SweepPoint) error {
		rec, err := recordOf(pt.Summary)
		if err != nil {
			return err
		}
		records = append(records, rec)
		runs = append(runs, report.Run{Name: fmt.Sprintf("point %d", pt.Info.Index), Summary: pt.Summary})
		return nil
	})
	if res == nil || len(res.Points) == 0 {
		return Output{}, runErr
	}
	sw, h := sweepOutput(res, records)
	if sw.Search != nil && len(runs) > 0 {
		// The report states the answer the API does: it closes the
		// search's points, as its line does in a JSONL file.
		runs[len(runs)-1].Search = sw.Search
	}
	html, repErr := reportHTML(id, runs)
	return Output{Sweep: sw, Headline: h, Report: html, ReportError: repErr}, runErr
}

// daemonRuns runs a window of several runs (the body's runs) through
// runner.RunSet, as bench --runs does: every run's record, in the order
// run, in Output.Runs, so that a client can compare them with another
// set run for run (docs/compare.md). The window's summary and headline
// are the last run's, read from its record as for one run. The report
// draws the runs as one set; a run's per-request data is dropped as it
// ends, so that a window of N runs holds one run's at a time. A set cut
// short keeps the runs that ended.
func daemonRuns(ctx context.Context, prep *runner.Prepared, env runner.Env, id string) (Output, error) {
	var records []json.RawMessage
	var runs []report.Run
	runErr := runner.RunSet(ctx, env, []*runner.Prepared{prep}, prep.Spec.Runs, prep.Spec.RunsPause, runner.SetHooks{
		After: func(i, _ int, out *runner.Output, err error) error {
			if out == nil || out.Summary.Backend == "" {
				return err
			}
			sum := out.Summary
			sum.Details = nil
			rec, rerr := recordOf(&sum)
			if rerr != nil {
				return errors.Join(err, rerr)
			}
			records = append(records, rec)
			runs = append(runs, report.Run{Name: fmt.Sprintf("%s run %d", id, i+1), Side: id, Summary: &sum})
			return err
		},
	})
	if len(records) == 0 {
		return Output{}, runErr
	}
	html, repErr := reportHTML(id, runs)
	return Output{Runs: records, Report: html, ReportError: repErr}, runErr
}

// benchOutput is the API's form of a summary: its record only. The
// summary the API shows and the headline the gauges and the page show are
// read back from that record (fromRecord), on a live run as on one loaded
// after a restart, so that neither can differ from the stored result.
func benchOutput(sum *bench.Summary) (Output, error) {
	rec, err := recordOf(sum)
	return Output{Record: rec}, err
}

// recordOf is a run's record as a window keeps it: strict JSON (no NaN),
// one line. Every record a window stores, of one run, of each run of a
// set and of each sweep point, is made here.
func recordOf(sum *bench.Summary) (json.RawMessage, error) {
	rec, err := sum.Record(bench.JSONOptions{Strict: true})
	if err != nil {
		return nil, err
	}
	return json.RawMessage(strings.TrimSpace(string(rec))), nil
}
