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
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Valid responses", "json_schema passed:                      2/3 (66.67%)",
		"regex passed:                            1/3 (33.33%)", "  failed / errors:                       2 / 0"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
	rec, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
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
	if s.Valid != nil || strings.Contains(table.String(), "Valid responses") || bytes.Contains(rec, []byte("valid_responses")) {
		t.Errorf("a run without checks shows validity: %v", s.Valid)
	}
}
