package bench

import (
	"fmt"
	"math"
	"strings"
)

// Verdict is a sweep point's result as the sweep tables print it, the
// console's and the HTML report's alike: pass, or the objectives that
// broke, "(few samples)" where a percentile had too few samples to be
// trusted, and for a search how many samples decided the point and why
// it ended; without objectives, how many requests failed, if any. s is
// the point's summary.
func (w *SweepInfo) Verdict(s *Summary) string {
	return w.verdictWord(s) + w.endWord()
}

func (w *SweepInfo) verdictWord(s *Summary) string {
	vs := w.SLO
	if len(vs) == 0 {
		if s.Failed > 0 {
			return fmt.Sprintf("%d failed", s.Failed)
		}
		return ""
	}
	var out []string
	few := false
	for _, v := range vs {
		few = few || !v.Enough
		if !v.Pass {
			out = append(out, fmt.Sprintf("%s:p%g %s", v.Metric, v.Percentile, MsOrNone(v.ValueMs)))
		}
	}
	word := "pass"
	switch {
	case len(out) > 0:
		word = "FAIL " + strings.Join(out, ", ")
	case !w.Passed():
		word = "FAIL"
	}
	if few {
		word += " (few samples)"
	}
	return word
}

// endWord says how many samples decided a search's point and why it
// ended before sending every prompt.
func (w *SweepInfo) endWord() string {
	if w.Samples == 0 && w.Ended == "" {
		return ""
	}
	why := map[string]string{
		EndedSamples: "enough samples", EndedBroken: "broken early", EndedOverSaturated: "over-saturated",
		EndedTime: "time cap", EndedBudget: "budget",
	}[w.Ended]
	if why == "" {
		return fmt.Sprintf(" [%d samples]", w.Samples)
	}
	return fmt.Sprintf(" [%d samples, %s]", w.Samples, why)
}

// MsOrNone prints a percentile in ms, or "no sample" for NaN (a
// percentile of nothing).
func MsOrNone(ms float64) string {
	if math.IsNaN(ms) {
		return "no sample"
	}
	return fmt.Sprintf("%.1f ms", ms)
}
