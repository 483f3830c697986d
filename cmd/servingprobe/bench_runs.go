package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
)

// runsFlags are --runs, --runs-pause, --ab-base-url and --ab-output-file:
// the same benchmark run several times, so that a comparison can see the
// drift between runs (docs/compare.md), and optionally alternated with a
// second server.
type runsFlags struct {
	n     int
	pause time.Duration
	// abURL is the candidate server of an interleaved A/B set; its runs
	// are appended to abOutput.
	abURL, abOutput string
	// more is set while a run of the set is still to come: the gate waits
	// for the last.
	more bool
}

// DefaultRunsPause is the pause between two runs of a set: long enough
// for a server to finish what the last run left (the client has its
// answers, but the engine may still free caches and slots).
const DefaultRunsPause = 2 * time.Second

// check refuses a malformed set before anything is sent.
func (r *runsFlags) check(sweep bool, g *gateFlags) error {
	switch {
	case r.n < 1:
		return fmt.Errorf("--runs %d: want 1 or more", r.n)
	case r.pause < 0:
		return fmt.Errorf("--runs-pause %s: want 0 or more", r.pause)
	case sweep && (r.n > 1 || r.abURL != ""):
		return errors.New("--runs and --ab-base-url repeat one run; a sweep's points are separate runs already")
	case r.abURL != "" && r.abOutput == "":
		return errors.New("--ab-base-url needs --ab-output-file, the file the second server's runs are appended to")
	case r.abURL == "" && r.abOutput != "":
		return errors.New("--ab-output-file needs --ab-base-url")
	case r.abURL != "" && g.baseline != "":
		return &exitError{code: exitGateError, err: errors.New("--ab-base-url compares its two servers' runs with each other; --fail-on gates that comparison without --baseline")}
	}
	return nil
}

// abOrder is the side (0: the first server, 1: the --ab-base-url one) of
// the i-th of 2n interleaved runs: A B B A A B B A ..., so that a drift
// that grows steadily through the set weighs on both sides alike (a plain
// A B A B ... would put every B later than its A).
func abOrder(i int) int {
	if (i/2)%2 == 0 {
		return i % 2
	}
	return 1 - i%2
}

// runSet runs the prepared benchmark f.runs.n times (2n with
// --ab-base-url, alternating the servers), each a full record appended to
// its output file with its table, pausing between runs; then it prints a
// line across each side's runs and, for an A/B set, the comparison of
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
	total := f.runs.n * len(sides)
	runs := make([][]*bench.Summary, len(sides))
	for i := range total {
		side := 0
		if len(sides) == 2 {
			side = abOrder(i)
		}
		if i > 0 && f.runs.pause > 0 {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(f.runs.pause):
			}
		}
		fmt.Fprintf(env.Stdout, "\n=== Run %d of %d: %s ===\n", i+1, total, urls[side])
		fs := *f
		fs.outputFile = files[side]
		fs.runs.more = i < total-1
		if len(sides) == 2 {
			fs.gate = gateFlags{} // the set's own comparison follows
		}
		sum, err := benchOnce(ctx, env, &fs, sides[side], renv, p)
		if sum != nil {
			runs[side] = append(runs[side], sum)
		}
		if err != nil {
			return err
		}
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
		rs, err := lastRuns(files[side], f.runs.n)
		if err != nil {
			return &exitError{code: exitGateError, err: fmt.Errorf("read the runs back: %w", err)}
		}
		read[side] = rs
	}
	if _, err := fmt.Fprintf(env.Stdout, "\nInterleaved A/B, %d runs a side (A: %s, B: %s):\n", f.runs.n, urls[0], urls[1]); err != nil {
		return err
	}
	return compareRuns(env.Stdout, files[0], read[0], files[1], read[1], f.gate.bounds)
}

// writeAcrossRuns is the short line across a side's runs: the median TTFT
// and the output throughput of each run, and their spread (the
// coefficient of variation), which is what a comparison's test weighs a
// change against.
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
		return fmt.Sprintf("%s %s (spread %.1f%%)", name, strings.Join(vs, ", "), 100*cv(xs))
	}
	_, err := fmt.Fprintf(w, "Across %d runs of %s: %s; %s\n", len(runs), url,
		line("median TTFT (ms)", func(s *bench.Summary) float64 { return s.TTFT.Median }),
		line("output throughput (tok/s)", func(s *bench.Summary) float64 { return s.OutputThroughput }))
	return err
}

// cv is the coefficient of variation: the sample standard deviation over
// the mean; NaN for a mean of 0.
func cv(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	if m == 0 {
		return math.NaN()
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / math.Abs(m)
}
