package bench

import (
	"cmp"
	"math"
	"slices"
)

// exactStats keeps a record per request and every inter-token sample, for
// NumPy's statistics to the last bit (StatsExact).
type exactStats struct {
	bucketConcurrency bool // CompatBucketConcurrency
	recs              []reqRec
	// itl and the peaks are computed by the first latencies, which sorts
	// the samples in place: the records' ranges no longer hold after it.
	itl exactDist
	// answerITL is the answer's samples, copied out of the store before
	// the sort when some success reasoned before gaps it measured
	// (answerSplit); else the answer's samples are every sample, and it is
	// itl.
	answerITL   exactDist
	answerSplit bool
	peakTok     float64
	peakConc    int
	finished    bool
}

func (e *exactStats) add(r reqRec, itl *itlStore) {
	if !r.ok {
		// Failures keep no inter-token samples except in the details.
		itl.truncate(r.itlOff)
		r.itlLen, r.itlAnswer = 0, 0
	}
	e.answerSplit = e.answerSplit || r.itlAnswer < r.itlLen
	e.recs = append(e.recs, r)
}

func (e *exactStats) latencies(itl *itlStore) latencies {
	recs := e.recs
	// In dispatch order, for NumPy's order-dependent sums.
	slices.SortFunc(recs, func(x, y reqRec) int { return cmp.Compare(x.idx, y.idx) })

	var ttfts, tpots, e2es, queues, e2eQ, ttfats, answerTPOTs []float64
	nITL := 0
	for _, r := range recs {
		if r.queued {
			queues = append(queues, r.queue)
		}
		if !r.ok {
			continue
		}
		ttfts = append(ttfts, r.ttft)
		e2es = append(e2es, r.e2e)
		if !math.IsNaN(r.tpot) {
			tpots = append(tpots, r.tpot)
		}
		if !math.IsNaN(r.ttfat) {
			ttfats = append(ttfats, r.ttfat)
		}
		if !math.IsNaN(r.answerTPOT) {
			answerTPOTs = append(answerTPOTs, r.answerTPOT)
		}
		nITL += r.itlLen
		if r.queued {
			e2eQ = append(e2eQ, r.e2e+r.queue)
		}
	}
	if !e.finished {
		e.finished = true
		e.peakTok, e.peakConc = e.peaks(recs, itl)
		if e.answerSplit {
			e.answerITL = answerDist(recs, itl) // before the sort ends the records' ranges
		}
		if nITL > 0 {
			// The mean and std in dispatch order, then the order
			// statistics sorted in place.
			m := meanAt(nITL, itl.cursor(recs).next)
			sd := stdAround(nITL, m, itl.cursor(recs).next)
			n, sorted := itl.sortInPlace()
			e.itl = newExactDist(m, sd, n, sorted)
		}
		if !e.answerSplit {
			e.answerITL = e.itl
		}
	}
	// Summed before exactOf sorts the list.
	e2eSum := pairwiseSum(e2es)
	return latencies{
		ttft: exactOf(ttfts), tpot: exactOf(tpots), itl: e.itl,
		e2e: exactOf(e2es), queue: exactOf(queues), e2eQ: exactOf(e2eQ),
		ttfat: exactOf(ttfats), answerTPOT: exactOf(answerTPOTs), answerITL: e.answerITL,
		e2eSum: e2eSum, peakTokens: e.peakTok, peakConcurrent: e.peakConc,
	}
}

// answerDist is the exact distribution of the successes' answer samples,
// in dispatch order for the mean and std. They are copied into a store of
// their own (4 bytes a sample, as the run's ITL) to be sorted, since the
// run's store is sorted whole for the ITL.
func answerDist(recs []reqRec, itl *itlStore) exactDist {
	ans := &itlStore{}
	for _, r := range recs {
		if r.ok {
			g := itl.answerOf(r)
			ans.appendRange(itl, g.off, g.n)
		}
	}
	n := ans.len()
	if n == 0 {
		return exactDist{}
	}
	m := meanAt(n, ans.at)
	sd := stdAround(n, m, ans.at)
	n, sorted := ans.sortInPlace()
	return newExactDist(m, sd, n, sorted)
}

// exactDist is an exact distribution: n values of mean m and standard
// deviation sd (taken in the values' order: NumPy's pairwise sums depend on
// it), the i-th smallest being at(i).
type exactDist struct {
	st Stats
	n  int
	at func(int) float64
}

func newExactDist(m, sd float64, n int, sorted func(int) float64) exactDist {
	return exactDist{st: statsOf(m, sd, n, sorted), n: n, at: sorted}
}

// exactOf is the distribution of values, which it sorts in place once
// their mean and std are taken.
func exactOf(values []float64) exactDist {
	if len(values) == 0 {
		return exactDist{}
	}
	at := func(i int) float64 { return values[i] }
	m := meanAt(len(values), at)
	sd := stdAround(len(values), m, at)
	slices.Sort(values)
	return newExactDist(m, sd, len(values), at)
}

func (s exactDist) Stats() Stats { return s.st }

func (s exactDist) Count() int { return s.n }

func (s exactDist) percentile(p float64) float64 { return percentileAt(s.n, s.at, p) }

// peaks computes max_output_tokens_per_s and max_concurrent_requests.
//
// Tokens: bench_serving's 1-second buckets from the earliest start of a
// success, one count at start+ttft and one at each cumulative ITL. With
// per-token ITL that counts tokens; bench_serving on its OpenAI paths has
// one ITL entry per chunk, so its peak counts chunks however many tokens
// each carried, which CompatChunkITL restores.
//
// Concurrency: by default the exact maximum of requests in flight, a sweep
// over [start, end) with departures first at equal times, as vLLM. With
// CompatBucketConcurrency, bench_serving's count of requests touching each
// whole second, which overstates it (a burst of 50 through 8 slots gives 50).
func (e *exactStats) peaks(recs []reqRec, itl *itlStore) (float64, int) {
	var t0, tEnd float64
	n := 0
	for _, r := range recs {
		if !r.ok {
			continue
		}
		if n == 0 || r.start < t0 {
			t0 = r.start
		}
		if end := r.start + r.e2e; n == 0 || end > tEnd {
			tEnd = end
		}
		n++
	}
	if n == 0 {
		return 0, 0
	}
	buckets := int(math.Ceil(tEnd-t0)) + 1
	tokens := make([]int, buckets)
	var conc []int
	if e.bucketConcurrency {
		conc = make([]int, buckets)
	}
	type edge struct {
		t     float64
		delta int
	}
	var edges []edge
	if conc == nil {
		edges = make([]edge, 0, 2*n)
	}
	add := func(t float64, k int) {
		if b := int(t - t0); b >= 0 && b < buckets {
			tokens[b] += k
		}
	}
	for _, r := range recs {
		if !r.ok {
			continue
		}
		cur := r.start + r.ttft
		add(cur, r.firstTok)
		for k := range r.itlLen {
			cur += itl.at(r.itlOff + k)
			add(cur, 1)
		}
		if conc != nil {
			for sec := int(r.start - t0); sec < min(int(r.start+r.e2e-t0)+1, buckets); sec++ {
				conc[sec]++
			}
		} else {
			edges = append(edges, edge{r.start, +1}, edge{r.start + r.e2e, -1})
		}
	}
	peakConc := 0
	if conc != nil {
		peakConc = slices.Max(conc)
	} else {
		slices.SortFunc(edges, func(x, y edge) int {
			if c := cmp.Compare(x.t, y.t); c != 0 {
				return c
			}
			return cmp.Compare(x.delta, y.delta) // -1 (departure) first
		})
		cur := 0
		for _, e := range edges {
			cur += e.delta
			peakConc = max(peakConc, cur)
		}
	}
	return float64(slices.Max(tokens)), peakConc
}
