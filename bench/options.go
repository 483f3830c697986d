package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
)

// Metric names of vLLM's --percentile-metrics and --goodput.
const (
	MetricTTFT                     = "ttft"
	MetricTPOT                     = "tpot"
	MetricITL                      = "itl"
	MetricE2EL                     = "e2el"
	MetricClientQueueTime          = "client_queue_time"
	MetricE2ELIncludingClientQueue = "e2el_including_client_queue"
)

// PercentileMetricNames lists what --percentile-metrics accepts.
var PercentileMetricNames = []string{
	MetricTTFT, MetricTPOT, MetricITL, MetricE2EL, MetricClientQueueTime, MetricE2ELIncludingClientQueue,
}

// metricLabels are the table's header and row names for each metric; the
// first four are vLLM's.
var metricLabels = map[string]struct{ header, name string }{
	MetricTTFT:                     {"Time to First Token", "TTFT"},
	MetricTPOT:                     {"Time per Output Token (excl. 1st token)", "TPOT"},
	MetricITL:                      {"Inter-token Latency", "ITL"},
	MetricE2EL:                     {"End-to-end Latency", "E2EL"},
	MetricClientQueueTime:          {"Client Queue Time", "Queue"},
	MetricE2ELIncludingClientQueue: {"E2E Latency incl. Client Queue", "E2EL+Q"},
}

// ParsePercentileMetrics parses a comma-separated --percentile-metrics
// value (vLLM's default is "ttft,tpot,itl").
func ParsePercentileMetrics(s string) ([]string, error) {
	var out []string
	for m := range strings.SplitSeq(s, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !slices.Contains(PercentileMetricNames, m) {
			return nil, fmt.Errorf("unknown percentile metric %q (want %s)", m, strings.Join(PercentileMetricNames, ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// ParseMetricPercentiles parses a comma-separated --metric-percentiles
// value such as "50,90,99.9" (vLLM's default is "99").
func ParseMetricPercentiles(s string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || !(p >= 0 && p <= 100) {
			return nil, fmt.Errorf("invalid percentile %q: want a number in [0, 100]", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// percentileWord is how vLLM names a percentile in keys and labels: an
// integer when whole (p99), else Python's str of the float (p99.9).
func percentileWord(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return pyfmt.Float(p)
}

// Goodput maps a metric (ttft, tpot or e2el) to its SLO in milliseconds, as
// vLLM's --goodput ttft:MS tpot:MS e2el:MS. A successful request is good when
// every configured metric is at most its SLO; TPOT counts as 0 for a request
// with at most one output token.
type Goodput map[string]float64

// ParseGoodput parses --goodput arguments, each "metric:milliseconds".
func ParseGoodput(args []string) (Goodput, error) {
	g := Goodput{}
	for _, a := range args {
		name, v, ok := strings.Cut(a, ":")
		if !ok {
			return nil, fmt.Errorf("invalid goodput %q: want metric:milliseconds", a)
		}
		switch name {
		case MetricTTFT, MetricTPOT, MetricE2EL:
		default:
			return nil, fmt.Errorf("invalid goodput metric %q (want ttft, tpot or e2el)", name)
		}
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil || !(ms >= 0) || math.IsInf(ms, 0) {
			return nil, fmt.Errorf("invalid goodput %q: the SLO must be a non-negative number of milliseconds", a)
		}
		g[name] = ms
	}
	return g, nil
}

// good reports whether a successful request meets every SLO.
func (g Goodput) good(r reqRec) bool {
	if len(g) == 0 {
		return false
	}
	tpot := r.tpot
	if math.IsNaN(tpot) {
		tpot = 0
	}
	for name, ms := range g {
		slo := ms / 1000
		var v float64
		switch name {
		case MetricTTFT:
			v = r.ttft
		case MetricTPOT:
			v = tpot
		case MetricE2EL:
			v = r.e2e
		}
		if !(slo >= v) {
			return false
		}
	}
	return true
}
