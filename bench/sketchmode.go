package bench

import (
	"math"
	"slices"
)

// sketches is what the accumulator keeps under StatsSketch instead of a
// record per request, so that its memory does not grow with the requests:
// a Sketch per latency list, the running sum the concurrency needs, and
// the peaks on a grid of time slots.
type sketches struct {
	ttft, tpot, itl, e2e, queue, e2eQ *Sketch
	e2eSum, e2eComp                   float64 // Neumaier's compensated sum of e2e
	requests                          int
	peaks                             peakGrid
}

func newSketches() *sketches {
	n := func() *Sketch { return NewSketch(SketchRelativeError) }
	return &sketches{ttft: n(), tpot: n(), itl: n(), e2e: n(), queue: n(), e2eQ: n()}
}

// add takes a request's record (its ITL samples are read from the store
// by the caller).
func (k *sketches) add(r reqRec) {
	k.requests++
	if r.queued {
		k.queue.Add(r.queue)
	}
	if !r.ok {
		return
	}
	k.ttft.Add(r.ttft)
	k.e2e.Add(r.e2e)
	if !math.IsNaN(r.tpot) {
		k.tpot.Add(r.tpot)
	}
	if r.queued {
		k.e2eQ.Add(r.e2e + r.queue)
	}
	// Neumaier's sum: as exact as NumPy's pairwise sum to within an ulp
	// or two, in constant memory.
	t := k.e2eSum + r.e2e
	if math.Abs(k.e2eSum) >= math.Abs(r.e2e) {
		k.e2eComp += (k.e2eSum - t) + r.e2e
	} else {
		k.e2eComp += (r.e2e - t) + k.e2eSum
	}
	k.e2eSum = t
}

func (k *sketches) sum() float64 { return k.e2eSum + k.e2eComp }

// byMetric is the sketch of a percentile metric.
func (k *sketches) byMetric(m string) *Sketch {
	switch m {
	case MetricTTFT:
		return k.ttft
	case MetricTPOT:
		return k.tpot
	case MetricITL:
		return k.itl
	case MetricE2EL:
		return k.e2e
	case MetricClientQueueTime:
		return k.queue
	case MetricE2ELIncludingClientQueue:
		return k.e2eQ
	}
	return nil
}

// metricStats is a metric's MetricStats from its sketch.
func metricStats(m string, sk *Sketch, percentiles []float64) MetricStats {
	if sk == nil {
		return MetricStats{Metric: m}
	}
	st := sk.Stats()
	ms := MetricStats{Metric: m, Mean: st.Mean, Median: st.Median, Std: st.Std}
	for _, q := range percentiles {
		v := 0.0
		if sk.Count() > 0 {
			v = sk.Quantile(q/100) * 1000
		}
		ms.Percentiles = append(ms.Percentiles, PercentileValue{P: q, Value: v})
	}
	return ms
}

// gridSlot is the peak grid's resolution.
const gridSlot = 0.01 // seconds

// peakGrid approximates the accumulator's peaks (see peaks) in memory
// that grows with the run's duration, not its requests: tokens and
// arrivals and departures of successes counted per 10 ms slot of the time
// since the accumulator's origin. A token peak sums whole slots into the
// 1-second windows from the first success's start, so a window's edges are
// off by at most a slot; the concurrency peak is the count in flight at
// the end of each slot, which misses a request that began and ended within
// one slot. bench_serving's concurrency buckets (CompatBucketConcurrency)
// count the seconds each request touches from the origin.
type peakGrid struct {
	base    int    // slot index of slots[0]
	slots   []slot // per 10 ms
	secBase int
	touch   []int32 // requests touching each second (compat)
	t0      float64 // the earliest start of a success
	n       int
}

type slot struct {
	tokens int32 // tokens that arrived
	flight int32 // arrivals minus departures of successes
}

// grow makes index i of a slice based at *base addressable. Times before
// the origin (requests sent before the first one added) prepend, with
// headroom, so that a run of new earliest times costs amortised O(1).
func grow[T any](s []T, base *int, i int) []T {
	if len(s) == 0 {
		*base = i
	}
	if i < *base {
		n := max(*base-i, len(s)/2)
		s = slices.Insert(s, 0, make([]T, n)...)
		*base -= n
	}
	if k := i - *base; k >= len(s) {
		s = append(s, make([]T, k-len(s)+1)...)
	}
	return s
}

// at is the slot of time t (seconds from the origin).
func (g *peakGrid) at(t float64) *slot {
	i := int(math.Floor(t / gridSlot))
	g.slots = grow(g.slots, &g.base, i)
	return &g.slots[i-g.base]
}

// add counts a success: its first tokens at start+ttft, one at each
// cumulative gap, and its stay in flight.
func (g *peakGrid) add(r reqRec, firstTok int, gaps func(yield func(float64) bool), compatBuckets bool) {
	if g.n == 0 || r.start < g.t0 {
		g.t0 = r.start
	}
	g.n++
	cur := r.start + r.ttft
	g.at(cur).tokens += int32(firstTok)
	for d := range gaps {
		cur += d
		g.at(cur).tokens++
	}
	g.at(r.start).flight++
	g.at(r.start+r.e2e).flight--
	if compatBuckets {
		lo, hi := int(math.Floor(r.start)), int(math.Floor(r.start+r.e2e))
		g.touch = grow(g.touch, &g.secBase, lo)
		g.touch = grow(g.touch, &g.secBase, hi)
		for s := lo; s <= hi; s++ {
			g.touch[s-g.secBase]++
		}
	}
}

// result is max_output_tokens_per_s and max_concurrent_requests.
func (g *peakGrid) result(compatBuckets bool) (float64, int) {
	if g.n == 0 {
		return 0, 0
	}
	windows := map[int]int{}
	best := 0
	for k, sl := range g.slots {
		n := sl.tokens
		if n == 0 {
			continue
		}
		w := int(math.Floor(float64(g.base+k)*gridSlot - g.t0 + 1e-9))
		if w < 0 {
			continue // before the first success: bench_serving's buckets start there
		}
		windows[w] += int(n)
		best = max(best, windows[w])
	}
	conc := 0
	if compatBuckets {
		for _, n := range g.touch {
			conc = max(conc, int(n))
		}
		return float64(best), conc
	}
	cur := 0
	for _, sl := range g.slots {
		cur += int(sl.flight)
		conc = max(conc, cur)
	}
	return float64(best), conc
}
