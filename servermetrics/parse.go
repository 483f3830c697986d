package servermetrics

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Bucket is one cumulative classic bucket: the observations at most
// UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram is a classic histogram summed over its series. Buckets are
// sorted by UpperBound and end with +Inf.
type Histogram struct {
	Buckets []Bucket
	Count   float64
	Sum     float64
}

// Snapshot is one read of an endpoint: every family in Names, summed over
// its label sets, by metric name (counters without _total).
type Snapshot struct {
	Counters   map[string]float64
	Gauges     map[string]Gauge
	Histograms map[string]Histogram
	// Unknown are the families under an engine's prefix that Names does
	// not hold, sorted.
	Unknown []string
	// GPU holds a DCGM exporter's energy and power (energy.go); nil when
	// the endpoint is no DCGM exporter.
	GPU *GPUReading
}

// Gauge is a gauge's sum over its series and the number of series, so
// that a fraction (KV-cache usage) can be averaged over engines while a
// count (running requests) is summed.
type Gauge struct {
	Sum    float64
	Series int
}

var known = func() map[string]Kind {
	m := make(map[string]Kind, len(Names))
	for _, n := range Names {
		m[n.Metric] = n.Kind
	}
	for _, n := range requestNames {
		m[n.Metric] = n.Kind
	}
	return m
}()

func isCounterKind(k Kind) bool { return k == Requests || slices.Contains(CounterKinds, k) }
func isGaugeKind(k Kind) bool   { return slices.Contains(GaugeKinds, k) }

// Parse reads Prometheus text exposition. A family whose name is not in
// Names is skipped (listed in Unknown when it is under an engine's
// prefix); a known name with an unexpected type is skipped too. The text
// itself must parse: an endpoint that sends something else is not one.
func Parse(r io.Reader) (*Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	s := &Snapshot{Counters: map[string]float64{}, Gauges: map[string]Gauge{}, Histograms: map[string]Histogram{}}
	unknown := map[string]bool{}
	for name, mf := range fams {
		base := name
		if mf.GetType() == dto.MetricType_COUNTER || mf.GetType() == dto.MetricType_UNTYPED {
			base = strings.TrimSuffix(name, "_total")
		}
		if readDCGM(s, name, mf) {
			continue
		}
		kind, ok := known[base]
		if !ok {
			// prometheus_client writes each counter's and histogram's
			// creation time as a family of its own; it is not a metric.
			if hasEnginePrefix(name) && !strings.HasSuffix(name, "_created") {
				unknown[name] = true
			}
			continue
		}
		switch {
		case histogramSum[base] && mf.GetType() == dto.MetricType_HISTOGRAM:
			var v float64
			for _, m := range mf.GetMetric() {
				v += m.GetHistogram().GetSampleSum()
			}
			if finite(v) {
				s.Counters[base] = v
			}
		case slices.Contains(LatencyKinds, kind) && mf.GetType() == dto.MetricType_HISTOGRAM:
			if h, ok := sumHistograms(mf.GetMetric()); ok {
				s.Histograms[base] = h
			}
		case isCounterKind(kind) && (mf.GetType() == dto.MetricType_COUNTER || mf.GetType() == dto.MetricType_UNTYPED):
			var v float64
			for _, m := range mf.GetMetric() {
				if m.GetCounter() != nil {
					v += m.GetCounter().GetValue()
				} else {
					v += m.GetUntyped().GetValue()
				}
			}
			if finite(v) {
				s.Counters[base] = v
			}
		case isGaugeKind(kind) && (mf.GetType() == dto.MetricType_GAUGE || mf.GetType() == dto.MetricType_UNTYPED):
			var g Gauge
			for _, m := range mf.GetMetric() {
				v := m.GetGauge().GetValue()
				if m.GetGauge() == nil {
					v = m.GetUntyped().GetValue()
				}
				g.Sum += v
				g.Series++
			}
			if finite(g.Sum) && g.Series > 0 {
				s.Gauges[base] = g
			}
		}
	}
	for n := range unknown {
		s.Unknown = append(s.Unknown, n)
	}
	sort.Strings(s.Unknown)
	return s, nil
}

func hasEnginePrefix(name string) bool {
	for _, p := range enginePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// sumHistograms adds a family's series bucket by bucket. Series of one
// family share a layout in every engine we read; a series with another
// layout, or a non-finite count, makes the family unreadable rather than
// wrong.
func sumHistograms(ms []*dto.Metric) (Histogram, bool) {
	var h Histogram
	for i, m := range ms {
		mh := m.GetHistogram()
		if mh == nil {
			return Histogram{}, false
		}
		bs := make([]Bucket, 0, len(mh.GetBucket())+1)
		for _, b := range mh.GetBucket() {
			if math.IsNaN(b.GetUpperBound()) {
				continue
			}
			bs = append(bs, Bucket{b.GetUpperBound(), float64(b.GetCumulativeCount())})
			if c := b.GetCumulativeCountFloat(); c > 0 {
				bs[len(bs)-1].Count = c
			}
		}
		count := float64(mh.GetSampleCount())
		if c := mh.GetSampleCountFloat(); c > 0 {
			count = c
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
		if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].UpperBound, 1) {
			bs = append(bs, Bucket{math.Inf(1), count})
		}
		if !finite(count) || !finite(mh.GetSampleSum()) {
			return Histogram{}, false
		}
		if i == 0 {
			h = Histogram{Buckets: bs, Count: count, Sum: mh.GetSampleSum()}
			continue
		}
		if len(bs) != len(h.Buckets) {
			return Histogram{}, false
		}
		for j := range bs {
			if bs[j].UpperBound != h.Buckets[j].UpperBound {
				return Histogram{}, false
			}
			h.Buckets[j].Count += bs[j].Count
		}
		h.Count += count
		h.Sum += mh.GetSampleSum()
	}
	return h, len(ms) > 0
}
