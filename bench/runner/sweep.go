package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
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
	// Start is the search's first value. 0, the default: a search by
	// request rate first measures one request at a time and then ramps
	// the concurrency (see MaxRampConcurrency) to the server's completion
	// capacity, and searches on a log scale between the two, strictly
	// below the capacity; a search by concurrency starts at 1. Max bounds the values tried (default
	// 1024); MaxPoints bounds the points run, anchors aside (default 20).
	Start, Max float64
	MaxPoints  int
	// PointSamples sizes each point of a search by samples: a point runs
	// until every objective's percentile has this many samples above its
	// rank (ITL counts inter-token gaps), or fewer when it clearly passes
	// or already broke, or until PointTime. The run's NumPrompts (see
	// PointPrompts) then only bounds a point. 0: each point sends
	// NumPrompts, as when the user gave a prompt count.
	PointSamples int
	// PointTime caps a point sized by samples (default 30s).
	PointTime time.Duration
	// Budget bounds a whole search, anchors and pauses included (default
	// 5m; 0: no bound). When it runs out, the search reports what its
	// points measured.
	Budget time.Duration
	// Cooldown is the pause between points, so that a point does not
	// start on the previous one's queue. A search then also waits, up to
	// IdleTimeout, until the server is back at its idle state (its queue
	// gauges at zero, or a probe's TTFT back near one request's at a
	// time); a point that started on a server that never came back says
	// so (SweepInfo.NotIdle).
	Cooldown    time.Duration
	IdleTimeout time.Duration
}

// Defaults of a SweepSpec.
const (
	DefaultSweepPoints    = 5
	DefaultSLOPrecision   = 0.1
	DefaultSLOStart       = 0 // from the anchors (see SweepSpec.Start)
	DefaultSLOMax         = 1024
	DefaultSLOMaxPoints   = 20
	DefaultSLOPointSample = 10
	DefaultSLOPointTime   = 30 * time.Second
	DefaultSLOBudget      = 5 * time.Minute
	DefaultSweepCooldown  = 2 * time.Second
	minSearchRateFraction = 1.0 / 64 // of the first value (or the synchronous rate): below it, nothing meets the SLO
	// syncAnchorRequests is how many requests a search's synchronous
	// anchor sends: it measures a mean rate, not a tail, and one at a
	// time each request costs a whole latency.
	syncAnchorRequests = 32
	// maxDisagreements is how many times the search's answer may fail
	// its confirmation before the search says it has no stable answer.
	maxDisagreements = 2
)

// DefaultSweepSpec is a sweep with every setting at its default and no
// mode: set Mode and its values, or decode a sweep's JSON onto it.
func DefaultSweepSpec() SweepSpec {
	return SweepSpec{Points: DefaultSweepPoints, Cooldown: DefaultSweepCooldown, Precision: DefaultSLOPrecision,
		Start: DefaultSLOStart, Max: DefaultSLOMax, MaxPoints: DefaultSLOMaxPoints,
		PointSamples: DefaultSLOPointSample, PointTime: DefaultSLOPointTime, Budget: DefaultSLOBudget,
		IdleTimeout: DefaultSLOIdleTimeout}
}

// PointPrompts is how many prompts a search sized by samples prepares:
// enough for its most demanding objective's target (one request gives
// each objective at least one sample), with a quarter more for requests
// that fail or are still in flight. Callers set NumPrompts to it when
// the user gave no prompt count.
func (w *SweepSpec) PointPrompts() int {
	n := 0
	for _, o := range w.SLO {
		n = max(n, tailTarget(o.Percentile, w.PointSamples))
	}
	return n + n/4
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
		if !(w.Start >= 0) || math.IsInf(w.Start, 0) {
			p.add("sweep.slo_start", "must be > 0 (or 0: from the anchors), got %v", w.Start)
		}
		if w.PointSamples < 0 {
			p.add("sweep.slo_point_samples", "must be at least 0, got %d", w.PointSamples)
		}
		if w.PointTime <= 0 {
			p.add("sweep.slo_point_time", "must be > 0, got %s", w.PointTime)
		}
		if w.Budget < 0 {
			p.add("sweep.slo_budget", "must be at least 0, got %s", w.Budget)
		}
		if !(w.Max >= w.Start) || !(w.Max > 0) || math.IsInf(w.Max, 0) {
			p.add("sweep.slo_max", "must be finite and at least slo_start (%v), got %v", w.Start, w.Max)
		}
		if w.MaxPoints < 2 {
			p.add("sweep.slo_max_points", "must be at least 2, got %d", w.MaxPoints)
		}
		if w.IdleTimeout < 0 {
			p.add("sweep.slo_idle_timeout", "must be at least 0, got %s", w.IdleTimeout)
		}
	default:
		p.add("sweep", "unknown sweep mode %q", w.Mode)
	}
	if w.Cooldown < 0 {
		p.add("sweep.cooldown", "must be at least 0")
	}
	if s.replaysTimestamps() || s.RampUp != "" {
		p.add("sweep", "a sweep sets the request rate or concurrency of each point; it cannot replay trace timestamps or ramp up")
	}
}

// SweepPoint is one finished point.
type SweepPoint struct {
	Info    bench.SweepInfo
	Summary *bench.Summary
}

// SweepResult is a finished sweep or search. For an SLO search, its
// answer is the embedded bench.SearchAnswer, filled as the search runs:
// the one answer that the table, the JSONL, the API and the gauges read.
// A rate at or above its Saturation (the completion capacity the
// concurrency ramp measured) queues without end, so Saturation is the
// search's bound until a point fails lower, and the answer is strictly
// below it.
type SweepResult struct {
	Spec   SweepSpec
	Points []SweepPoint
	bench.SearchAnswer
	// rampCap is the concurrency at which the ramp stopped only because
	// it reached its cap, and rampPrompts the prompt count that stopped
	// it (rampMinRounds) while the throughput still rose (0: it stopped
	// for the server's sake).
	rampCap, rampPrompts int
	// judge is the SLO the search's points are judged by: the spec's,
	// or, once the errors proved not to fall with the load
	// (SteadyErrors), the same with the errors objective at its Allowed.
	judge bench.SLO
}

// errBudget is the cause of a search's context when its budget runs out.
var errBudget = errors.New("the SLO search's budget ran out")

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
// returns what ran. An SLO search whose budget runs out is no error: its
// result says so and keeps only what its points measured.
func (p *Prepared) Sweep(ctx context.Context, env Env, onPoint func(SweepPoint) error) (*SweepResult, error) {
	if p.Spec.Sweep == nil {
		return nil, errors.New("the bench has no sweep")
	}
	if err := p.Spec.Validate(); err != nil {
		return nil, err
	}
	if env.Logger == nil {
		env.Logger = log.NewNopLogger()
	}
	w := *p.Spec.Sweep
	res := &SweepResult{Spec: w}
	by := bench.ByRequestRate
	if w.Mode == bench.SweepConcurrency || (w.Mode == bench.SweepSLO && w.By == bench.ByMaxConcurrency) {
		by = bench.ByMaxConcurrency
	}
	search := w.Mode == bench.SweepSLO
	var deadline time.Time
	if search && w.Budget > 0 {
		// The deadline is a backstop: each point is capped to end before
		// it, so that a point is rarely cut without a summary. It cancels
		// rather than expires, so that a request it cuts is classified
		// canceled, ours, as the point's own cap's are, and not a
		// timeout, the server's failure.
		deadline = time.Now().Add(w.Budget)
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		stop := time.AfterFunc(w.Budget, func() { cancel(errBudget) })
		defer func() { stop.Stop(); cancel(nil) }()
	}
	pause := WarmupPause
	if env.PauseAfterWarmup != nil {
		pause = *env.PauseAfterWarmup
	}
	idle := &idleWatch{p: p, client: env.ServerMetrics.Client}
	run := func(v float64, role string, total int) (*SweepPoint, error) {
		cooldown := time.Duration(0)
		if len(res.Points) > 0 {
			cooldown = w.Cooldown
		}
		if !deadline.IsZero() && time.Until(deadline) < cooldown+pause+minPointTime {
			return nil, errBudget
		}
		if cooldown > 0 {
			t := time.NewTimer(cooldown)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, context.Cause(ctx)
			}
		}
		var waited time.Duration
		notIdle := false
		if search && w.IdleTimeout > 0 {
			timeout := w.IdleTimeout
			if !deadline.IsZero() {
				timeout = min(timeout, time.Until(deadline)-pause-minPointTime)
			}
			if timeout <= 0 {
				return nil, errBudget
			}
			d, ok, err := idle.wait(ctx, timeout)
			if err != nil {
				return nil, err
			}
			waited = d
			if notIdle = !ok; notIdle {
				level.Warn(env.Logger).Log("msg", "The server did not return to its idle state before the point", "waited", waited.Round(time.Millisecond),
					"index", len(res.Points)+1)
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
		case role == "ramp":
			rate, conc = p.Spec.RequestRate, int(v)
		case role == "throughput":
			rate = p.Spec.RequestRate
		case by == bench.ByMaxConcurrency:
			rate, conc = p.Spec.RequestRate, int(v)
		case res.PeakConcurrency > 0:
			// The ramp measured the server: a rate point keeps no more in
			// flight than the ramp did (nor than the run's own limit).
			if c := searchConcurrency(rampStep{Concurrency: res.PeakConcurrency}); conc == 0 || c < conc {
				conc = c
			}
		}
		slo := w.SLO
		if res.judge != nil {
			slo = res.judge
		}
		q, err := p.at(rate, conc, slo)
		if err != nil {
			return nil, err
		}
		if role == "ramp" {
			q.Pacer = firstN{next: q.Pacer, n: uint64(rampRequests(int(v)))}
		}
		if search {
			if w.PointSamples > 0 && (q.Spec.MaxDuration == 0 || w.PointTime < q.Spec.MaxDuration) {
				q.Spec.MaxDuration = w.PointTime
			}
			if role != "" && w.Budget > 0 && (q.Spec.MaxDuration == 0 || w.Budget/anchorShare < q.Spec.MaxDuration) {
				// The anchors only place the search: they must leave it
				// most of the budget.
				q.Spec.MaxDuration = w.Budget / anchorShare
			}
			q.deadline = deadline
			switch role {
			case "synchronous":
				q.Pacer = firstN{next: q.Pacer, n: syncAnchorRequests}
			case "":
				q.watch = newPointWatch(slo, w.PointSamples, q.Prompts.Requests())
			}
		}
		kv := []any{"msg", "Sweep point", "index", len(res.Points) + 1}
		switch role {
		case "":
			kv = append(kv, by, bench.FormatValue(by, v))
		case "ramp":
			kv = append(kv, "role", role, "max_concurrency", conc)
		default:
			kv = append(kv, "role", role)
		}
		level.Info(env.Logger).Log(kv...)
		out, err := q.Run(ctx, env)
		if err != nil {
			return nil, err
		}
		if search && role == "" && out.Summary.Stopped == bench.EndedBudget && measuredNothing(slo.Check(&out.Summary)) {
			// The budget ran out before the point ended a request it
			// could judge (the idle wait and the warm-up spent what was
			// left; a request the deadline cut is not the server's
			// failure): it neither held nor failed, and the search ends
			// as any search whose budget ran out.
			return nil, errBudget
		}
		pt := SweepPoint{Summary: &out.Summary, Info: bench.SweepInfo{
			Mode: w.Mode, By: by, Index: len(res.Points) + 1, Points: total, Value: v, Role: role,
			IdleWait: waited.Seconds(), NotIdle: notIdle,
		}}
		if role == "ramp" {
			pt.Info.Concurrency = int(v)
		}
		if role == "synchronous" {
			idle.setBaseline(out.Summary.TTFT.Median)
		}
		if role != "" {
			// An anchor's value is what it measured: the request rate
			// the server sustained.
			pt.Info.Value = out.Summary.RequestThroughput
		}
		if q.watch != nil && !q.watch.steady() {
			pt.Info.Growing = true
		}
		if len(slo) > 0 {
			pt.Info.SLO = slo.Check(&out.Summary)
			pt.Info.Ended, pt.Info.Samples = pointEnd(out.Summary.Stopped, pt.Info.SLO)
			hint := "raise --num-prompts"
			switch {
			case pt.Info.Ended == bench.EndedBudget:
				hint = "raise --slo-budget"
			case w.PointSamples > 0:
				hint = "raise --slo-point-time"
			}
			for _, vd := range pt.Info.SLO {
				if !vd.Enough && role == "" {
					level.Warn(env.Logger).Log("msg", "Too few samples for an objective's percentile", "objective", vd.Objective.String(),
						"samples", vd.Samples, "want", bench.MinSamples(vd.Percentile), "hint", hint)
				}
			}
		}
		out.Summary.Sweep = &pt.Info
		res.Points = append(res.Points, pt)
		if search {
			res.PointCount++
			res.RequestCount += out.Summary.Requests
			if notIdle {
				res.NotIdlePoints = append(res.NotIdlePoints, pt.Info.Index)
			}
		}
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
		return res, p.autoSweep(w, res, run)
	case bench.SweepSLO:
		err := p.search(w, by, res, run)
		if err != nil {
			res.stopped()
		}
		if errors.Is(err, errBudget) && (ctx.Err() == nil || errors.Is(context.Cause(ctx), errBudget)) {
			res.OverBudget = true
			if res.Capacity > 0 {
				// What held is only what the budget let the search reach.
				res.BoundedBy, res.BoundLimit = bench.BoundedBudget, w.Budget.Seconds()
			}
			return res, nil
		}
		if errors.Is(err, ErrMemoryBudget) && ctx.Err() == nil {
			// A point outgrew the memory a bench window may hold: a
			// limit of ours, like the budget, and what held below it
			// stands as a lower bound.
			res.OverMemory = true
			if res.Capacity > 0 {
				res.BoundedBy, res.BoundLimit = bench.BoundedMemory, float64(env.MemoryBudget)
			}
			return res, nil
		}
		return res, err
	}
	return res, nil
}

// minPointRequests is the fewest requests a point sized by samples must
// be able to complete within its time for the search to try its rate.
const minPointRequests = 10

// anchorShare: each of a search's anchors runs for at most this fraction
// of its budget.
const anchorShare = 10

// minPointTime is the least time left in a search's budget that is worth
// starting a point for (besides its cooldown and warmup pause).
const minPointTime = 2 * time.Second

// measuredNothing says whether none of a point's objectives had a sample.
func measuredNothing(vs []bench.Verdict) bool {
	for _, v := range vs {
		if v.Samples > 0 {
			return false
		}
	}
	return true
}

// pointEnd is why a search's point ended early, from its summary's
// Stopped reason, and how many samples decided it: those of the
// objective that broke, else the fewest any objective had.
func pointEnd(stopped string, vs []bench.Verdict) (string, int) {
	ended := ""
	switch stopped {
	case bench.StoppedMaxDuration:
		ended = bench.EndedTime
	case bench.EndedSamples, bench.EndedBroken, bench.EndedOverSaturated, bench.EndedBudget:
		ended = stopped
	}
	samples := -1
	for _, v := range vs {
		if !v.Pass {
			return ended, v.Samples
		}
		if samples < 0 || v.Samples < samples {
			samples = v.Samples
		}
	}
	return ended, max(samples, 0)
}

// stopped marks a search that ended before its answer and keeps, of its
// bounds, only what its points measured: the highest value that held and
// the lowest that failed.
func (r *SweepResult) stopped() {
	r.Interrupted = true
	r.Broke, r.BrokeGrowing = nil, false
	r.Capacity, r.Bound = r.measured()
}

// autoSweep measures one request at a time and ramps the concurrency to
// the completion capacity (as an SLO search does: never all at once),
// then runs w.Points rates evenly spread between the synchronous rate and
// the capacity (as GuideLLM's sweep profile does between its anchors).
// The records' Points is unknown until the ramp ends.
func (p *Prepared) autoSweep(w SweepSpec, res *SweepResult, run func(float64, string, int) (*SweepPoint, error)) error {
	sync, err := p.ramp(res, 0, run)
	if err != nil {
		return fmt.Errorf("auto sweep: %w", err)
	}
	lo, hi := sync.Info.Value, res.Saturation
	if !(lo > 0) || !(hi > lo) {
		return fmt.Errorf("auto sweep: the synchronous rate (%.3g req/s) and the completion capacity (%.3g req/s) leave no range to sweep", lo, hi)
	}
	total := len(res.Points) + w.Points
	for i := 1; i <= w.Points; i++ {
		if _, err := run(lo+(hi-lo)*float64(i)/float64(w.Points+1), "", total); err != nil {
			return err
		}
	}
	return nil
}

// search brackets the SLO's limit and then bisects, until the bracket is
// within Precision of its passing end or MaxPoints ran (anchors aside),
// and then runs the answer a second time: an answer is a rate that held
// twice. One that fails its second run is a bound; the search goes on
// below it, and says it has no stable answer after maxDisagreements.
//
// From a given Start (and always by concurrency) it doubles up while the
// SLO holds, halves down while it does not, and bisects in the middle.
// Otherwise, by request rate, it first measures one request at a time
// and ramps the concurrency to the server's completion capacity (see
// rampNext), which never floods the server. A rate at or above that
// capacity queues without end, so the capacity is the bracket's failing
// end until a point fails lower: the search starts one precision step
// below it, halves down to no lower than the synchronous rate while it
// fails, and bisects on a log scale (the geometric mean), so that a
// bracket spanning a factor of ten costs no more than one spanning a
// factor of two near the answer.
func (p *Prepared) search(w SweepSpec, by string, res *SweepResult, run func(float64, string, int) (*SweepPoint, error)) error {
	// The settings the answer's words name, as this search ran with them.
	a := &res.SearchAnswer
	a.SLO, a.By, a.Precision, a.IdleTimeout = w.SLO.String(), by, w.Precision, w.IdleTimeout
	a.Budget, a.PointTime, a.MaxPoints, a.MinPointRequests = w.Budget, w.PointTime, w.MaxPoints, minPointRequests
	integer := by == bench.ByMaxConcurrency
	round := func(v float64) float64 {
		if integer {
			return max(1, math.Round(v))
		}
		return v
	}
	var lo, hi float64     // highest pass, lowest fail (or the capacity); 0: not yet
	var syncPt *SweepPoint // the one-at-a-time anchor, when the search ran one
	start, down, geometric := w.Start, 0.0, false
	if start == 0 && !integer {
		sync, err := p.ramp(res, 0, run)
		if err != nil {
			return fmt.Errorf("SLO search: %w", err)
		}
		top := res.Saturation
		down = sync.Info.Value
		if !(down > 0 && down < top) {
			// No range between the anchors (a server that runs one
			// request at a time): search below the throughput.
			down = top / 8
		}
		hi = top
		start, geometric = min(top/(1+w.Precision), w.Max), true
		syncPt = sync
		if r := p.Spec.RequestRate; r > 0 && !math.IsInf(r, 1) && top*(1+rampGain) >= r {
			// The ramp's steps were paced at the run's own request rate
			// and reached it: the completion capacity is our limit, not
			// the server's, and no bound on the search. It may go up to
			// Max; if the SLO holds there, the answer names the limit.
			hi = 0
		}
	}
	if start == 0 {
		start = 1
	}
	floor := round(start * minSearchRateFraction)
	if geometric {
		floor = down * minSearchRateFraction
	}
	done := func() error {
		res.Capacity, res.Bound = lo, hi
		if lo > 0 && !res.Unstable {
			res.BoundedBy, res.BoundLimit = p.boundedBy(w, by, res, hi, lo)
		}
		// The grid covers the values tried and, after the anchors, the
		// whole range they placed the search in.
		pts := searchPoints(res.Points)
		if geometric {
			pts = append(pts, SweepPoint{Info: bench.SweepInfo{Value: down}}, SweepPoint{Info: bench.SweepInfo{Value: res.Saturation}})
		}
		res.GridPoints = gridPoints(pts, w.Precision)
		return nil
	}
	// A point sized by samples lasts at most PointTime: at a rate that
	// completes fewer than minPointRequests in it, its verdict would rest
	// on a handful of requests, so the search goes no lower.
	minRate := 0.0
	if w.PointSamples > 0 && !integer {
		minRate = minPointRequests / w.PointTime.Seconds()
	}
	down2 := func(n float64) (float64, bool) {
		if n < minRate {
			res.TooFewBelow = minRate
			return 0, true
		}
		return n, false
	}
	// next is the value after a point at v, or stop once the bracket is
	// within the precision or an end of the range is reached.
	next := func(v float64) (float64, bool) {
		switch {
		case lo == 0 && v <= floor:
			// Nothing met the SLO down to the floor.
			return 0, true
		case lo == 0 && geometric && v > down:
			// Halve, to no lower than the synchronous rate, but step
			// down by at least the precision: on a server whose
			// throughput hardly rises with concurrency (ollama on two
			// cores), the synchronous rate is a few percent below the
			// first point, and a point that close to one that failed
			// fails too, and costs a whole point.
			return down2(min(max(v/2, down), v/(1+w.Precision)))
		case lo == 0:
			return down2(round(v / 2))
		case hi == 0 && v >= w.Max:
			// Met up to the cap: the limit is above what we may try.
			return 0, true
		case hi == 0:
			return round(min(v*2, w.Max)), false
		}
		// 1e-9: the first point, one precision step below the capacity,
		// brackets it within the precision up to rounding.
		if (hi-lo)/lo <= w.Precision*(1+1e-9) || (integer && hi-lo <= 1) {
			return 0, true
		}
		n := round((lo + hi) / 2)
		if geometric {
			n = math.Sqrt(lo * hi)
		}
		return n, n == lo || n == hi
	}
	v, confirming := round(start), false
	for points := 0; ; points++ {
		if points >= w.MaxPoints {
			res.Exhausted = true
			return done()
		}
		pt, err := run(v, "", 0)
		if err != nil {
			return err
		}
		switch {
		case pt.Info.Passed() && confirming && pt.Info.Ended == bench.EndedBudget:
			// Cut short by the budget: a few requests confirm nothing,
			// and the budget is spent.
			return errBudget
		case pt.Info.Passed() && confirming:
			res.Confirmed = true
			return done()
		case pt.Info.Passed():
			lo = v
		case res.judge == nil && syncPt != nil && steadyErrors(res, w.SLO, syncPt, pt):
			// The errors do not fall with the load: the point is judged
			// again, by the relaxed errors objective (res.judge).
			continue
		default:
			hi = v
			res.Broke, res.BrokeGrowing = failed(pt.Info.SLO), pt.Info.Growing
			if confirming {
				// The answer failed its second run: it is a bound now,
				// and the highest value that never failed below it is
				// the new passing end.
				res.Disagreements++
				if res.Disagreements >= maxDisagreements {
					res.Unstable = true
					lo = heldBelow(res.Points, hi)
					return done()
				}
				lo = heldBelow(res.Points, hi)
			}
		}
		confirming = false
		n, stop := next(v)
		if !stop {
			v = n
			continue
		}
		if lo > 0 && hi > 0 {
			v, confirming = lo, true
			continue
		}
		return done()
	}
}

// ramp measures one request at a time and then ramps the concurrency
// (see rampNext) to the server's completion capacity, which it sets in
// res with the peak concurrency and why the ramp stopped. total is the
// points' total for their records (0: not known).
func (p *Prepared) ramp(res *SweepResult, total int, run func(float64, string, int) (*SweepPoint, error)) (*SweepPoint, error) {
	sync, err := run(0, "synchronous", total)
	if err != nil {
		return nil, err
	}
	steps := []rampStep{stepOf(1, sync)}
	for {
		limit := rampLimit(p.Spec.MaxConcurrency)
		c, why := rampNext(steps, limit)
		// (A search's unit tests hand it points, not prompts.)
		if p.Prompts != nil && c > 0 && p.Prompts.Requests() < rampMinRounds*c {
			n := p.Prompts.Requests()
			c, why = 0, rampPromptsWhy(n, c)
			res.rampPrompts = n
		}
		if c == 0 {
			res.RampStop = why
			if why == rampCapWhy(limit) {
				res.rampCap = limit
			}
			break
		}
		pt, err := run(float64(c), "ramp", total)
		if err != nil {
			return nil, err
		}
		steps = append(steps, stepOf(c, pt))
	}
	peak := rampPeak(steps)
	if !(peak.Throughput > 0) {
		return nil, fmt.Errorf("the concurrency ramp completed no request (%s)", res.RampStop)
	}
	res.Saturation, res.PeakConcurrency = peak.Throughput, peak.Concurrency
	return sync, nil
}

// stepOf is what a ramp step (or the synchronous anchor, concurrency 1)
// measured.
func stepOf(conc int, pt *SweepPoint) rampStep {
	s := pt.Summary
	step := rampStep{Concurrency: conc, Throughput: s.RequestThroughput, TTFTMedianMs: s.TTFT.Median,
		ErrorPercent: bench.ErrorPercent(s.ServerFailed(), s.Requests-s.Cut()), Waiting: -1}
	for _, r := range s.Server {
		if g, ok := r.Gauge(servermetrics.Waiting); ok && g.Samples > 0 {
			step.Waiting = max(step.Waiting, 0) + g.Peak
		}
	}
	return step
}

// heldBelow is the highest value below v at which every search point
// passed (0: none).
func heldBelow(pts []SweepPoint, v float64) float64 {
	fails := map[float64]bool{}
	for _, p := range searchPoints(pts) {
		if !p.Info.Passed() {
			fails[p.Info.Value] = true
		}
	}
	best := 0.0
	for _, p := range searchPoints(pts) {
		if x := p.Info.Value; x < v && p.Info.Passed() && !fails[x] {
			best = max(best, x)
		}
	}
	return best
}

// searchPoints are a search's points without its anchors.
func searchPoints(pts []SweepPoint) []SweepPoint {
	return slices.DeleteFunc(slices.Clone(pts), func(p SweepPoint) bool { return p.Info.Role != "" })
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

// rampCapWhy is why the ramp stops at its cap (rampNext).
func rampCapWhy(limit int) string { return fmt.Sprintf("the ramp's cap (%d)", limit) }

// boundedBy names the limit of ours that bounded a search whose highest
// passing value is lo and failing end hi (0: none), and its value; ""
// when a point the server failed bounds it. By request rate, the ramp's
// completion capacity is the failing end until a point fails lower: when
// the ramp stopped at its concurrency cap, or for want of prompts, that
// capacity is ours.
func (p *Prepared) boundedBy(w SweepSpec, by string, res *SweepResult, hi, lo float64) (string, float64) {
	switch {
	case hi == 0 && lo >= w.Max:
		// The SLO held up to the search's maximum; in a bench window
		// that is the daemon's limit unless the body lowered it.
		if by == bench.ByRequestRate && p.Spec.RequestRate > 0 && w.Max >= p.Spec.RequestRate {
			return bench.BoundedRequestRate, p.Spec.RequestRate
		}
		if by == bench.ByMaxConcurrency && p.Spec.MaxConcurrency > 0 && w.Max >= float64(p.Spec.MaxConcurrency) {
			return bench.BoundedConcurrency, float64(p.Spec.MaxConcurrency)
		}
		return bench.BoundedSLOMax, w.Max
	case hi == 0 && res.Exhausted:
		// Still climbing when the point limit ran out.
		return bench.BoundedMaxPoints, float64(w.MaxPoints)
	case hi > 0 && hi == res.Saturation && res.rampCap > 0:
		return bench.BoundedConcurrency, float64(res.rampCap)
	case hi > 0 && hi == res.Saturation && res.rampPrompts > 0:
		return bench.BoundedPrompts, float64(res.rampPrompts)
	}
	return "", 0
}

// steadyErrors decides whether a search point that failed shows errors
// that do not fall with the load: it failed only its errors objective,
// and one request at a time (the synchronous anchor) failed more than the
// objective allows and at least half as often as the point. It then sets
// res.SteadyErrors and res.judge, the SLO with the errors objective at
// twice the pooled share, and says so.
func steadyErrors(res *SweepResult, slo bench.SLO, sync, pt *SweepPoint) bool {
	i := slices.IndexFunc(slo, func(o bench.Objective) bool { return o.Metric == bench.MetricErrors })
	if i < 0 {
		return false
	}
	for _, v := range pt.Info.SLO {
		if !v.Pass && v.Metric != bench.MetricErrors {
			return false
		}
	}
	share := func(s *bench.Summary) (failed, requests int) { return s.ServerFailed(), s.Requests - s.Cut() }
	sf, sn := share(sync.Summary)
	pf, pn := share(pt.Summary)
	syncPct, ptPct := bench.ErrorPercent(sf, sn), bench.ErrorPercent(pf, pn)
	if sf == 0 || syncPct <= slo[i].MaxPercent || 2*syncPct < ptPct {
		return false
	}
	e := &bench.SteadyErrors{Percent: bench.ErrorPercent(sf+pf, sn+pn), Requests: sn + pn, Outcomes: map[string]int{}}
	for _, s := range []*bench.Summary{sync.Summary, pt.Summary} {
		for o, n := range s.Outcomes {
			if o != prober.OutcomeSuccess && o != prober.OutcomeCanceled && n > 0 {
				e.Outcomes[string(o)] += n
			}
		}
	}
	e.Allowed = max(slo[i].MaxPercent, 2*e.Percent)
	res.SteadyErrors = e
	res.judge = slices.Clone(slo)
	res.judge[i].MaxPercent = e.Allowed
	return true
}
