package runner

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/prober"
)

// tally is what one objective's samples say so far in a running point.
type tally struct {
	obj bench.Objective
	// target is how many samples the point plans for this objective: its
	// verdict at target samples is what the point decides. 0: unknown (ITL
	// in a point that sends a fixed number of prompts), never decided
	// early.
	target int
	// samples are the values measured, over those above the bound.
	samples, over int
}

// brokenAt is how many of n samples above a bound make the p-th
// percentile exceed it whatever the others are: the summary's percentile
// (NumPy's linear method) interpolates between the samples at ranks
// floor((n-1)p/100) and the next, so it is above the bound once the
// sample at the lower rank is. It never decreases as n grows, so samples
// above the bound that reach brokenAt(target) break the percentile at any
// count up to target.
func brokenAt(p float64, n int) int {
	return n - int(math.Floor(float64(n-1)*p/100))
}

// tailTarget is how many samples put k of them above the p-th
// percentile's rank.
func tailTarget(p float64, k int) int {
	return int(math.Ceil(float64(k)/(1-p/100) - 1e-9))
}

// allowed is how many of a tally's target samples may be over its bound
// with the objective still met: for a percentile, one fewer than
// brokenAt; for the errors objective, MaxPercent of the target requests;
// for the valid objective, the share of the target answers it lets be
// invalid (100 - MinPercent).
func (t *tally) allowed() int {
	switch t.obj.Metric {
	case bench.MetricErrors:
		return int(math.Floor(float64(t.target)*t.obj.MaxPercent/100 + 1e-9))
	case bench.MetricValid:
		return int(math.Floor(float64(t.target)*(100-t.obj.MinPercent)/100 + 1e-9))
	}
	return brokenAt(t.obj.Percentile, t.target) - 1
}

// decide says whether a point can end now, and why: an objective already
// broken beyond what its remaining samples can save ends it at once
// (hard); with sized set, a point whose objectives all reached their
// target, or all pass clearly, ends without sending more (requests in
// flight still finish). Clearly passing is at least bench.MinSamples
// samples with samples above the bound, projected to the target, at most
// half of what the percentile allows.
func decide(ts []tally, sized bool) (ended string, hard bool) {
	done, clear := sized, sized
	for _, t := range ts {
		if t.target <= 0 {
			done, clear = false, false
			continue
		}
		allowed := t.allowed()
		if t.over > allowed {
			return bench.EndedBroken, true
		}
		if t.samples < t.target {
			done = false
		}
		if t.samples < bench.MinSamples(t.obj.Percentile) || float64(t.over)*float64(t.target)/float64(t.samples) > float64(allowed)/2 {
			clear = false
		}
	}
	if done || clear {
		return bench.EndedSamples, false
	}
	return "", false
}

// growing reports whether the later of a point's samples, in the order
// they were scheduled, wait at least twice as long as the earlier ones
// and above floor: a queue that grows for the whole point rather than
// one that settled. It compares the medians of the first and the last
// third, each of at least 20 samples.
func growing(byScheduled []float64, floor float64) bool {
	n := len(byScheduled) / 3
	if n < 20 {
		return false
	}
	first, last := slices.Clone(byScheduled[:n]), slices.Clone(byScheduled[len(byScheduled)-n:])
	slices.Sort(first)
	slices.Sort(last)
	a, b := first[n/2], last[n/2]
	return b > floor && b >= 2*a
}

// settledWaits is how many waits, in the order scheduled, a point needs
// before its queue trend is known: three thirds of at least 20 each.
const settledWaits = 60

// settled reports whether the waits of a point, in the order they were
// scheduled, show a queue that does not grow: at least settledWaits of
// them, and the median of the last third at most half as long again as
// the first third's, or longer by at most floor (seconds; a queue that grows
// from 1 ms to 2 ms is noise, not a trend).
func settled(byScheduled []float64, floor float64) bool {
	n := len(byScheduled) / 3
	if len(byScheduled) < settledWaits {
		return false
	}
	first, last := slices.Clone(byScheduled[:n]), slices.Clone(byScheduled[len(byScheduled)-n:])
	slices.Sort(first)
	slices.Sort(last)
	a, b := first[n/2], last[n/2]
	return b <= 1.5*a || b-a <= floor
}

// trendWaits is the fewest waits, in the order scheduled, on which a
// point's queue is judged to have kept growing (keptGrowing): three thirds
// of at least 10 each.
const trendWaits = 30

// keptGrowing reports whether the waits of a point, in the order they
// were scheduled, show a queue that kept growing through it: at least
// trendWaits of them, the median of the last third at least twice the
// first third's and longer by more than floor (seconds; noise), and the
// middle third's between the two, so that a slow spell within a steady
// point (a server slowed for a moment) is not read as a trend. A
// queue that builds up for the whole point means a rate the server does
// not sustain, however far within the SLO the percentiles of the requests
// that completed so far are: run longer, the point would break it.
func keptGrowing(byScheduled []float64, floor float64) bool {
	n := len(byScheduled) / 3
	if len(byScheduled) < trendWaits {
		return false
	}
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	a, m, b := median(byScheduled[:n]), median(byScheduled[n:len(byScheduled)-n]), median(byScheduled[len(byScheduled)-n:])
	return b >= 2*a && b-a > floor && a <= m && m <= b
}

// waitNoise is the growth of a point's median wait, in seconds, that is
// noise rather than a queue (settled, keptGrowing).
const waitNoise = 0.005

// pointWatch follows a running point of an SLO search and ends it once its
// verdict is certain (see decide). The run feeds it every result; it
// stops dispatching (halt) or cancels the run (cancel, with a cause of
// type pointEnded).
type pointWatch struct {
	sized bool
	halt  atomic.Bool

	mu     sync.Mutex
	ts     []tally
	start  time.Time
	waits  []waitSample // of successes: schedule to first token, and client queue
	ended  string
	cancel context.CancelCauseFunc
}

type waitSample struct {
	at          time.Duration // scheduled, from the point's start
	wait, queue float64       // seconds: Scheduled to first token; Sent − Scheduled
}

// pointEnded is the cause a watch cancels its run with.
type pointEnded struct{ reason string }

func (e pointEnded) Error() string { return "the point's verdict is decided: " + e.reason }

// newPointWatch plans a point of slo: with tail > 0, each objective's
// target is tail samples above its percentile's rank (ITL counts gaps);
// else every objective but ITL plans one sample per request.
//
// The errors and valid objectives plan as many requests (judged answers)
// as the most demanding percentile (sized), or every request (not sized).
func newPointWatch(slo bench.SLO, tail, requests int) *pointWatch {
	w := &pointWatch{sized: tail > 0}
	most := 0
	for _, o := range slo {
		t := tally{obj: o}
		switch {
		case o.Share():
		case tail > 0:
			t.target = tailTarget(o.Percentile, tail)
		case o.Metric != bench.MetricITL:
			t.target = requests
		}
		most = max(most, t.target)
		w.ts = append(w.ts, t)
	}
	for i := range w.ts {
		if w.ts[i].obj.Share() {
			w.ts[i].target = most
			if tail <= 0 {
				w.ts[i].target = requests
			}
		}
	}
	return w
}

// begin arms the watch for a run that starts now and can be cancelled.
func (w *pointWatch) begin(cancel context.CancelCauseFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start, w.cancel = time.Now(), cancel
}

// add counts one finished request and ends the point if its verdict is
// decided.
func (w *pointWatch) add(r *prober.Result) {
	if r.Outcome == prober.OutcomeCanceled {
		return // the run's own cancellation, not the server's failure
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != "" && w.ended != bench.EndedSamples {
		return
	}
	for i := range w.ts {
		if t := &w.ts[i]; t.obj.Metric == bench.MetricErrors {
			t.samples++
			if r.Outcome != prober.OutcomeSuccess {
				t.over++
			}
		}
	}
	if r.Outcome != prober.OutcomeSuccess {
		w.decide()
		return
	}
	if len(r.Checks) > 0 {
		invalid := !bench.ValidAnswer(r.Checks)
		for i := range w.ts {
			if t := &w.ts[i]; t.obj.Metric == bench.MetricValid {
				t.samples++
				if invalid {
					t.over++
				}
			}
		}
	}
	sm := bench.ResultSamples(r)
	for i := range w.ts {
		t := &w.ts[i]
		bound := t.obj.MaxMs / 1000
		count := func(v float64) {
			t.samples++
			if v > bound {
				t.over++
			}
		}
		switch t.obj.Metric {
		case bench.MetricTTFT:
			if prober.Defined(sm.TTFT) {
				count(sm.TTFT.Seconds())
			}
		case bench.MetricE2EL:
			count(max(sm.E2E, 0).Seconds())
		case bench.MetricTPOT:
			if sm.TPOTSeconds >= 0 {
				count(sm.TPOTSeconds)
			}
		case bench.MetricITL:
			for g := range r.ITLGaps(false) {
				for range g.Tokens {
					count(g.PerToken())
				}
			}
		}
	}
	if !r.Scheduled.IsZero() {
		ws := waitSample{at: r.Scheduled.Sub(w.start), queue: max(sm.Queue, 0).Seconds()}
		ws.wait = ws.queue + max(sm.E2E, 0).Seconds()
		if prober.Defined(sm.TTFT) {
			ws.wait = ws.queue + sm.TTFT.Seconds()
		}
		i, _ := slices.BinarySearchFunc(w.waits, ws.at, func(a waitSample, t time.Duration) int { return int(a.at - t) })
		w.waits = slices.Insert(w.waits, i, ws)
	}
	w.decide()
}

// decide ends the point once its verdict is decided (see decide). The
// caller holds mu.
func (w *pointWatch) decide() {
	ended, hard := decide(w.ts, w.sized)
	if ended == bench.EndedSamples && !w.settled() {
		// Enough samples, but not yet enough time to tell a queue that
		// settled from one that grows slowly: a rate just above what the
		// server completes passes its first few hundred requests.
		ended = ""
	}
	// Every 16th sample: the check sorts what the point measured. A
	// queue that keeps building up, on the client (a concurrency slot)
	// or in the server (the wait to the first token), ends the point at
	// once: the rate is past what the server sustains, and every request
	// more only adds to the server's queue.
	if ended == "" && len(w.waits)%16 == 0 && (w.queueGrowing() || (len(w.waits) >= settledWaits && w.keptGrowing())) {
		ended, hard = bench.EndedOverSaturated, true
	}
	if ended == "" || ended == w.ended {
		return
	}
	if ended == bench.EndedBroken && w.waitGrowing() {
		ended = bench.EndedOverSaturated
	}
	w.ended = ended
	if hard && w.cancel != nil {
		w.cancel(pointEnded{ended})
	}
	w.halt.Store(true)
}

// settled: the point's waits from schedule to first token show no
// growing queue (see settled). The caller holds mu.
func (w *pointWatch) settled() bool { return settled(w.waitValues(), waitNoise) }

// keptGrowing: the point's waits from schedule to first token show a
// queue that kept growing (see keptGrowing). The caller holds mu.
func (w *pointWatch) keptGrowing() bool { return keptGrowing(w.waitValues(), waitNoise) }

// waitValues are the waits from schedule to first token, in the order
// scheduled. The caller holds mu.
func (w *pointWatch) waitValues() []float64 {
	v := make([]float64, len(w.waits))
	for i, s := range w.waits {
		v[i] = s.wait
	}
	return v
}

// steady is the point's verdict on its steady state once it ended: false
// when its latency kept growing through it (keptGrowing), which fails the
// point whatever its percentiles say (bench.SweepInfo.Growing).
func (w *pointWatch) steady() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.keptGrowing()
}

// waitGrowing: the wait from schedule to first token grew over the point
// past the tightest latency bound.
func (w *pointWatch) waitGrowing() bool {
	floor := math.Inf(1)
	for _, t := range w.ts {
		if t.obj.Metric == bench.MetricTTFT || t.obj.Metric == bench.MetricE2EL {
			floor = min(floor, t.obj.MaxMs/1000)
		}
	}
	if math.IsInf(floor, 1) {
		return false
	}
	return growing(w.waitValues(), floor)
}

// queueGrowing: requests waited on the client (for a concurrency slot)
// ever longer, the latest over a second: the rate outruns what the
// concurrency lets through, and no objective measured from Sent shows it.
func (w *pointWatch) queueGrowing() bool {
	v := make([]float64, len(w.waits))
	for i, s := range w.waits {
		v[i] = s.queue
	}
	return growing(v, 1)
}

// result is why the point ended early ("" if it did not).
func (w *pointWatch) result() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// haltPacer stops dispatching once halt is set.
type haltPacer struct {
	next prober.Pacer
	halt *atomic.Bool
}

func (h haltPacer) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	if h.halt.Load() {
		return 0, true
	}
	return h.next.Pace(elapsed, sent)
}

// firstN stops a pacer after n requests.
type firstN struct {
	next prober.Pacer
	n    uint64
}

func (f firstN) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	if sent >= f.n {
		return 0, true
	}
	return f.next.Pace(elapsed, sent)
}
