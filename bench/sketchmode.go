package bench

import (
	"math"
	"slices"
)

// sketchStats keeps, under StatsSketch, a Sketch per latency list instead
// of a record per request, so that its memory does not grow with the
// requests: the sketches, the running sum the concurrency needs, and the
// peaks on a grid of time slots.
type sketchStats struct {
	ttft, tpot, itl, e2e, queue, e2eQ *Sketch
	ttfat, answerTPOT                 *Sketch
	// answerITL is nil until a success reasoned before gaps it measured:
	// until then the answer's samples are every sample, and itl serves.
	// It starts as a copy of itl, then takes each success's answer samples.
	answerITL         *Sketch
	e2eSum, e2eComp   float64 // Neumaier's compensated sum of e2e
	peaks             peakGrid
	bucketConcurrency bool // CompatBucketConcurrency
}

func newSketchStats(bucketConcurrency bool) *sketchStats {
	n := func() *Sketch { return NewSketch(SketchRelativeError) }
	return &sketchStats{ttft: n(), tpot: n(), itl: n(), e2e: n(), queue: n(), e2eQ: n(), ttfat: n(), answerTPOT: n(), bucketConcurrency: bucketConcurrency}
}

// add folds the request into the sketches and drops its inter-token
// samples from the store, which the next request then reuses.
func (k *sketchStats) add(r reqRec, itl *itlStore) {
	defer itl.truncate(r.itlOff)
	if r.queued {
		k.queue.Add(r.queue)
	}
	if !r.ok {
		return
	}
	if k.answerITL == nil && r.itlAnswer < r.itlLen {
		k.answerITL = k.itl.clone()
	}
	gaps := itl.of(r)
	for g := range gaps.all {
		k.itl.Add(g)
	}
	if k.answerITL != nil {
		for g := range itl.answerOf(r).all {
			k.answerITL.Add(g)
		}
	}
	k.peaks.add(r, gaps, k.bucketConcurrency)
	k.ttft.Add(r.ttft)
	k.e2e.Add(r.e2e)
	if !math.IsNaN(r.tpot) {
		k.tpot.Add(r.tpot)
	}
	if !math.IsNaN(r.ttfat) {
		k.ttfat.Add(r.ttfat)
	}
	if !math.IsNaN(r.answerTPOT) {
		k.answerTPOT.Add(r.answerTPOT)
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

func (k *sketchStats) latencies(*itlStore) latencies {
	l := latencies{ttft: k.ttft, tpot: k.tpot, itl: k.itl, e2e: k.e2e, queue: k.queue, e2eQ: k.e2eQ, ttfat: k.ttfat, answerTPOT: k.answerTPOT,
		e2eSum: k.e2eSum + k.e2eComp}
	l.answerITL = k.itl
	if k.answerITL != nil {
		l.answerITL = k.answerITL
	}
	l.peakTokens, l.peakConcurrent = k.peaks.result(k.bucketConcurrency)
	return l
}

// percentile is the value at percentile p (0 to 100): the distribution's
// view of Quantile.
func (s *Sketch) percentile(p float64) float64 { return s.Quantile(p / 100) }

// gridSlot is the peak grid's resolution.
const gridSlot = 0.01 // seconds

// peakGrid approximates the exact peaks (exactStats.peaks) in memory
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
func (g *peakGrid) add(r reqRec, gaps itlRange, compatBuckets bool) {
	if g.n == 0 || r.start < g.t0 {
		g.t0 = r.start
	}
	g.n++
	cur := r.start + r.ttft
	g.at(cur).tokens += int32(r.firstTok)
	for d := range gaps.all {
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
