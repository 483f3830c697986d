package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/prober"
)

// Objective is one service-level objective: the Percentile-th percentile
// of Metric is at most MaxMs milliseconds; or, for MetricErrors, at most
// MaxPercent of the requests failed; or, for MetricValid, at least
// MinPercent of the judged answers passed every answer check (Percentile
// and MaxMs are 0 for both shares).
type Objective struct {
	Metric     string  `json:"metric"` // ttft, tpot, itl, e2el, errors or valid
	Percentile float64 `json:"percentile"`
	MaxMs      float64 `json:"max_ms"`
	MaxPercent float64 `json:"max_percent,omitempty"`
	MinPercent float64 `json:"min_percent,omitempty"`
}

// MetricErrors is the objective on the share of requests that failed.
const MetricErrors = "errors"

// MetricValid is the objective on the share of judged answers that passed
// every answer check (Answers.ValidPercent).
const MetricValid = "valid"

// Share reports whether o bounds a share of requests (errors, valid)
// rather than a latency percentile.
func (o Objective) Share() bool { return o.Metric == MetricErrors || o.Metric == MetricValid }

// DefaultMaxErrorPercent is the error objective an SLO gets when it names
// none: a point where more than 1% of the requests fail does not meet the
// SLO, however fast the requests that succeeded were (a server shedding
// load with 5xx answers fast). "errors<=100%" turns it off.
const DefaultMaxErrorPercent = 1.0

// SLO is a set of objectives that must all hold (--slo).
type SLO []Objective

// errorsItem is "errors<=P%"; the operator is captured so that a "<" is
// refused by name rather than read as "<=".
var errorsItem = regexp.MustCompile(`^errors\s*(<=?)\s*([0-9]+(?:\.[0-9]+)?)\s*%$`)

// validItem is "valid>=P%"; the operator is captured so that a ">" is
// refused by name rather than read as ">=".
var validItem = regexp.MustCompile(`^valid\s*(>=?)\s*([0-9]+(?:\.[0-9]+)?)\s*%$`)

// sloItem is "metric:pP<=value unit"; the operator and the unit are
// captured so that a "<" and a bare number are refused by name.
var sloItem = regexp.MustCompile(`^([a-z0-9_]+):p([0-9]+(?:\.[0-9]+)?)\s*(<=?)\s*([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*(ms|s|us|µs)?$`)

// ParseSLO parses --slo: comma-separated objectives such as
// "ttft:p99<=500ms,itl:p99<=50ms,e2e:p90<=10s,errors<=1%,valid>=99%".
// valid>=P% needs answer checks: at least P% of the judged answers pass
// every check (Answers.ValidPercent). Metrics are
// --goodput's (ttft, tpot, e2el; e2e is accepted for e2el) and itl. An
// objective holds when the percentile is at most its bound, so it is
// written "<=": a "<" is refused with the form meant, since reading it as
// "<=" would silently change what the user wrote, and a strict bound on a
// figure measured to the microsecond tells nothing more. A bound names its
// unit (ms, s, us): a bare number is refused, since --goodput reads
// milliseconds and a reader of "ttft:p99<=2" may mean seconds. An SLO
// without an errors objective gets errors<=DefaultMaxErrorPercent%, last.
func ParseSLO(s string) (SLO, error) {
	var out SLO
	errorsGiven := false
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if m := errorsItem.FindStringSubmatch(item); m != nil {
			if m[1] == "<" {
				return nil, fmt.Errorf("invalid objective %q: an objective is a bound the share may reach; write errors<=%s%% (\"<\" is not read as \"<=\")", item, m[2])
			}
			pct, _ := strconv.ParseFloat(m[2], 64)
			if pct > 100 {
				return nil, fmt.Errorf("invalid objective %q: the share of failed requests must be at most 100%%", item)
			}
			if errorsGiven {
				return nil, fmt.Errorf("invalid objective %q: errors is given twice", item)
			}
			errorsGiven = true
			out = append(out, Objective{Metric: MetricErrors, MaxPercent: pct})
			continue
		}
		if m := validItem.FindStringSubmatch(item); m != nil {
			if m[1] == ">" {
				return nil, fmt.Errorf("invalid objective %q: an objective is a bound the share may reach; write valid>=%s%% (\">\" is not read as \">=\")", item, m[2])
			}
			pct, _ := strconv.ParseFloat(m[2], 64)
			if !(pct > 0 && pct <= 100) {
				return nil, fmt.Errorf("invalid objective %q: the share of valid answers must be above 0%% and at most 100%%", item)
			}
			if slices.ContainsFunc(out, func(o Objective) bool { return o.Metric == MetricValid }) {
				return nil, fmt.Errorf("invalid objective %q: valid is given twice", item)
			}
			out = append(out, Objective{Metric: MetricValid, MinPercent: pct})
			continue
		}
		if strings.HasPrefix(item, MetricValid) {
			return nil, fmt.Errorf("invalid objective %q: want valid>=P%%, the share of judged answers that pass every check, such as valid>=99%%", item)
		}
		if strings.HasPrefix(item, MetricErrors) {
			return nil, fmt.Errorf("invalid objective %q: want errors<=P%%, such as errors<=1%%", item)
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
		if m[5] == "" {
			return nil, fmt.Errorf("invalid objective %q: name the unit of %s: %sms, %ss or %sus", item, m[4], m[4], m[4], m[4])
		}
		if m[3] == "<" {
			return nil, fmt.Errorf("invalid objective %q: an objective is a bound the percentile may reach; write %s:p%s<=%s%s (\"<\" is not read as \"<=\")", item, m[1], m[2], m[4], m[5])
		}
		v, _ := strconv.ParseFloat(m[4], 64)
		unit := map[string]float64{"ms": 1, "s": 1000, "us": 0.001, "µs": 0.001}[m[5]]
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
	if !errorsGiven {
		out = append(out, Objective{Metric: MetricErrors, MaxPercent: DefaultMaxErrorPercent})
	}
	return out, nil
}

func (o Objective) String() string {
	switch o.Metric {
	case MetricErrors:
		return fmt.Sprintf("errors<=%s%%", strconv.FormatFloat(o.MaxPercent, 'f', -1, 64))
	case MetricValid:
		return fmt.Sprintf("valid>=%s%%", strconv.FormatFloat(o.MinPercent, 'f', -1, 64))
	}
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
		if o.Share() {
			continue // counted, not a percentile
		}
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
	// ValueMs is the run's percentile; NaN when the run has no sample
	// (and for an errors or valid objective, whose value is ValuePercent:
	// the share of the run's requests that failed, or of its judged
	// answers that passed every check).
	ValueMs      float64 `json:"value_ms"`
	ValuePercent float64 `json:"value_percent,omitempty"`
	Pass         bool    `json:"pass"`
	// Samples is how many values the percentile was taken over; Enough
	// says whether that is at least minSamples(Percentile), below which a
	// high percentile is decided by a handful of requests.
	Samples int  `json:"samples"`
	Enough  bool `json:"enough_samples"`
}

// MarshalJSON writes a verdict with value_ms null when the run had no
// sample (NaN, which encoding/json refuses), so that the API and a search
// answer's line can carry a broken objective that measured nothing.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	w := struct {
		plain
		ValueMs *float64 `json:"value_ms"`
	}{plain: plain(v)}
	if !math.IsNaN(v.ValueMs) {
		w.ValueMs = &v.ValueMs
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads MarshalJSON's form: a null or absent value_ms is
// NaN, no sample, as Check leaves it.
func (v *Verdict) UnmarshalJSON(b []byte) error {
	type plain Verdict
	w := struct {
		*plain
		ValueMs *float64 `json:"value_ms"`
	}{plain: (*plain)(v)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	v.ValueMs = math.NaN()
	if w.ValueMs != nil {
		v.ValueMs = *w.ValueMs
	}
	return nil
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
		if o.Metric == MetricErrors {
			// A request the run cancelled itself (a point that ended
			// once its verdict was certain) is no failure of the server.
			canceled := sum.Outcomes[prober.OutcomeCanceled]
			v.Samples = sum.Requests - canceled
			if v.Samples > 0 {
				v.ValuePercent = ErrorPercent(sum.Failed-canceled, v.Samples)
				v.Pass = v.ValuePercent <= o.MaxPercent
			}
			v.Enough = v.Samples > 0
			out = append(out, v)
			continue
		}
		if o.Metric == MetricValid {
			// A run that judged no answer (every request failed, or the
			// bench has no checks) fails it: nothing shows the answers
			// were right.
			v.Samples = sum.Answers.Judged
			if v.Samples > 0 {
				v.ValuePercent = sum.Answers.ValidPercent()
				v.Pass = v.ValuePercent >= o.MinPercent
			}
			v.Enough = v.Samples > 0
			out = append(out, v)
			continue
		}
		if val, ok := sum.percentile(o.Metric, o.Percentile); ok && v.Samples > 0 {
			v.ValueMs = val
			v.Pass = val <= o.MaxMs
		}
		// The "(few samples)" mark is the confidence intervals' rule
		// (ci.go): enough samples that the percentile's 95 % interval is
		// bounded on both sides.
		v.Enough = EnoughSamples(v.Samples, o.Percentile)
		out = append(out, v)
	}
	return out
}

// ErrorPercent is the share of requests that failed, in percent: the one
// rule for an errors objective, used by the point's verdict and by the
// search's early decision.
func ErrorPercent(failed, requests int) float64 {
	if requests <= 0 {
		return 0
	}
	return 100 * float64(failed) / float64(requests)
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
