package servermetrics

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Report is what the server's endpoint says about one run.
type Report struct {
	// Source is the endpoint's URL.
	Source string
	// Missing, if set, says why there are no numbers (the endpoint did
	// not answer, was too slow, too large or not Prometheus text, or
	// exposes no metric of a known engine).
	Missing string
	// Engine is the engine whose names the endpoint exposes, one of
	// Engines.
	Engine    string
	Latencies []Latency
	Counters  []Count
	Gauges    []GaugeStats
	// PrefixHitRate is the prefix cache's hit tokens over queried tokens
	// in the run (vLLM), or cached prompt tokens over prompt tokens
	// (sglang); NaN when the server exposes neither or queried nothing.
	PrefixHitRate float64
	// Samples are the gauges read through the run, the first at its
	// start and the last at its end.
	Samples []Sample
	// SampleCount, when not 0, is how many samples were read: a report
	// read back from a JSONL record holds only the evenly thinned series
	// the record keeps (bench.ServerSeries) in Samples.
	SampleCount int
	// SampleErrors counts the reads during the run that failed (their
	// samples are missing, nothing else).
	SampleErrors int
	// Notes say what the numbers cannot: a counter that fell (the server
	// restarted), a histogram whose layout changed.
	Notes []string
	// Unknown are the engine families the endpoint exposes that the
	// table does not read.
	Unknown []string
	// Energy is the GPUs' energy over the run when the endpoint is a DCGM
	// exporter (energy.go); nil otherwise.
	Energy *Energy
}

// Latency is one server histogram over the run, in seconds.
type Latency struct {
	Kind   Kind
	Metric string
	// Count is the observations in the run; Mean is their sum over Count,
	// exact.
	Count, Mean float64
	// P50, P90 and P99 are bucket estimates (Quantile); zero when Count
	// is 0.
	P50, P90, P99 Estimate
}

// Count is one server counter's increase over the run.
type Count struct {
	Kind   Kind
	Metric string
	Delta  float64
}

// GaugeStats is one gauge over the samples of the run.
type GaugeStats struct {
	Kind    Kind
	Metric  string
	Peak    float64
	Mean    float64
	Samples int
}

// Sample is the gauges read at one moment, Offset after the run's start.
type Sample struct {
	Offset time.Duration
	Values map[Kind]float64
}

// SamplesRead is how many times the gauges were read through the run:
// SampleCount when set, else len(Samples).
func (r *Report) SamplesRead() int {
	if r.SampleCount > 0 {
		return r.SampleCount
	}
	return len(r.Samples)
}

// Latency returns the histogram of kind k, if the server exposes it.
func (r *Report) Latency(k Kind) (Latency, bool) {
	for _, l := range r.Latencies {
		if l.Kind == k {
			return l, true
		}
	}
	return Latency{}, false
}

// Count returns the counter of kind k's increase, if the server exposes it.
func (r *Report) Count(k Kind) (float64, bool) {
	for _, c := range r.Counters {
		if c.Kind == k {
			return c.Delta, true
		}
	}
	return 0, false
}

// Gauge returns the gauge of kind k over the run, if sampled.
func (r *Report) Gauge(k Kind) (GaugeStats, bool) {
	for _, g := range r.Gauges {
		if g.Kind == k {
			return g, true
		}
	}
	return GaugeStats{}, false
}

// pick returns the preferred name of kind k that exists in the
// snapshot.
func pick(k Kind, has func(string) bool) (Name, bool) {
	for _, n := range Names {
		if n.Kind == k && has(n.Metric) {
			return n, true
		}
	}
	return Name{}, false
}

// GaugeValues reads the gauges of a snapshot by kind: a count summed over
// series, KV-cache usage (a fraction per engine) averaged over them.
func GaugeValues(s *Snapshot) map[Kind]float64 {
	v := map[Kind]float64{}
	for _, k := range GaugeKinds {
		n, ok := pick(k, func(m string) bool { _, ok := s.Gauges[m]; return ok })
		if !ok {
			continue
		}
		g := s.Gauges[n.Metric]
		if k == KVUsage {
			v[k] = g.Sum / float64(g.Series)
		} else {
			v[k] = g.Sum
		}
	}
	addGPUPower(s, v)
	return v
}

// Compute turns the reads at the start and end of a run and the samples
// in between into a Report. A family that appears only at the end (an
// engine that creates its series on the first request) counts from zero.
func Compute(start, end *Snapshot, samples []Sample) Report {
	r := Report{PrefixHitRate: math.NaN(), Samples: samples, Unknown: end.Unknown, Energy: computeEnergy(start, end, samples)}
	engines := map[string]int{}
	for _, k := range LatencyKinds {
		n, ok := pick(k, func(m string) bool { _, ok := end.Histograms[m]; return ok })
		if !ok {
			continue
		}
		engines[n.Engine]++
		e := end.Histograms[n.Metric]
		s, ok := start.Histograms[n.Metric]
		if !ok {
			s = Histogram{Buckets: make([]Bucket, len(e.Buckets))}
			for i, b := range e.Buckets {
				s.Buckets[i].UpperBound = b.UpperBound
			}
		}
		d, why := deltaHistogram(s, e)
		if why != "" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s not read: %s", n.Metric, why))
			continue
		}
		l := Latency{Kind: k, Metric: n.Metric, Count: d.Count}
		if d.Count > 0 {
			l.Mean = d.Sum / d.Count
			l.P50, _ = Quantile(0.5, d.Buckets)
			l.P90, _ = Quantile(0.9, d.Buckets)
			l.P99, _ = Quantile(0.99, d.Buckets)
		}
		r.Latencies = append(r.Latencies, l)
	}
	for _, k := range CounterKinds {
		n, ok := pick(k, func(m string) bool { _, ok := end.Counters[m]; return ok })
		if !ok {
			continue
		}
		engines[n.Engine]++
		d := end.Counters[n.Metric] - start.Counters[n.Metric]
		if d < 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s not read: it fell during the run (the server restarted)", n.Metric))
			continue
		}
		r.Counters = append(r.Counters, Count{Kind: k, Metric: n.Metric, Delta: d})
	}
	for _, k := range GaugeKinds {
		n, ok := pick(k, func(m string) bool { _, ok := end.Gauges[m]; return ok })
		if !ok {
			n, ok = pick(k, func(m string) bool { _, ok := start.Gauges[m]; return ok })
		}
		g := GaugeStats{Kind: k, Metric: n.Metric}
		var sum float64
		for _, s := range samples {
			v, ok := s.Values[k]
			if !ok {
				continue
			}
			if g.Samples == 0 || v > g.Peak {
				g.Peak = v
			}
			sum += v
			g.Samples++
		}
		if !ok || g.Samples == 0 {
			continue
		}
		engines[n.Engine]++
		g.Mean = sum / float64(g.Samples)
		r.Gauges = append(r.Gauges, g)
	}
	hits, okH := r.Count(PrefixHits)
	queries, okQ := r.Count(PrefixQueries)
	if !okH || !okQ {
		hits, okH = r.Count(CachedTokens)
		queries, okQ = r.Count(PromptTokens)
		for _, c := range r.Counters {
			if c.Kind == PromptTokens && excludesCached[c.Metric] {
				queries += hits
			}
		}
	}
	if okH && okQ && queries > 0 {
		r.PrefixHitRate = hits / queries
	}
	best := 0
	for _, e := range slices.Sorted(maps.Keys(engines)) {
		if engines[e] > best {
			r.Engine, best = e, engines[e]
		}
	}
	switch {
	case best == 0 && r.Energy != nil:
		// A DCGM exporter: read for the GPUs' energy, which the block
		// keeps; it has no engine to report on.
		r.Missing = GPUOnly
	case best == 0:
		r.Missing = "the endpoint exposes no metric of a known engine (" + strings.Join(Engines, ", ") + ")"
	}
	return r
}

// GPUOnly is the Missing of a DCGM exporter's block: no engine metrics,
// by design, only the energy.
const GPUOnly = "a GPU exporter (DCGM), read for the energy only: no inference engine's metrics"

// deltaHistogram is e − s bucket by bucket, or why it cannot be taken.
func deltaHistogram(s, e Histogram) (Histogram, string) {
	if len(s.Buckets) != len(e.Buckets) {
		return Histogram{}, "its buckets changed during the run"
	}
	d := Histogram{Buckets: make([]Bucket, len(e.Buckets)), Count: e.Count - s.Count, Sum: e.Sum - s.Sum}
	for i := range e.Buckets {
		if s.Buckets[i].UpperBound != e.Buckets[i].UpperBound {
			return Histogram{}, "its buckets changed during the run"
		}
		d.Buckets[i] = Bucket{e.Buckets[i].UpperBound, e.Buckets[i].Count - s.Buckets[i].Count}
		if d.Buckets[i].Count < 0 {
			return Histogram{}, "it fell during the run (the server restarted)"
		}
	}
	if d.Count < 0 {
		return Histogram{}, "it fell during the run (the server restarted)"
	}
	return d, ""
}
