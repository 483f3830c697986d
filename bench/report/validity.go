package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
)

// maxFailedAnswers bounds the failed answers the page lists: enough to see
// which requests and which checks, not a second copy of the details.
const maxFailedAnswers = 20

// validitySection draws a run's answer checks: the console's "Valid
// responses" rows, each check's verdicts as bars, and, when the record
// kept its details (check_failures), the first failed answers with their
// request index and reason, read through the one details reader
// (bench.Summary.DetailRequests). Every figure is the summary's.
func validitySection(s *bench.Summary) (section, bool) {
	if len(s.Valid) == 0 {
		return section{}, false
	}
	note := "Each judged answer's verdicts (docs/checks.md). An answer is valid when every check passed; one a check could not judge (cut at the requested length) is not. A failed request is not judged."
	if a := s.Answers; a.Judged > 0 {
		note = fmt.Sprintf("%d of %d judged answers valid (%.2f%%): the share an SLO's valid>=P%% and the gate's valid figure read. ", a.Valid, a.Judged, a.ValidPercent()) + note
	}
	sec := section{Title: "Answer checks", Note: note}
	var b strings.Builder
	if rows := tableSections(s, "Valid responses"); len(rows) > 0 {
		b.WriteString(string(consoleRows("valid-responses", rows[0])))
	}
	b.WriteString(string(failedAnswers(s)))
	sec.Table = template.HTML(b.String())
	var names []string
	var passed, failed, errs []float64
	for _, n := range s.Valid.Names() {
		c := s.Valid[n]
		names = append(names, string(n))
		passed, failed, errs = append(passed, float64(c.Passed)), append(failed, float64(c.Failed)), append(errs, float64(c.Errors))
	}
	sec.Charts = append(sec.Charts, groupedBars("answer-checks", "Verdicts by check", "answers", names,
		[]string{"pass", "fail", "error"}, [][]float64{passed, failed, errs}))
	return sec, true
}

// failedAnswers lists the first maxFailedAnswers answers a check did not
// pass, from the details' check_failures; empty without them.
func failedAnswers(s *bench.Summary) template.HTML {
	var b strings.Builder
	n, total := 0, 0
	for r := range s.DetailRequests() {
		if len(r.CheckFailures) == 0 {
			continue
		}
		total++
		if n == maxFailedAnswers {
			continue
		}
		n++
		for _, c := range r.CheckFailures {
			fmt.Fprintf(&b, "<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td></tr>", r.Index,
				template.HTMLEscapeString(string(c.Check)), template.HTMLEscapeString(string(c.Result)), template.HTMLEscapeString(c.Reason))
		}
	}
	if total == 0 {
		return ""
	}
	caption := fmt.Sprintf("Failed answers (%d)", total)
	if total > n {
		caption = fmt.Sprintf("Failed answers: the first %d of %d", n, total)
	}
	return template.HTML(`<table class="compare" data-rows="failed-answers"><caption>` + template.HTMLEscapeString(caption) +
		`</caption><tr><th>request</th><th>check</th><th>result</th><th>reason</th></tr>` + b.String() + `</table>`)
}
