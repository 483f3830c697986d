package bench

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Objective is one service-level objective: the Percentile-th percentile
// of Metric is at most MaxMs milliseconds.
type Objective struct {
	Metric     string  `json:"metric"` // ttft, tpot, itl or e2el
	Percentile float64 `json:"percentile"`
	MaxMs      float64 `json:"max_ms"`
}

// SLO is a set of objectives that must all hold (--slo).
type SLO []Objective

// sloItem is "metric:pP<=value[unit]"; "<" is accepted for "<=".
var sloItem = regexp.MustCompile(`^([a-z0-9_]+):p([0-9]+(?:\.[0-9]+)?)\s*<=?\s*([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*(ms|s|us|µs)?$`)

// ParseSLO parses --slo: comma-separated objectives such as
// "ttft:p99<=500ms,itl:p99<=50ms,e2e:p90<=10s". Metrics are --goodput's
// (ttft, tpot, e2el; e2e is accepted for e2el) and itl; a value without a
// unit is in milliseconds, as --goodput's are.
func ParseSLO(s string) (SLO, error) {
	var out SLO
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		m := sloItem.FindStringSubmatch(item)
		if m == nil {
			return nil, fmt.Errorf("invalid objective %q: want metric:pP<=value, such as ttft:p99<=500ms", item)
		}
		metric := m[1]
		if metric == "e2e" {
			metric = MetricE2EL
		}
		switch metric {
		case MetricTTFT, MetricTPOT, MetricITL, MetricE2EL:
		default:
			return nil, fmt.Errorf("invalid objective %q: unknown metric %q (want ttft, tpot, itl or e2el)", item, m[1])
		}
		p, _ := strconv.ParseFloat(m[2], 64)
		if !(p > 0 && p < 100) {
			return nil, fmt.Errorf("invalid objective %q: the percentile must be above 0 and below 100", item)
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		unit := map[string]float64{"": 1, "ms": 1, "s": 1000, "us": 0.001, "µs": 0.001}[m[4]]
		ms := v * unit
		if !(ms > 0) || math.IsInf(ms, 0) {
			return nil, fmt.Errorf("invalid objective %q: the bound must be a positive duration", item)
		}
		if slices.ContainsFunc(out, func(o Objective) bool { return o.Metric == metric && o.Percentile == p }) {
			return nil, fmt.Errorf("invalid objective %q: %s p%s is given twice", item, metric, percentileWord(p))
		}
		out = append(out, Objective{Metric: metric, Percentile: p, MaxMs: ms})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no objective in %q: want metric:pP<=value, such as ttft:p99<=500ms", s)
	}
	return out, nil
}

func (o Objective) String() string {
	return fmt.Sprintf("%s:p%s<=%s", o.Metric, percentileWord(o.Percentile), time.Duration(o.MaxMs*float64(time.Millisecond)))
}

func (s SLO) String() string {
	parts := make([]string, len(s))
	for i, o := range s {
		parts[i] = o.String()
	}
	return strings.Join(parts, ",")
}

// PercentileParams adds what the summary must compute for s to the
// --percentile-metrics and --metric-percentiles lists, so that every
// objective is read from the summary's own percentiles.
func (s SLO) PercentileParams(metrics []string, percentiles []float64) ([]string, []float64) {
	metrics, percentiles = slices.Clone(metrics), slices.Clone(percentiles)
	for _, o := range s {
		if !slices.Contains(metrics, o.Metric) {
			metrics = append(metrics, o.Metric)
		}
		if !slices.Contains(percentiles, o.Percentile) {
			percentiles = append(percentiles, o.Percentile)
		}
	}
	return metrics, percentiles
}

// Verdict is one objective checked against a run.
type Verdict struct {
	Objective
	// ValueMs is the run's percentile; NaN when the run has no sample.
	ValueMs float64 `json:"value_ms"`
	Pass    bool    `json:"pass"`
	// Samples is how many values the percentile was taken over; Enough
	// says whether that is at least minSamples(Percentile), below which a
	// high percentile is decided by a handful of requests.
	Samples int  `json:"samples"`
	Enough  bool `json:"enough_samples"`
}

// MinSamples is how many samples make the p-th percentile mean
// something: at least five of them at or above it.
func MinSamples(p float64) int { return int(math.Ceil(5/(1-p/100) - 1e-9)) } // 1e-9: 5/(1-0.9) is 50.000000000000014

// Check evaluates s against a summary whose Percentiles include every
// objective (see PercentileParams). A run with no successful request
// fails every objective.
func (s SLO) Check(sum *Summary) []Verdict {
	out := make([]Verdict, 0, len(s))
	for _, o := range s {
		v := Verdict{Objective: o, ValueMs: math.NaN(), Samples: sum.samples(o.Metric)}
		if val, ok := sum.percentile(o.Metric, o.Percentile); ok && v.Samples > 0 {
			v.ValueMs = val
			v.Pass = val <= o.MaxMs
		}
		v.Enough = v.Samples >= MinSamples(o.Percentile)
		out = append(out, v)
	}
	return out
}

// Passed reports whether every verdict passed.
func Passed(vs []Verdict) bool {
	for _, v := range vs {
		if !v.Pass {
			return false
		}
	}
	return len(vs) > 0
}

// percentile looks up a computed percentile of metric, in ms.
func (s *Summary) percentile(metric string, p float64) (float64, bool) {
	for _, m := range s.Percentiles {
		if m.Metric != metric {
			continue
		}
		for _, pv := range m.Percentiles {
			if pv.P == p {
				return pv.Value, true
			}
		}
	}
	return 0, false
}

// samples is how many values a metric's percentiles are taken over: one
// per successful request, except ITL (one per gap) and TPOT (requests with
// more than one output token).
func (s *Summary) samples(metric string) int {
	switch metric {
	case MetricITL:
		return s.ITLSamples
	case MetricTPOT:
		return s.TPOTSamples
	}
	return s.Completed
}
