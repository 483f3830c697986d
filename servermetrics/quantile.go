package servermetrics

import "math"

// Estimate is a quantile estimated from buckets: Value lies in the bucket
// (Lower, Upper]. Upper is +Inf when the rank fell in the last bucket;
// Value is then Lower, the largest finite bound, as histogram_quantile
// returns it, and the true quantile is at least that.
type Estimate struct {
	Value, Lower, Upper float64
}

// Quantile estimates the q-quantile of cumulative buckets (sorted, ending
// with +Inf) as Prometheus's histogram_quantile does for classic
// histograms: find the first bucket whose cumulative count reaches
// q × total, then interpolate linearly between its lower and upper bound,
// taking the lower bound of the first bucket as 0 when its upper bound is
// positive. A cumulative count that falls (a server's counters read
// between two series' updates) is raised to the one before, as Prometheus
// does. It returns ok=false without observations or a +Inf bucket.
func Quantile(q float64, buckets []Bucket) (Estimate, bool) {
	n := len(buckets)
	if n == 0 || !math.IsInf(buckets[n-1].UpperBound, 1) || math.IsNaN(q) || q < 0 || q > 1 {
		return Estimate{}, false
	}
	counts := make([]float64, n)
	for i, b := range buckets {
		counts[i] = b.Count
		if i > 0 && counts[i] < counts[i-1] {
			counts[i] = counts[i-1]
		}
	}
	total := counts[n-1]
	if !(total > 0) || math.IsInf(total, 0) {
		return Estimate{}, false
	}
	rank := q * total
	b := 0
	for b < n-1 && counts[b] < rank {
		b++
	}
	if b == n-1 {
		if n < 2 {
			return Estimate{}, false
		}
		lo := buckets[n-2].UpperBound
		return Estimate{Value: lo, Lower: lo, Upper: math.Inf(1)}, true
	}
	upper := buckets[b].UpperBound
	lower, below := 0.0, 0.0
	switch {
	case b > 0:
		lower, below = buckets[b-1].UpperBound, counts[b-1]
	case upper <= 0:
		return Estimate{Value: upper, Lower: upper, Upper: upper}, true
	}
	in := counts[b] - below
	if in <= 0 {
		return Estimate{Value: upper, Lower: lower, Upper: upper}, true
	}
	return Estimate{Value: lower + (upper-lower)*(rank-below)/in, Lower: lower, Upper: upper}, true
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }
