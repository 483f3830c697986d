package bench

import (
	"encoding/json"
	"fmt"
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

// names are v's checks in prober.CheckNames order.
func (v Validity) names() []prober.CheckName {
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
	for _, n := range s.Valid.names() {
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

// validityRecord is the record's "valid_responses" object.
func (s *Summary) validityRecord(r record) record {
	if len(s.Valid) == 0 {
		return r
	}
	v := record{}
	for _, n := range s.Valid.names() {
		c := s.Valid[n]
		v = append(v, field{string(n), record{{"passed", c.Passed}, {"failed", c.Failed}, {"errors", c.Errors}}})
	}
	return append(r, field{"valid_responses", v})
}

// readValidity reads the record's "valid_responses" back; a check name the
// prober does not know is refused, so that a record cannot bring a label
// value of its own.
func (s *Summary) readValidity(m map[string]json.RawMessage, _ *recordView) error {
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
