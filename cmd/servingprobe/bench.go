package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
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
		return runRemoteBench(ctx, env, f)
	}
	s, err := f.spec(getenv)
	if err != nil {
		return err
	}
	prog := &prober.Progress{}
	renv := benchrun.Env{Logger: env.Logger, Stdout: env.Stdout, Progress: prog, Getenv: getenv}
	prep, err := benchrun.Prepare(ctx, s, renv)
	if err != nil {
		return err
	}
	stop := startProgressBar(env.Stderr, prog, !f.disableTqdm && isTerminal(env.Stderr), time.Now)
	out, err := prep.Run(ctx, renv)
	stop()
	if err != nil {
		return err
	}
	return writeBenchOutput(env.Stdout, &out.Summary, f, s.Params())
}

// writeBenchOutput prints the table and appends the JSONL record.
func writeBenchOutput(w io.Writer, sum *bench.Summary, f *benchFlags, p bench.Params) error {
	if err := sum.WriteTable(w); err != nil {
		return err
	}
	path := f.outputFile
	if path == "" {
		path = bench.DefaultOutputFile(p, time.Now())
	}
	if err := sum.AppendJSONL(path, bench.JSONOptions{Strict: f.strictJSON, Details: f.outputDetails}); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal), so
// that a redirected stderr gets no progress bar.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressInterval is how often the bar is redrawn.
const progressInterval = 200 * time.Millisecond

// startProgressBar draws done/total, failed, rate and ETA on one line of w
// until the returned stop is called. With show false it draws nothing.
func startProgressBar(w io.Writer, p *prober.Progress, show bool, now func() time.Time) (stop func()) {
	if !show {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	start := now()
	go func() {
		defer close(exited)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(w, "\r%s\n", progressLine(p.Snapshot(), now().Sub(start)))
				return
			case <-t.C:
				fmt.Fprintf(w, "\r%s", progressLine(p.Snapshot(), now().Sub(start)))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// progressLine is tqdm-like: "  120/1000 failed 2 | 48.1 req/s | ETA 0:18".
// It is pure, for tests.
func progressLine(s prober.ProgressSnapshot, elapsed time.Duration) string {
	rate := 0.0
	if elapsed > 0 {
		rate = float64(s.Done) / elapsed.Seconds()
	}
	eta := "?"
	if rate > 0 && s.Total >= s.Done {
		left := time.Duration(float64(s.Total-s.Done) / rate * float64(time.Second)).Round(time.Second)
		eta = fmt.Sprintf("%d:%02d", int(left.Minutes()), int(left.Seconds())%60)
	}
	pct := 0
	if s.Total > 0 {
		pct = s.Done * 100 / s.Total
	}
	return fmt.Sprintf("%3d%% %d/%d failed %d | %.1f req/s | ETA %s   ", pct, s.Done, s.Total, s.Failed, rate, eta)
}
