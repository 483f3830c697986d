package report

import (
	"html/template"

	"github.com/servingprobe/servingprobe/bench"
)

// significance is a run's comparison with the first run, by the row label
// the comparison table shows (bench.Compare's labels are the table's).
type significance map[string]bench.Comparison

// significanceOf compares cand with base: the one comparison bench makes
// for compare, bench --baseline and this page alike.
func significanceOf(base, cand *bench.Summary) significance {
	sig := significance{}
	for _, c := range bench.Compare(base, cand) {
		sig[c.Label] = c
	}
	return sig
}

// class is a row's colour: "worse" or "better" only where bench.Compare
// tested the row and found the difference significant; "" for a
// difference within the noise, and for a row no test covers (counts,
// server metrics), which is shown uncoloured rather than as a verdict.
func (s significance) class(row string, higherBetter bool, diff float64) string {
	c, ok := s[row]
	if !ok || !c.Significant || diff == 0 {
		return ""
	}
	if (diff < 0) == higherBetter {
		return "worse"
	}
	return "better"
}

// cell is the row's significance column: the test's verdict ("~ (p=0.41
// t)", "? (one run)"), empty for a row no test covers.
func (s significance) cell(row string) template.HTML {
	c, ok := s[row]
	if !ok {
		return `<td></td>`
	}
	return template.HTML(`<td class="num">` + template.HTMLEscapeString(c.Verdict()) + `</td>`)
}

// significanceNote says how the significance column was decided, for the
// Differences section's note.
const significanceNote = " Coloured only where the difference is significant, which takes two runs or more a side: the significance " +
	"column gives Welch's t test on the runs' figures (t) and its p-value, Holm-adjusted over the rows; ~ where the difference " +
	"is within the spread between runs. A single run a side reads \"? (one run)\": one run cannot separate a change from the " +
	"drift between runs of the same server, so nothing is coloured."
