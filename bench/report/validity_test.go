package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/prober"
)

// TestValiditySection: a run with answer checks gets a section with the
// console's "Valid responses" rows (not repeated in the summary), the
// verdicts by check, and the failed answers its details name, by request
// index, their reasons escaped; a run without checks gets none.
func TestValiditySection(t *testing.T) {
	s := reasoningRun(t)
	s.Valid = bench.Validity{prober.CheckJSONSchema: {Passed: 38, Errors: 2}, prober.CheckRegex: {Passed: 39, Failed: 1}}
	s.Answers = bench.Answers{Judged: 40, Valid: 37}
	s.Details.CheckFailures = make([]bench.CheckFailures, 40)
	for i := range s.Details.CheckFailures {
		s.Details.CheckFailures[i] = bench.CheckFailures{}
	}
	s.Details.CheckFailures[3] = bench.CheckFailures{{Check: prober.CheckRegex, Result: prober.CheckFail, Reason: `no match in "<b>"`}}
	s.Details.CheckFailures[7] = bench.CheckFailures{{Check: prober.CheckJSONSchema, Result: prober.CheckError, Reason: "cut at length"}}
	s.Details.CheckFailures[9] = bench.CheckFailures{{Check: prober.CheckJSONSchema, Result: prober.CheckError, Reason: "cut at length"}}
	page := render(t, Run{Name: "run.jsonl", Summary: s})
	rows := pageRows(t, page, "valid-responses")
	if diff := cmp.Diff(consoleSection(t, s, "Valid responses", 0), rows); diff != "" {
		t.Errorf("validity rows: console (-) and page (+) differ:\n%s", diff)
	}
	if strings.Count(page, "Valid answers (all checks):") != 1 {
		t.Error("the validity rows are not shown exactly once (the summary must leave them to their section)")
	}
	for _, want := range []string{"37 of 40 judged answers valid (92.50%)", "<caption>Failed answers (3)</caption>",
		"<tr><td>3</td><td>regex</td><td>fail</td><td>no match in &#34;&lt;b&gt;&#34;</td></tr>",
		"<tr><td>9</td><td>json_schema</td><td>error</td><td>cut at length</td></tr>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	byID, _ := charts(page)
	if c, ok := byID["answer-checks"]; !ok || !strings.Contains(c, `data-points="6"`) {
		t.Errorf("chart answer-checks missing or not 6 bars (3 verdicts of 2 checks)")
	}
	s.Valid, s.Answers, s.Details.CheckFailures = nil, bench.Answers{}, nil
	if page := render(t, Run{Name: "run.jsonl", Summary: s}); strings.Contains(page, "Answer checks") {
		t.Error("a run without checks has an answer checks section")
	}
}
