package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// TestValidResponses: the answer checks' verdicts of a run are counted per
// check, printed in the "Valid responses" block, written in the record and
// read back from it; a run without checks prints and writes none.
func TestValidResponses(t *testing.T) {
	results, rows := reasoningRun()
	verdicts := [][]prober.CheckResult{
		{{Check: prober.CheckJSONSchema, Result: prober.CheckPass}, {Check: prober.CheckRegex, Result: prober.CheckFail, Reason: "no match"}},
		{{Check: prober.CheckJSONSchema, Result: prober.CheckError}, {Check: prober.CheckRegex, Result: prober.CheckPass}},
	}
	for i := range results {
		results[i].Checks = verdicts[i]
	}
	results = append(results, results[0])
	rows = append(rows, datasets.Prompt{PromptLen: 4, OutputLen: 5})
	s, err := Summarize(results, rows, Params{Backend: "vllm-chat"})
	if err != nil {
		t.Fatal(err)
	}
	want := Validity{
		prober.CheckJSONSchema: {Passed: 2, Errors: 1},
		prober.CheckRegex:      {Passed: 1, Failed: 2},
	}
	if diff := cmp.Diff(want, s.Valid); diff != "" {
		t.Errorf("Summary.Valid (-want +got):\n%s", diff)
	}
	// Of the three answers only the second passed every check: the
	// first failed its regex, the third is the first again; an answer a
	// check could not judge (the second's json_schema error) is not valid.
	if wantAnswers := (Answers{Judged: 3, Valid: 0}); s.Answers != wantAnswers {
		t.Errorf("Summary.Answers = %+v, want %+v", s.Answers, wantAnswers)
	}
	results[1].Checks = []prober.CheckResult{{Check: prober.CheckJSONSchema, Result: prober.CheckPass}, {Check: prober.CheckRegex, Result: prober.CheckPass}}
	s, err = Summarize(results, rows, Params{Backend: "vllm-chat"})
	if err != nil {
		t.Fatal(err)
	}
	want[prober.CheckJSONSchema] = CheckCounts{Passed: 3}
	wantAnswers := Answers{Judged: 3, Valid: 1}
	if s.Answers != wantAnswers {
		t.Errorf("Summary.Answers = %+v, want %+v", s.Answers, wantAnswers)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Valid responses", "Valid answers (all checks):              1/3 (33.33%)", "json_schema passed:                      3/3 (100.00%)",
		"regex passed:                            1/3 (33.33%)", "  failed / errors:                       2 / 0"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
	rec, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rec, []byte(`"valid_answers": {"judged": 3, "valid": 1, "valid_percent": 33.333333333333336}`)) {
		t.Errorf("record lacks valid_answers: %s", rec)
	}
	if !bytes.Contains(rec, []byte(`"valid_responses"`)) {
		t.Fatalf("record lacks valid_responses: %s", rec)
	}
	back, err := ParseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back.Valid); diff != "" {
		t.Errorf("ParseRecord's Valid (-want +got):\n%s", diff)
	}
	if back.Answers != wantAnswers {
		t.Errorf("ParseRecord's Answers = %+v, want %+v", back.Answers, wantAnswers)
	}
	for _, bad := range []string{`{"judged": 2, "valid": 3}`, `{"judged": -1, "valid": 0}`} {
		if _, err := ParseRecord(bytes.Replace(rec, []byte(`{"judged": 3, "valid": 1, "valid_percent": 33.333333333333336}`), []byte(bad), 1)); err == nil || !strings.Contains(err.Error(), "valid_answers") {
			t.Errorf("ParseRecord with valid_answers %s: %v, want an error naming valid_answers", bad, err)
		}
	}

	plain, _ := reasoningRun()
	s, err = Summarize(plain, rows[:2], Params{Backend: "vllm-chat"})
	if err != nil {
		t.Fatal(err)
	}
	table.Reset()
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Record(JSONOptions{})
	if s.Valid != nil || s.Answers != (Answers{}) || bytes.Contains(rec, []byte("valid_answers")) || strings.Contains(table.String(), "Valid responses") || bytes.Contains(rec, []byte("valid_responses")) {
		t.Errorf("a run without checks shows validity: %v", s.Valid)
	}
}
