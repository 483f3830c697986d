package benchrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/bench"
)

// SweepSpec is a sweep or an SLO search: several full runs of one
// Prepared, each at its own request rate or concurrency.
type SweepSpec struct {
	// Mode is bench.SweepRates, SweepConcurrency, SweepAuto or SweepSLO.
	Mode string
	// Values are the rates (req/s) or concurrencies of a list sweep.
	Values []float64
	// Points is how many rates an auto sweep spreads between its two
	// anchors (default 5).
	Points int
	// SLO is what an SLO search must hold; By is what it varies
	// (bench.ByRequestRate, the default, or bench.ByMaxConcurrency).
	SLO bench.SLO
	By  string
	// Precision is the search's stopping width, relative to the highest
	// passing value (default 0.1: the answer is within 10% of the limit).
	Precision float64
	// Start is the search's first value (default 1); Max bounds it
	// (default 1024); MaxPoints bounds its runs (default 20).
	Start, Max float64
	MaxPoints  int
	// Cooldown is the pause between points, so that a point does not
	// start on the previous one's queue.
	Cooldown time.Duration
}

// Defaults of a SweepSpec.
const (
	DefaultSweepPoints    = 5
	DefaultSLOPrecision   = 0.1
	DefaultSLOStart       = 1
	DefaultSLOMax         = 1024
	DefaultSLOMaxPoints   = 20
	DefaultSweepCooldown  = 2 * time.Second
	minSearchRateFraction = 1.0 / 64 // of Start: below it, nothing meets the SLO
)

// DefaultSweepSpec is a sweep with every setting at its default and no
// mode: set Mode and its values, or decode a sweep's JSON onto it.
func DefaultSweepSpec() SweepSpec {
	return SweepSpec{Points: DefaultSweepPoints, Cooldown: DefaultSweepCooldown, Precision: DefaultSLOPrecision,
		Start: DefaultSLOStart, Max: DefaultSLOMax, MaxPoints: DefaultSLOMaxPoints}
}

// validate checks a sweep against its run's Spec (Spec.Validate).
func (w *SweepSpec) validate(s *Spec, p *problems) {
	switch w.Mode {
	case bench.SweepRates, bench.SweepConcurrency:
		field := "sweep.request_rates"
		if w.Mode == bench.SweepConcurrency {
			field = "sweep.max_concurrency"
		}
		if len(w.Values) == 0 {
			p.add(field, "the sweep has no values")
		}
		for _, v := range w.Values {
			if !(v > 0) || math.IsInf(v, 0) {
				p.add(field, "%v: want a positive number", v)
			}
			if w.Mode == bench.SweepConcurrency && v != math.Trunc(v) {
				p.add(field, "%v: want whole numbers", v)
			}
		}
	case bench.SweepAuto:
		if w.Points < 1 || w.Points > 100 {
			p.add("sweep.points", "must be in [1, 100], got %d", w.Points)
		}
	case bench.SweepSLO:
		if len(w.SLO) == 0 {
			p.add("sweep.slo", "has no objective")
		}
		if w.By != bench.ByRequestRate && w.By != bench.ByMaxConcurrency {
			p.add("sweep.slo_search", "must be request-rate or max-concurrency")
		}
		if !(w.Precision > 0 && w.Precision < 1) {
			p.add("sweep.slo_precision", "must be in (0, 1), got %v", w.Precision)
		}
		if !(w.Start > 0) || math.IsInf(w.Start, 0) {
			p.add("sweep.slo_start", "must be > 0, got %v", w.Start)
		}
		if !(w.Max >= w.Start) || math.IsInf(w.Max, 0) {
			p.add("sweep.slo_max", "must be finite and at least slo_start (%v), got %v", w.Start, w.Max)
		}
		if w.MaxPoints < 2 {
			p.add("sweep.slo_max_points", "must be at least 2, got %d", w.MaxPoints)
		}
	default:
		p.add("sweep", "unknown sweep mode %q", w.Mode)
	}
	if w.Cooldown < 0 {
		p.add("sweep.cooldown", "must be at least 0")
	}
	if s.UseTraceTimestamps || s.Dataset == "mooncake" || s.RampUp != "" {
		p.add("sweep", "a sweep sets the request rate or concurrency of each point; it cannot replay trace timestamps or ramp up")
	}
}

// SweepPoint is one finished point.
type SweepPoint struct {
	Info    bench.SweepInfo
	Summary *bench.Summary
}

// SweepResult is a finished sweep or search.
type SweepResult struct {
	Spec   SweepSpec
	Points []SweepPoint
	// For an SLO search: Capacity is the highest value that met every
	// objective (0: none did), Bound the lowest that failed (0: none
	// did, the search stopped at Max or at MaxPoints), Broke the
	// objectives that failed at Bound, and GridPoints how many points a
	// fixed grid at the same precision over the values tried would run.
	Capacity, Bound float64
	Broke           []bench.Verdict
	GridPoints      int
	// Exhausted says the search stopped at MaxPoints before reaching its
	// precision.
	Exhausted bool
	// Interrupted says the search ended before its answer (cancelled, or
	// a point failed to run): Capacity and Bound are then only the
	// highest passing and the lowest failing value its points measured.
	Interrupted bool
}

// at returns a copy of p that runs at request rate rate and concurrency
// conc (0: unlimited), with the SLO's percentiles computed.
func (p *Prepared) at(rate float64, conc int, slo bench.SLO) (*Prepared, error) {
	q := *p
	q.Spec.RequestRate, q.Spec.MaxConcurrency = rate, conc
	q.Spec.PercentileMetrics, q.Spec.MetricPercentiles = slo.PercentileParams(p.Spec.PercentileMetrics, p.Spec.MetricPercentiles)
	pacer, err := newPacer(q.Spec, q.Prompts)
	if err != nil {
		return nil, err
	}
	q.Pacer = pacer
	return &q, nil
}

// Sweep runs every point of the Spec's sweep in order, calling onPoint
// after each (to print and record it). A failed point is a result, not an
// error; an error (a cancelled ctx, onPoint's) stops the sweep and
// returns what ran.
func (p *Prepared) Sweep(ctx context.Context, env Env, onPoint func(SweepPoint) error) (*SweepResult, error) {
	if p.Spec.Sweep == nil {
		return nil, errors.New("the bench has no sweep")
	}
	if err := p.Spec.Validate(); err != nil {
		return nil, err
	}
	w := *p.Spec.Sweep
	res := &SweepResult{Spec: w}
	by := bench.ByRequestRate
	if w.Mode == bench.SweepConcurrency || (w.Mode == bench.SweepSLO && w.By == bench.ByMaxConcurrency) {
		by = bench.ByMaxConcurrency
	}
	run := func(v float64, role string, total int) (*SweepPoint, error) {
		if len(res.Points) > 0 && w.Cooldown > 0 {
			t := time.NewTimer(w.Cooldown)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, context.Cause(ctx)
			}
		}
		// Points that vary the concurrency, and an auto sweep's anchors,
		// send at the run's own request rate: all at once by default, as
		// bench_serving does, and within bench.max_request_rate in a
		// daemon window.
		rate, conc := v, p.Spec.MaxConcurrency
		switch {
		case role == "synchronous":
			rate, conc = p.Spec.RequestRate, 1
		case role == "throughput":
			rate = p.Spec.RequestRate
		case by == bench.ByMaxConcurrency:
			rate, conc = p.Spec.RequestRate, int(v)
		}
		q, err := p.at(rate, conc, w.SLO)
		if err != nil {
			return nil, err
		}
		kv := []any{"msg", "Sweep point", "index", len(res.Points) + 1, by, FormatValue(by, v)}
		if role != "" {
			kv = append(kv, "role", role)
		}
		level.Info(env.Logger).Log(kv...)
		out, err := q.Run(ctx, env)
		if err != nil {
			return nil, err
		}
		pt := SweepPoint{Summary: &out.Summary, Info: bench.SweepInfo{
			Mode: w.Mode, By: by, Index: len(res.Points) + 1, Points: total, Value: v, Role: role,
		}}
		if role != "" {
			// An anchor's value is what it measured: the request rate
			// the server sustained.
			pt.Info.Value = out.Summary.RequestThroughput
		}
		if len(w.SLO) > 0 {
			pt.Info.SLO = w.SLO.Check(&out.Summary)
			for _, vd := range pt.Info.SLO {
				if !vd.Enough {
					level.Warn(env.Logger).Log("msg", "Too few samples for an objective's percentile", "objective", vd.Objective.String(),
						"samples", vd.Samples, "want", bench.MinSamples(vd.Percentile), "hint", "raise --num-prompts")
				}
			}
		}
		out.Summary.Sweep = &pt.Info
		res.Points = append(res.Points, pt)
		if onPoint != nil {
			if err := onPoint(pt); err != nil {
				return nil, err
			}
		}
		return &pt, nil
	}
	switch w.Mode {
	case bench.SweepRates, bench.SweepConcurrency:
		for _, v := range w.Values {
			if _, err := run(v, "", len(w.Values)); err != nil {
				return res, err
			}
		}
	case bench.SweepAuto:
		return res, p.autoSweep(w, run)
	case bench.SweepSLO:
		err := p.search(w, by, res, run)
		if err != nil {
			res.stopped()
		}
		return res, err
	}
	return res, nil
}

// stopped marks a search that ended before its answer and keeps, of its
// bounds, only what its points measured: the highest value that held and
// the lowest that failed.
func (r *SweepResult) stopped() {
	r.Interrupted = true
	r.Capacity, r.Bound, r.Broke = 0, 0, nil
	for _, p := range r.Points {
		if p.Info.Role != "" || len(p.Info.SLO) == 0 {
			continue
		}
		if bench.Passed(p.Info.SLO) {
			r.Capacity = max(r.Capacity, p.Info.Value)
		} else if r.Bound == 0 || p.Info.Value < r.Bound {
			r.Bound = p.Info.Value
		}
	}
}

// autoSweep measures one request at a time and the saturated throughput,
// then w.Points rates evenly spread between the two request rates (as
// GuideLLM's sweep profile does).
func (p *Prepared) autoSweep(w SweepSpec, run func(float64, string, int) (*SweepPoint, error)) error {
	total := w.Points + 2
	sync, err := run(0, "synchronous", total)
	if err != nil {
		return err
	}
	thr, err := run(0, "throughput", total)
	if err != nil {
		return err
	}
	lo, hi := sync.Info.Value, thr.Info.Value
	if !(lo > 0) || !(hi > lo) {
		return fmt.Errorf("auto sweep: the synchronous rate (%.3g req/s) and the saturated throughput (%.3g req/s) leave no range to sweep", lo, hi)
	}
	for i := 1; i <= w.Points; i++ {
		if _, err := run(lo+(hi-lo)*float64(i)/float64(w.Points+1), "", total); err != nil {
			return err
		}
	}
	return nil
}

// search brackets the SLO's limit (doubling up from Start while it holds,
// halving down while it does not) and then bisects, until the bracket is
// within Precision of its passing end or MaxPoints ran.
func (p *Prepared) search(w SweepSpec, by string, res *SweepResult, run func(float64, string, int) (*SweepPoint, error)) error {
	integer := by == bench.ByMaxConcurrency
	round := func(v float64) float64 {
		if integer {
			return max(1, math.Round(v))
		}
		return v
	}
	var lo, hi float64 // highest pass, lowest fail; 0: not yet
	v := round(w.Start)
	for {
		if len(res.Points) >= w.MaxPoints {
			res.Exhausted = true
			break
		}
		pt, err := run(v, "", 0)
		if err != nil {
			return err
		}
		if bench.Passed(pt.Info.SLO) {
			lo = v
		} else {
			hi = v
			res.Broke = failed(pt.Info.SLO)
		}
		switch {
		case lo == 0 && v <= round(w.Start*minSearchRateFraction):
			// Nothing met the SLO down to the floor.
			res.Bound = hi
			res.GridPoints = gridPoints(res.Points, w.Precision)
			return nil
		case lo == 0:
			v = round(v / 2)
		case hi == 0 && v >= w.Max:
			// Met up to the cap: the limit is above what we may try.
			res.Capacity = lo
			res.GridPoints = gridPoints(res.Points, w.Precision)
			return nil
		case hi == 0:
			v = round(min(v*2, w.Max))
		default:
			if (hi-lo)/lo <= w.Precision || (integer && hi-lo <= 1) {
				res.Capacity, res.Bound = lo, hi
				res.GridPoints = gridPoints(res.Points, w.Precision)
				return nil
			}
			v = round((lo + hi) / 2)
			if v == lo || v == hi {
				res.Capacity, res.Bound = lo, hi
				res.GridPoints = gridPoints(res.Points, w.Precision)
				return nil
			}
		}
	}
	res.Capacity, res.Bound = lo, hi
	res.GridPoints = gridPoints(res.Points, w.Precision)
	return nil
}

// failed are the verdicts that did not pass.
func failed(vs []bench.Verdict) []bench.Verdict {
	return slices.DeleteFunc(slices.Clone(vs), func(v bench.Verdict) bool { return v.Pass })
}

// gridPoints is how many points a fixed geometric grid with steps of
// (1+precision) needs to cover the values the search tried: the cost of
// finding the same answer without searching.
func gridPoints(pts []SweepPoint, precision float64) int {
	if len(pts) == 0 {
		return 0
	}
	lo, hi := math.Inf(1), 0.0
	for _, p := range pts {
		lo, hi = min(lo, p.Info.Value), max(hi, p.Info.Value)
	}
	return int(math.Ceil(math.Log(hi/lo)/math.Log(1+precision))) + 1
}

// FormatValue prints a point's value in its unit (req/s or a concurrency).
func FormatValue(by string, v float64) string {
	if by == bench.ByMaxConcurrency {
		return fmt.Sprintf("%d", int(v))
	}
	return fmt.Sprintf("%.4g req/s", v)
}
