package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/report"
)

// sweepFlags are the sweep and SLO search flags of bench.
type sweepFlags struct {
	rates, concurrencies string
	auto                 string
	points               int
	slo, sloSearch       string
	precision            float64
	start, max           float64
	maxPoints            int
	cooldown             time.Duration
}

func addSweepFlags(cmd *kingpin.CmdClause, w *sweepFlags) {
	cmd.Flag("sweep-request-rates", "Sweep: run once per request rate in this comma-separated list (req/s), each a full run with its own table and JSONL record.").StringVar(&w.rates)
	cmd.Flag("sweep-max-concurrency", "Sweep: run once per max concurrency in this comma-separated list, at --request-rate (default: all at once).").StringVar(&w.concurrencies)
	cmd.Flag("sweep", "auto: measure one request at a time and the saturated throughput, then --sweep-points rates evenly between them.").EnumVar(&w.auto, "auto")
	cmd.Flag("sweep-points", "Rates an auto sweep runs between its two anchors.").Default(strconv.Itoa(benchrun.DefaultSweepPoints)).IntVar(&w.points)
	cmd.Flag("sweep-cooldown", "Pause between the points of a sweep or search.").Default(benchrun.DefaultSweepCooldown.String()).DurationVar(&w.cooldown)
	cmd.Flag("slo", "SLO search: find the highest request rate (or concurrency) at which every objective holds, e.g. 'ttft:p99<=500ms,itl:p99<=50ms,e2e:p90<=10s'.").StringVar(&w.slo)
	cmd.Flag("slo-search", "What the SLO search varies: request-rate or max-concurrency.").Default("request-rate").EnumVar(&w.sloSearch, "request-rate", "max-concurrency")
	cmd.Flag("slo-precision", "Stop when the limit is bracketed within this fraction of the answer.").Default(strconv.FormatFloat(benchrun.DefaultSLOPrecision, 'g', -1, 64)).Float64Var(&w.precision)
	cmd.Flag("slo-start", "The SLO search's first value (req/s or concurrency).").Default(strconv.Itoa(benchrun.DefaultSLOStart)).Float64Var(&w.start)
	cmd.Flag("slo-max", "The highest value the SLO search tries.").Default(strconv.Itoa(benchrun.DefaultSLOMax)).Float64Var(&w.max)
	cmd.Flag("slo-max-points", "The most runs the SLO search makes.").Default(strconv.Itoa(benchrun.DefaultSLOMaxPoints)).IntVar(&w.maxPoints)
}

// spec returns the sweep the flags ask for, or nil for a single run.
func (w *sweepFlags) spec() (*benchrun.SweepSpec, error) {
	n := 0
	for _, set := range []bool{w.rates != "", w.concurrencies != "", w.auto != "", w.slo != ""} {
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
	s := &benchrun.SweepSpec{Points: w.points, Cooldown: w.cooldown, Precision: w.precision, Start: w.start, Max: w.max, MaxPoints: w.maxPoints}
	var err error
	switch {
	case w.rates != "":
		s.Mode = bench.SweepRates
		if s.Values, err = parseFloats(w.rates); err != nil {
			err = fmt.Errorf("--sweep-request-rates: %w", err)
		}
	case w.concurrencies != "":
		s.Mode = bench.SweepConcurrency
		if s.Values, err = parseFloats(w.concurrencies); err != nil {
			err = fmt.Errorf("--sweep-max-concurrency: %w", err)
		}
	case w.auto != "":
		s.Mode = bench.SweepAuto
	default:
		s.Mode = bench.SweepSLO
		s.By = map[string]string{"request-rate": bench.ByRequestRate, "max-concurrency": bench.ByMaxConcurrency}[w.sloSearch]
		if s.SLO, err = bench.ParseSLO(w.slo); err != nil {
			err = fmt.Errorf("--slo: %w", err)
		}
	}
	return s, err
}

// runSweep runs every point as a full bench run: its table and JSONL
// record (with the "sweep" object) as it ends, then the sweep table.
func runSweep(ctx context.Context, env *cliEnv, f *benchFlags, prep *benchrun.Prepared, sw *benchrun.SweepSpec, renv benchrun.Env) error {
	var stop func()
	var points []report.Run
	onPoint := func(p benchrun.SweepPoint) error {
		points = append(points, report.Run{Name: fmt.Sprintf("point %d", p.Info.Index), Summary: p.Summary})
		stop()
		fmt.Fprintf(env.Stdout, "\nSweep point %d: %s\n", p.Info.Index, pointLabel(p.Info))
		params := prep.Spec.Params()
		if p.Info.By == bench.ByRequestRate && p.Info.Role == "" {
			params.RequestRate = p.Info.Value
		}
		err := writeBenchOutput(env.Stdout, p.Summary, f, params)
		stop = startProgressBar(env.Stderr, renv.Progress, !f.disableTqdm && isTerminal(env.Stderr), time.Now)
		return err
	}
	stop = startProgressBar(env.Stderr, renv.Progress, !f.disableTqdm && isTerminal(env.Stderr), time.Now)
	res, err := prep.Sweep(ctx, renv, *sw, onPoint)
	stop()
	if res != nil {
		if werr := res.WriteTable(env.Stdout); werr != nil {
			return errors.Join(err, werr)
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
	case w.By == bench.ByMaxConcurrency:
		return fmt.Sprintf("max concurrency %d", int(w.Value))
	}
	return "request rate " + prober.PyFloat(w.Value)
}

// request maps the sweep flags onto a bench window's sweep object, for
// --remote; nil for a single run. Search bounds left at their defaults
// are left out, so that the daemon applies its own limits.
func (w *sweepFlags) request() (*benchrun.SweepRequest, error) {
	s, err := w.spec()
	if s == nil || err != nil {
		return nil, err
	}
	r := &benchrun.SweepRequest{Cooldown: w.cooldown.String()}
	switch s.Mode {
	case bench.SweepRates:
		r.RequestRates = s.Values
	case bench.SweepConcurrency:
		for _, v := range s.Values {
			r.MaxConcurrency = append(r.MaxConcurrency, int(v))
		}
	case bench.SweepAuto:
		r.Auto, r.Points = true, &s.Points
	case bench.SweepSLO:
		r.SLO, r.SLOSearch = w.slo, s.By
		if s.Precision != benchrun.DefaultSLOPrecision {
			r.SLOPrecision = &s.Precision
		}
		if s.Start != benchrun.DefaultSLOStart {
			r.SLOStart = &s.Start
		}
		if s.Max != benchrun.DefaultSLOMax {
			r.SLOMax = &s.Max
		}
		if s.MaxPoints != benchrun.DefaultSLOMaxPoints {
			r.SLOMaxPoints = &s.MaxPoints
		}
	}
	return r, nil
}

// writeRemoteSweep prints a daemon sweep's points and answer, and appends
// its records to the output file as a local sweep would.
func writeRemoteSweep(w io.Writer, sw *benchrun.SweepOutput, f *benchFlags) error {
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
		fmt.Fprintf(w, "%5d %12s %12.1f tok/s%s\n", rec.Sweep.Index, prober.PyFloat(rec.Sweep.Value), rec.OutputThroughput, verdict)
	}
	if sw.Answer != "" {
		fmt.Fprintln(w, sw.Answer)
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
		}{&p.Backend, &p.DatasetName, &p.RandomInputLen, &p.RandomOutputLen}); err != nil {
			return fmt.Errorf("decode a sweep record: %w", err)
		}
		p.NumPrompts = f.numPrompts
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
	if _, err := out.Write(buf.Bytes()); err != nil {
		out.Close()
		return fmt.Errorf("write results: %w", err)
	}
	return out.Close()
}
