package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/api"
	"github.com/servingprobe/servingprobe/bench/report"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
)

// sweepFlags are the sweep and SLO search flags of bench. The search's
// settings bind into w; the four ways of sweeping are kept as given, to
// refuse two at once and to parse the one given.
type sweepFlags struct {
	w                    runner.SweepSpec
	rates, concurrencies string
	auto                 string
	slo, sloSearch       string
}

func addSweepFlags(b *binder, f *sweepFlags) {
	f.w, f.sloSearch = runner.DefaultSweepSpec(), "request-rate"
	w := &f.w
	s := func(name, key, help string, v kingpin.Value) { b.flag(name, "sweep."+key, help, v) }
	s("sweep-request-rates", "request_rates", "Sweep: run once per request rate in this comma-separated list (req/s), each a full run with its own table and JSONL record.", stringValue(&f.rates))
	s("sweep-max-concurrency", "max_concurrency", "Sweep: run once per max concurrency in this comma-separated list, at --request-rate (default: all at once).", stringValue(&f.concurrencies))
	s("sweep", "auto", "auto: measure one request at a time and the saturated throughput, then --sweep-points rates evenly between them.", enumValue(&f.auto, "auto"))
	s("sweep-points", "points", "Rates an auto sweep runs between its two anchors.", intValue(&w.Points))
	b.cmd.Flag("sweep-cooldown", "Pause between the points of a sweep or search.").Default(w.Cooldown.String()).IsSetByUser(b.track("sweep-cooldown", "sweep.cooldown")).DurationVar(&w.Cooldown)
	s("slo", "slo", "SLO search: find the highest request rate (or concurrency) at which every objective holds, e.g. 'ttft:p99<=500ms,itl:p99<=50ms,e2e:p90<=10s'; with answer checks, 'valid>=99%' requires that share of judged answers to pass every check.", stringValue(&f.slo))
	s("slo-search", "slo_search", "What the SLO search varies: request-rate or max-concurrency.", enumValue(&f.sloSearch, "request-rate", "max-concurrency"))
	s("slo-precision", "slo_precision", "Stop when the limit is bracketed within this fraction of the answer.", floatValue(&w.Precision))
	s("slo-start", "slo_start", "The SLO search's first value (req/s or concurrency).", floatValue(&w.Start))
	s("slo-max", "slo_max", "The highest value the SLO search tries.", floatValue(&w.Max))
	s("slo-max-points", "slo_max_points", "The most runs the SLO search makes, its two anchors aside.", intValue(&w.MaxPoints))
	s("slo-point-samples", "slo_point_samples", "Without --num-prompts, a point of the SLO search runs until each objective's percentile has this many samples above its rank (fewer when it clearly passes or already broke), or --slo-point-time.", intValue(&w.PointSamples))
	d := func(name, key, help string, v *time.Duration) {
		b.cmd.Flag(name, help).Default(v.String()).IsSetByUser(b.track(name, "sweep."+key)).DurationVar(v)
	}
	d("slo-point-time", "slo_point_time", "The longest a point of the SLO search runs when it is sized by samples (no --num-prompts).", &w.PointTime)
	d("slo-idle-timeout", "slo_idle_timeout", "Before each point, the SLO search waits up to this long for the server to be back at its idle state (its queue gauges at zero, or a probe's TTFT near one request's at a time); a point that started on a busy server says so (0: no wait).", &w.IdleTimeout)
	d("slo-budget", "slo_budget", "The longest the whole SLO search runs, anchors and pauses included; when it runs out the search prints what it measured (0: no limit).", &w.Budget)
}

// spec returns the sweep the flags ask for, or nil for a single run.
func (f *sweepFlags) spec() (*runner.SweepSpec, error) {
	n := 0
	for _, set := range []bool{f.rates != "", f.concurrencies != "", f.auto != "", f.slo != ""} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, nil
	case n > 1:
		return nil, errors.New("--sweep-request-rates, --sweep-max-concurrency, --sweep auto and --slo exclude each other")
	}
	w := f.w
	var err error
	switch {
	case f.rates != "":
		w.Mode = bench.SweepRates
		if w.Values, err = parseFloats(f.rates); err != nil {
			err = fmt.Errorf("--sweep-request-rates: %w", err)
		}
	case f.concurrencies != "":
		w.Mode = bench.SweepConcurrency
		if w.Values, err = parseFloats(f.concurrencies); err != nil {
			err = fmt.Errorf("--sweep-max-concurrency: %w", err)
		}
	case f.auto != "":
		w.Mode = bench.SweepAuto
	default:
		w.Mode = bench.SweepSLO
		w.By = map[string]string{"request-rate": bench.ByRequestRate, "max-concurrency": bench.ByMaxConcurrency}[f.sloSearch]
		if w.SLO, err = bench.ParseSLO(f.slo); err != nil {
			err = fmt.Errorf("--slo: %w", err)
		}
	}
	return &w, err
}

// runSweep runs every point as a full bench run: its table and JSONL
// record (with the "sweep" object) as it ends, then the sweep table and,
// for an SLO search, its answer's line after the points, so that the
// report and anything else that reads the file states this answer.
func runSweep(ctx context.Context, env *cliEnv, f *benchFlags, prep *runner.Prepared, renv runner.Env) error {
	var stop func()
	var points []report.Run
	onPoint := func(p runner.SweepPoint) error {
		points = append(points, report.Run{Name: fmt.Sprintf("point %d", p.Info.Index), Summary: p.Summary})
		stop()
		fmt.Fprintf(env.Stdout, "\nSweep point %d: %s\n", p.Info.Index, pointLabel(p.Info))
		params := prep.Spec.RunParams()
		if p.Info.By == bench.ByRequestRate && p.Info.Role == "" {
			params.RequestRate = p.Info.Value
		}
		err := writeBenchOutput(env.Stdout, p.Summary, f, params)
		stop = startProgressBar(env.Stderr, renv.Progress, !f.disableTqdm && isTerminal(env.Stderr), time.Now)
		return err
	}
	stop = startProgressBar(env.Stderr, renv.Progress, !f.disableTqdm && isTerminal(env.Stderr), time.Now)
	res, err := prep.Sweep(ctx, renv, onPoint)
	stop()
	if res != nil {
		if werr := res.Table().Write(env.Stdout); werr != nil {
			return errors.Join(err, werr)
		}
		if res.Spec.Mode == bench.SweepSLO && len(res.Points) > 0 {
			path := f.outputFile
			if path == "" {
				path = bench.DefaultOutputFile(prep.Spec.RunParams(), time.Now())
			}
			if werr := res.SearchAnswer.AppendJSONL(path); werr != nil {
				return errors.Join(err, fmt.Errorf("write results: %w", werr))
			}
			if len(points) > 0 {
				points[len(points)-1].Search = &res.SearchAnswer
			}
		}
	}
	if f.report != "" && len(points) > 0 {
		if werr := writeReport(env.Stdout, f.report, points); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

func pointLabel(w bench.SweepInfo) string {
	switch {
	case w.Role == "synchronous":
		return "one request at a time"
	case w.Role == "throughput":
		return "all requests at once (saturated throughput)"
	case w.Role == "ramp":
		return fmt.Sprintf("concurrency ramp, %d in flight", w.Concurrency)
	case w.By == bench.ByMaxConcurrency:
		return fmt.Sprintf("max concurrency %d", int(w.Value))
	}
	return "request rate " + pyfmt.Float(w.Value)
}

// writeRemoteSweep prints a daemon sweep's points and answer, and appends
// its records to the output file as a local sweep would.
func writeRemoteSweep(w io.Writer, sw *api.SweepOutput, f *benchFlags) error {
	fmt.Fprintf(w, "Sweep (%s over %s): %d points\n", sw.Mode, sw.By, len(sw.Records))
	for _, raw := range sw.Records {
		var rec struct {
			OutputThroughput float64 `json:"output_throughput"`
			Sweep            struct {
				Index int     `json:"index"`
				Value float64 `json:"value"`
				Pass  *bool   `json:"pass"`
			} `json:"sweep"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("decode a sweep record: %w", err)
		}
		verdict := ""
		if rec.Sweep.Pass != nil {
			verdict = map[bool]string{true: "  pass", false: "  FAIL"}[*rec.Sweep.Pass]
		}
		fmt.Fprintf(w, "%5d %12s %12.1f tok/s%s\n", rec.Sweep.Index, pyfmt.Float(rec.Sweep.Value), rec.OutputThroughput, verdict)
	}
	if a := sw.Answer(); a != "" {
		fmt.Fprintln(w, a)
	}
	if len(sw.Records) == 0 {
		return nil
	}
	path := f.outputFile
	if path == "" {
		var p bench.Params
		if err := json.Unmarshal(sw.Records[0], &struct {
			Backend         *string `json:"backend"`
			DatasetName     *string `json:"dataset_name"`
			RandomInputLen  *int    `json:"random_input_len"`
			RandomOutputLen *int    `json:"random_output_len"`
		}{&p.Backend, &p.Dataset, &p.RandomInputLen, &p.RandomOutputLen}); err != nil {
			return fmt.Errorf("decode a sweep record: %w", err)
		}
		p.NumPrompts = f.spec.NumPrompts
		path = bench.DefaultOutputFile(p, time.Now())
	}
	// The daemon's records are strict JSON (no bare Infinity) whatever
	// --strict-json says.
	out, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	// The API indents its answer, records included: one line each here.
	var buf bytes.Buffer
	for _, raw := range sw.Records {
		if err := json.Compact(&buf, raw); err != nil {
			out.Close()
			return fmt.Errorf("decode a sweep record: %w", err)
		}
		buf.WriteByte('\n')
	}
	if sw.Search != nil {
		// The search's answer after its points, as a local search writes
		// it.
		line, err := sw.Search.Line()
		if err != nil {
			out.Close()
			return err
		}
		buf.Write(line)
	}
	if _, err := out.Write(buf.Bytes()); err != nil {
		out.Close()
		return fmt.Errorf("write results: %w", err)
	}
	return out.Close()
}
