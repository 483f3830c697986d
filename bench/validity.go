package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/servingprobe/servingprobe/prober"
)

// CheckCounts is one answer check's verdicts over a run's judged answers
// (prober.Checker; a failed request is not judged).
type CheckCounts struct {
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	Errors int `json:"errors"`
}

// Judged is how many answers the check judged.
func (c CheckCounts) Judged() int { return c.Passed + c.Failed + c.Errors }

// PassRate is the share of judged answers that passed, -1 when none was.
func (c CheckCounts) PassRate() float64 {
	if c.Judged() == 0 {
		return -1
	}
	return float64(c.Passed) / float64(c.Judged())
}

// Validity holds the answer checks' verdicts of a run, by check name; nil
// in a summary of a run without checks.
type Validity map[prober.CheckName]CheckCounts

// addChecks counts one result's verdicts into v, allocating it on the
// first result that carries any.
func (v *Validity) addChecks(checks []prober.CheckResult) {
	for _, c := range checks {
		if *v == nil {
			*v = Validity{}
		}
		n := (*v)[c.Check]
		switch c.Result {
		case prober.CheckPass:
			n.Passed++
		case prober.CheckFail:
			n.Failed++
		default:
			n.Errors++
		}
		(*v)[c.Check] = n
	}
}

// merge adds a shard's verdicts (Merge).
func (v *Validity) merge(o Validity) {
	for n, c := range o {
		if *v == nil {
			*v = Validity{}
		}
		m := (*v)[n]
		m.Passed += c.Passed
		m.Failed += c.Failed
		m.Errors += c.Errors
		(*v)[n] = m
	}
}

// Answers counts a run's judged answers as wholes, over every check at
// once: Judged is how many answers at least one check judged (a failed
// request is not judged), Valid how many of those passed every check. An
// answer a check could not judge (CheckError: its JSON or tool call was
// cut at the requested length) is not valid: the user did not get a
// usable answer.
type Answers struct {
	Judged int `json:"judged"`
	Valid  int `json:"valid"`
}

// add counts one result's verdicts; a result without any is not judged.
func (a *Answers) add(checks []prober.CheckResult) {
	if len(checks) == 0 {
		return
	}
	a.Judged++
	if ValidAnswer(checks) {
		a.Valid++
	}
}

// ValidAnswer reports whether an answer's verdicts make it valid: every
// check passed. The SLO search's running tally counts with it too.
func ValidAnswer(checks []prober.CheckResult) bool {
	return !slices.ContainsFunc(checks, func(c prober.CheckResult) bool { return c.Result != prober.CheckPass })
}

// ValidPercent is the share of judged answers that passed every check, in
// percent; NaN when no answer was judged. It is the one computation of
// the share: the table, the record, an SLO's valid objective and the
// regression gate's "valid" figure all read it.
func (a Answers) ValidPercent() float64 {
	if a.Judged == 0 {
		return math.NaN()
	}
	return 100 * float64(a.Valid) / float64(a.Judged)
}

// Names are v's checks in prober.CheckNames order.
func (v Validity) Names() []prober.CheckName {
	var out []prober.CheckName
	for _, n := range prober.CheckNames {
		if _, ok := v[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// writeValidity prints the "Valid responses" block: per check, how many
// judged answers passed, failed, or could not be judged.
func (s *Summary) writeValidity(t *tableWriter) {
	if len(s.Valid) == 0 {
		return
	}
	t.line(center("Valid responses", '-', 50))
	if a := s.Answers; a.Judged > 0 {
		t.row("Valid answers (all checks):", fmt.Sprintf("%d/%d (%.2f%%)", a.Valid, a.Judged, a.ValidPercent()))
	}
	for _, n := range s.Valid.Names() {
		c := s.Valid[n]
		rate := "–"
		if r := c.PassRate(); r >= 0 {
			rate = fmt.Sprintf("%.2f%%", 100*r)
		}
		t.row(string(n)+" passed:", fmt.Sprintf("%d/%d (%s)", c.Passed, c.Judged(), rate))
		if c.Failed > 0 || c.Errors > 0 {
			t.row("  failed / errors:", fmt.Sprintf("%d / %d", c.Failed, c.Errors))
		}
	}
}

// validityRecord is the record's "valid_answers" object (the share is
// written for a reader of the file; ParseRecord reads the counts) and its
// "valid_responses" object, per check.
func (s *Summary) validityRecord(r record) record {
	if a := s.Answers; a.Judged > 0 {
		r = append(r, field{"valid_answers", record{{"judged", a.Judged}, {"valid", a.Valid}, {"valid_percent", a.ValidPercent()}}})
	}
	if len(s.Valid) == 0 {
		return r
	}
	v := record{}
	for _, n := range s.Valid.Names() {
		c := s.Valid[n]
		v = append(v, field{string(n), record{{"passed", c.Passed}, {"failed", c.Failed}, {"errors", c.Errors}}})
	}
	return append(r, field{"valid_responses", v})
}

// readValidity reads the record's "valid_responses" back; a check name the
// prober does not know is refused, so that a record cannot bring a label
// value of its own.
func (s *Summary) readValidity(m map[string]json.RawMessage, _ *recordView) error {
	if raw, ok := m["valid_answers"]; ok {
		var a Answers
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("valid_answers: %w", err)
		}
		if a.Judged < 0 || a.Valid < 0 || a.Valid > a.Judged {
			return fmt.Errorf("valid_answers: %d valid of %d judged", a.Valid, a.Judged)
		}
		s.Answers = a
	}
	raw, ok := m["valid_responses"]
	if !ok {
		return nil
	}
	var v map[prober.CheckName]CheckCounts
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("valid_responses: %w", err)
	}
	for n := range v {
		if !slices.Contains(prober.CheckNames, n) {
			return fmt.Errorf("valid_responses: unknown check %q", n)
		}
	}
	if len(v) > 0 {
		s.Valid = v
	}
	return nil
}

// FigureValid is the comparison's and the gate's row of the share of
// valid answers (--fail-on 'valid<-1%'): each run's
// Answers.ValidPercent, a figure per run like every other row, so that
// the test weighs a drop against the spread between runs. Its change is
// in % of the baseline's share, as every row's is: 99% to 98% is -1.0%.
const FigureValid = "valid"

// validFigure is FigureValid's row; a run records no interval of its
// share, so a single run a side shows no difference interval.
var validFigure = figure{
	name: FigureValid, label: "Valid answers (%)", higherBetter: true,
	value: func(s *Summary) float64 { return s.Answers.ValidPercent() },
	ci:    func(*CI) Interval { return Unknown },
}

// judged reports whether any of runs judged an answer.
func judged(runs []*Summary) bool {
	return slices.ContainsFunc(runs, func(s *Summary) bool { return s.Answers.Judged > 0 })
}
