package bench

import (
	"math"
	"slices"
)

// Statistics modes (--stats).
const (
	StatsExact  = "exact"  // every sample kept; NumPy's percentiles
	StatsSketch = "sketch" // inter-token gaps in a Sketch: constant memory
)

// SketchRelativeError is the Sketch's guarantee: a quantile it reports is
// within this fraction of a sample at that quantile's rank.
const SketchRelativeError = 0.01

// Sketch is a mergeable quantile sketch with a relative error guarantee
// (the log-bucket scheme of DDSketch, Masson et al., VLDB 2019): a positive
// value x goes to bucket ceil(log_γ x) with γ = (1+α)/(1-α), and a bucket
// reports 2γ^i/(γ+1), within α of every value in it. Memory is one counter
// per bucket in use: about 1,000 for values from a microsecond to a
// quarter of an hour, whatever the count. Mean, standard deviation and
// maximum are exact (running sums).
type Sketch struct {
	lnGamma float64
	offset  int // bucket index of counts[0]
	counts  []uint64
	zeros   uint64 // values <= 0 (a gap of no time)
	n       uint64
	// Welford's running mean and sum of squared deviations.
	mean, m2 float64
	max      float64
}

// NewSketch returns an empty sketch with relative error alpha.
func NewSketch(alpha float64) *Sketch {
	return &Sketch{lnGamma: math.Log((1 + alpha) / (1 - alpha))}
}

// Add records one value.
func (s *Sketch) Add(x float64) {
	s.n++
	d := x - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (x - s.mean)
	if s.n == 1 || x > s.max {
		s.max = x
	}
	if !(x > 0) {
		s.zeros++
		return
	}
	s.addIndex(int(math.Ceil(math.Log(x)/s.lnGamma)), 1)
}

// Merge adds o's values (two sketches of the same alpha).
func (s *Sketch) Merge(o *Sketch) {
	if o.n == 0 {
		return
	}
	n := s.n + o.n
	d := o.mean - s.mean
	s.m2 += o.m2 + d*d*float64(s.n)*float64(o.n)/float64(n)
	s.mean += d * float64(o.n) / float64(n)
	if s.n == 0 || o.max > s.max {
		s.max = o.max
	}
	s.n, s.zeros = n, s.zeros+o.zeros
	for k, c := range o.counts {
		if c > 0 {
			s.addIndex(o.offset+k, c)
		}
	}
}

// addIndex adds c values to bucket i, growing the counters to reach it.
func (s *Sketch) addIndex(i int, c uint64) {
	switch {
	case len(s.counts) == 0:
		s.offset, s.counts = i, []uint64{0}
	case i < s.offset:
		grown := make([]uint64, len(s.counts)+s.offset-i)
		copy(grown[s.offset-i:], s.counts)
		s.offset, s.counts = i, grown
	case i >= s.offset+len(s.counts):
		s.counts = append(s.counts, make([]uint64, i-s.offset-len(s.counts)+1)...)
	}
	s.counts[i-s.offset] += c
}

// clone is an independent copy of s.
func (s *Sketch) clone() *Sketch {
	c := *s
	c.counts = slices.Clone(s.counts)
	return &c
}

// Count is how many values were added.
func (s *Sketch) Count() int { return int(s.n) }

// Quantile returns the value at quantile q (0..1): the value of rank
// q·(n-1) among the sorted values, within the relative error.
func (s *Sketch) Quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	return s.atRank(int(math.Round(q * float64(s.n-1))))
}

// Stats reports the sketch as Stats, in ms, as ComputeStats reports a
// sample list: mean, standard deviation (NumPy's, over n) and maximum
// exact, the median and percentiles within the relative error.
func (s *Sketch) Stats() Stats {
	if s.n == 0 {
		return Stats{}
	}
	return Stats{
		Mean:   s.mean * 1000,
		Median: s.Quantile(0.5) * 1000,
		Std:    math.Sqrt(s.m2/float64(s.n)) * 1000,
		P90:    s.Quantile(0.9) * 1000,
		P95:    s.Quantile(0.95) * 1000,
		P99:    s.Quantile(0.99) * 1000,
		Max:    s.max * 1000,
	}
}
