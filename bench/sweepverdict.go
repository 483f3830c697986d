package bench

import (
	"fmt"
	"math"
	"strings"

	"github.com/servingprobe/servingprobe/prober"
)

// Cut is how many of a run's requests the run cancelled itself while
// they were in flight: at its time cap (--max-duration, an SLO search's
// point time or budget) or once a search's point was decided. The server
// did not fail them.
func (s *Summary) Cut() int { return s.Outcomes[prober.OutcomeCanceled] }

// ServerFailed is how many of a run's requests failed on the server's
// side: Failed (bench_serving's count of every request that did not
// complete) less those the run cut (Cut). It is the failed count an SLO
// search's table, verdicts and ramp read.
func (s *Summary) ServerFailed() int { return s.Failed - s.Cut() }

// Verdict is a sweep point's result as the sweep tables print it, the
// console's and the HTML report's alike: pass, or the objectives that
// broke, "(few samples)" where a percentile had too few samples to be
// trusted, and for a search how many samples decided the point and why
// it ended; without objectives, how many requests failed, if any; for an
// anchor of a search, what it measured. s is the point's summary.
func (w *SweepInfo) Verdict(s *Summary) string {
	return w.verdictWord(s) + w.endWord(s)
}

// SearchVerdict is whether a point counts for an SLO search's answer
// and, if so, whether it held: the one reading of a point's verdicts that
// the table's result column and the answer's summary both print. An
// anchor measures the server (one request at a time, the concurrency
// ramp), not a rate the search tried: it does not count.
func (w *SweepInfo) SearchVerdict() (counted, pass bool) {
	if w.Role != "" || len(w.SLO) == 0 {
		return false, false
	}
	return true, w.Passed()
}

// verdictWord is a point's result column: pass or the objectives that
// broke, with a mark where a percentile had too few samples; an anchor's
// says what it measured instead (its verdicts are in its record).
func (w *SweepInfo) verdictWord(s *Summary) string {
	vs := w.SLO
	if counted, _ := w.SearchVerdict(); !counted && len(vs) > 0 {
		word := "anchor"
		if w.Role == "ramp" || w.Role == "synchronous" {
			word = fmt.Sprintf("anchor: %.3g req/s completed", s.RequestThroughput)
		}
		if n := s.ServerFailed(); n > 0 {
			word += fmt.Sprintf(", %d failed", n)
		}
		return word
	}
	if len(vs) == 0 {
		if n := s.ServerFailed(); n > 0 {
			return fmt.Sprintf("%d failed", n)
		}
		return ""
	}
	var out []string
	few := false
	for _, v := range vs {
		few = few || !v.Enough
		if !v.Pass {
			out = append(out, verdictValue(v))
		}
	}
	if w.Growing {
		out = append(out, "latency kept growing")
	}
	word := "pass"
	if _, pass := w.SearchVerdict(); !pass {
		word = strings.TrimSpace("FAIL " + strings.Join(out, ", "))
	}
	if few {
		word += " (few samples)"
	}
	return word
}

// endWord says how many samples decided a search's point and why it
// ended before sending every prompt, how many requests in flight its end
// cut (counted neither as failed nor in its error share), and whether
// the server was still busy when it began.
func (w *SweepInfo) endWord(s *Summary) string {
	cut := ""
	if n := s.Cut(); n > 0 {
		cut = fmt.Sprintf(", %d cut", n)
	}
	if w.Samples == 0 && w.Ended == "" {
		switch {
		case w.NotIdle:
			return " [server busy before" + cut + "]"
		case cut != "":
			return " [" + cut[2:] + "]"
		}
		return ""
	}
	why := map[string]string{
		EndedSamples: "enough samples", EndedBroken: "broken early", EndedOverSaturated: "over-saturated",
		EndedTime: "time cap", EndedBudget: "budget",
	}[w.Ended]
	idle := ""
	if w.NotIdle {
		idle = ", server busy before"
	}
	if why == "" {
		return fmt.Sprintf(" [%d samples%s%s]", w.Samples, cut, idle)
	}
	return fmt.Sprintf(" [%d samples, %s%s%s]", w.Samples, why, cut, idle)
}

// verdictValue is an objective and what the point measured of it.
func verdictValue(v Verdict) string {
	if v.Metric == MetricErrors {
		if v.Samples == 0 {
			return "errors no request"
		}
		return fmt.Sprintf("errors %.1f%%", v.ValuePercent)
	}
	if v.Metric == MetricValid {
		if v.Samples == 0 {
			return "valid no answer judged"
		}
		return fmt.Sprintf("valid %.1f%%", v.ValuePercent)
	}
	return fmt.Sprintf("%s:p%g %s", v.Metric, v.Percentile, MsOrNone(v.ValueMs))
}

// BrokeValue is an objective that broke, with its value against its
// bound: the search's "Broke first" line.
func BrokeValue(v Verdict) string {
	if v.Metric == MetricErrors {
		return fmt.Sprintf("%s (%.1f%% of %d requests failed)", v.Objective.String(), v.ValuePercent, v.Samples)
	}
	if v.Metric == MetricValid {
		if v.Samples == 0 {
			return fmt.Sprintf("%s (no answer was judged)", v.Objective.String())
		}
		return fmt.Sprintf("%s (%.1f%% of %d judged answers valid)", v.Objective.String(), v.ValuePercent, v.Samples)
	}
	return fmt.Sprintf("%s (%s > %.1f ms)", v.Objective.String(), MsOrNone(v.ValueMs), v.MaxMs)
}

// MsOrNone prints a percentile in ms, or "no sample" for NaN (a
// percentile of nothing).
func MsOrNone(ms float64) string {
	if math.IsNaN(ms) {
		return "no sample"
	}
	return fmt.Sprintf("%.1f ms", ms)
}
