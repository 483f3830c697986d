package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
)

// runsFlags are --ab-base-url and --ab-output-file: the set of --runs
// (Spec.Runs, Spec.RunsPause) alternated with a second server.
type runsFlags struct {
	// abURL is the candidate server of an interleaved A/B set; its runs
	// are appended to abOutput.
	abURL, abOutput string
	// more is set while a run of the set is still to come: the gate waits
	// for the last.
	more bool
}

// check refuses a malformed A/B set before anything is sent; the Spec's
// Validate has refused a bad --runs or --runs-pause-sec already.
func (r *runsFlags) check(sweep bool, g *gateFlags) error {
	switch {
	case sweep && r.abURL != "":
		return errors.New("--ab-base-url repeats one run; a sweep's points are separate runs already")
	case r.abURL != "" && r.abOutput == "":
		return errors.New("--ab-base-url needs --ab-output-file, the file the second server's runs are appended to")
	case r.abURL == "" && r.abOutput != "":
		return errors.New("--ab-output-file needs --ab-base-url")
	case r.abURL != "" && g.baseline != "":
		return &exitError{code: exitGateError, err: errors.New("--ab-base-url compares its two servers' runs with each other; --fail-on gates that comparison without --baseline")}
	}
	return nil
}

// runSet runs the prepared benchmark s.Runs times (2×s.Runs with
// --ab-base-url, alternating the servers) through runner.RunSet, each a
// full record appended to its output file with its table; then it prints
// a line across each side's runs and, for an A/B set, the comparison of
// the second server's runs with the first's and its gate.
func runSet(ctx context.Context, env *cliEnv, f *benchFlags, s runner.Spec, prep *runner.Prepared, renv runner.Env) error {
	p := s.RunParams()
	if f.outputFile == "" {
		// One name for the whole set, not one a run by the clock.
		f.outputFile = bench.DefaultOutputFile(p, time.Now())
	}
	sides := []*runner.Prepared{prep}
	files := []string{f.outputFile}
	urls := []string{s.BaseURL}
	if f.runs.abURL != "" {
		sb := s
		u, err := runner.BaseURL(f.runs.abURL, "", 0, s.Backend)
		if err != nil {
			return fmt.Errorf("--ab-base-url: %w", err)
		}
		sb.BaseURL = u
		pb, err := runner.Prepare(ctx, sb, renv)
		if err != nil {
			return fmt.Errorf("--ab-base-url: %w", err)
		}
		sides, files, urls = append(sides, pb), append(files, f.runs.abOutput), append(urls, u)
	}
	total := s.Runs * len(sides)
	runs := make([][]*bench.Summary, len(sides))
	stopBar := func() {}
	err := runner.RunSet(ctx, renv, sides, s.Runs, s.RunsPause, runner.SetHooks{
		Before: func(i, side int) {
			fmt.Fprintf(env.Stdout, "\n=== Run %d of %d: %s ===\n", i+1, total, urls[side])
			stopBar = startProgressBar(env.Stderr, renv.Progress, !f.disableTqdm && isTerminal(env.Stderr), time.Now)
		},
		After: func(i, side int, out *runner.Output, err error) error {
			stopBar()
			fs := *f
			fs.outputFile = files[side]
			fs.runs.more = i < total-1
			if len(sides) == 2 {
				fs.gate = gateFlags{} // the set's own comparison follows
			}
			sum, err := benchResult(env, &fs, out, err, p)
			if sum != nil {
				runs[side] = append(runs[side], sum)
			}
			return err
		},
	})
	if err != nil {
		return err
	}
	for side, rs := range runs {
		if err := writeAcrossRuns(env.Stdout, urls[side], rs); err != nil {
			return err
		}
	}
	if len(sides) < 2 {
		return nil
	}
	// Read back as compare would read the files.
	var read [2][]*bench.Summary
	for side := range read {
		rs, err := lastRuns(files[side], s.Runs)
		if err != nil {
			return &exitError{code: exitGateError, err: fmt.Errorf("read the runs back: %w", err)}
		}
		read[side] = rs
	}
	if _, err := fmt.Fprintf(env.Stdout, "\nInterleaved A/B, %d runs a side (A: %s, B: %s):\n", s.Runs, urls[0], urls[1]); err != nil {
		return err
	}
	return compareRuns(env.Stdout, files[0], read[0], files[1], read[1], f.gate.bounds)
}

// writeAcrossRuns is the short line across a side's runs: the median TTFT
// and the output throughput of each run, and their spread (bench.Spread),
// which is what a comparison's test weighs a change against.
func writeAcrossRuns(w io.Writer, url string, runs []*bench.Summary) error {
	if len(runs) < 2 {
		return nil
	}
	line := func(name string, get func(*bench.Summary) float64) string {
		var vs []string
		var xs []float64
		for _, r := range runs {
			vs = append(vs, fmt.Sprintf("%.2f", get(r)))
			xs = append(xs, get(r))
		}
		return fmt.Sprintf("%s %s (spread %.1f%%)", name, strings.Join(vs, ", "), 100*bench.Spread(xs))
	}
	_, err := fmt.Fprintf(w, "Across %d runs of %s: %s; %s\n", len(runs), url,
		line("median TTFT (ms)", func(s *bench.Summary) float64 { return s.TTFT.Median }),
		line("output throughput (tok/s)", func(s *bench.Summary) float64 { return s.OutputThroughput }))
	return err
}
