package exporter

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/prober"
)

// The answer checks' series: servingprobe_answer_checks_total, one per
// (target, module, check the module configures, result), created when the
// config loads so that a pass rate has a denominator from the first
// scrape. Check names and results are closed enums of prober's.

// createAnswerChecks makes the series of the checks of t's modules exist.
func (m *Metrics) createAnswerChecks(t *targetState) {
	for _, mod := range t.Modules {
		for _, c := range t.Checks[mod] {
			for _, res := range prober.CheckOutcomes {
				m.answerChecks.WithLabelValues(t.Name, mod, string(c), string(res))
			}
		}
	}
}

// resetAnswerChecks deletes the series of a module whose checks changed
// on a reload, so that a check no longer configured stops being exported.
func (m *Metrics) resetAnswerChecks(name string, old, nt TargetSeries) {
	for _, mod := range old.Modules {
		if !slices.Equal(old.Checks[mod], nt.Checks[mod]) {
			m.answerChecks.DeletePartialMatch(prometheus.Labels{labelTarget: name, labelModule: mod})
		}
	}
}

// recordAnswerChecks counts a probe's verdicts. Only checks the module
// configures are counted (a result can carry no others, but a label value
// must never come from anywhere but the config and the closed enums).
func (m *Metrics) recordAnswerChecks(r *prober.Result, configured []prober.CheckName) {
	for _, c := range r.Checks {
		if !slices.Contains(configured, c.Check) || !slices.Contains(prober.CheckOutcomes, c.Result) {
			continue
		}
		m.answerChecks.WithLabelValues(r.Target, r.Module, string(c.Check), string(c.Result)).Inc()
	}
}

// maxCheckReason bounds a check's reason where it is shown (prober bounds
// it too; the history bounds every text it keeps itself).
const maxCheckReason = 200

// checksPassed reports whether every answer check of e passed (true
// without checks).
func (e HistoryEntry) checksPassed() bool {
	for _, c := range e.Checks {
		if c.Result != prober.CheckPass {
			return false
		}
	}
	return true
}

// answerChecksText writes a probe's verdicts for /probe?debug=true, one
// line per check, with the reason of a failure (the whole output is
// redacted by the handler).
func answerChecksText(b *strings.Builder, checks []prober.CheckResult) {
	for _, c := range checks {
		fmt.Fprintf(b, "check %s: %s", c.Check, c.Result)
		if c.Reason != "" {
			fmt.Fprintf(b, " (%s)", prober.TruncateUTF8(c.Reason, maxCheckReason))
		}
		b.WriteByte('\n')
	}
}

// answersCell is the landing page's answer figure for one module's kept
// results, oldest first: how many judged answers passed every check, and
// the newest failure's reason. Empty when no kept result was judged.
func answersCell(es []HistoryEntry) string {
	judged, passed := 0, 0
	last := ""
	for _, e := range es {
		if len(e.Checks) == 0 {
			continue
		}
		judged++
		if e.checksPassed() {
			passed++
			continue
		}
		for _, c := range e.Checks {
			if c.Result != prober.CheckPass {
				last = fmt.Sprintf("%s %s: %s", c.Check, c.Result, c.Reason)
				break
			}
		}
	}
	if judged == 0 {
		return ""
	}
	s := fmt.Sprintf("answers right %d/%d (%.0f%%)", passed, judged, 100*float64(passed)/float64(judged))
	if last != "" {
		s += "; last: " + prober.TruncateUTF8(last, maxCheckReason)
	}
	return s
}
