package bench

import (
	"bytes"
	"slices"
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

// answerRuns are runs whose share of valid answers is each of pcts (of
// 1000 judged answers), as a comparison reads them from their summaries.
func answerRuns(pcts ...float64) []*Summary {
	var out []*Summary
	for _, p := range pcts {
		out = append(out, &Summary{Completed: 1000, Requests: 1000, Answers: Answers{Judged: 1000, Valid: int(p * 10)}})
	}
	return out
}

// TestGateValid: the share of valid answers is a figure of a comparison
// and of the gate, a value per run, so that a drop in validity fails a
// gate only when it is beyond the bound and beyond the spread between
// runs; a comparison of runs without checks has no such row, and a gate
// on it then is an error, not a pass.
func TestGateValid(t *testing.T) {
	base := answerRuns(99.5, 99.6, 99.4)
	for _, tc := range []struct {
		name   string
		spec   string
		cand   []*Summary
		failed bool
		reason string
		err    string
	}{
		{name: "a drop beyond the spread", spec: "valid<-1%", cand: answerRuns(95, 96, 94), failed: true,
			reason: "Valid answers (%) 99.50 -> 95.00 (-4.5%), Δ in [-6.93, -2.02], beyond <-1%, significant"},
		{name: "the same server", spec: "valid<-1%", cand: answerRuns(99.4, 99.7, 99.5), reason: "within <-1%"},
		{name: "a drop within the spread", spec: "valid<-1%", cand: answerRuns(99.9, 90, 99.9), reason: "beyond <-1% but not significant"},
		{name: "one run a side", spec: "valid<-1%", cand: answerRuns(97)[:1], failed: true, reason: "runs 3 v 1: judged against the bound alone"},
		{name: "a side without checks", spec: "valid<-1%", cand: []*Summary{{Completed: 1000, Requests: 1000}},
			err: "valid: cannot be tested: a run judged no answer; give both sides the same answer checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bounds, err := ParseGate(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := CheckGate(bounds, CompareRuns(base, tc.cand))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("CheckGate(%s) error %v, want %q", tc.spec, err, tc.err)
				}
				return
			}
			if err != nil || len(res) != 1 {
				t.Fatalf("CheckGate(%s) = %v, %v", tc.spec, res, err)
			}
			if res[0].Failed != tc.failed || !strings.Contains(res[0].Reason, tc.reason) {
				t.Errorf("CheckGate(%s) failed %v %q, want %v containing %q", tc.spec, res[0].Failed, res[0].Reason, tc.failed, tc.reason)
			}
		})
	}
	// A validity drop is a fall: a rise as its bound would fail an
	// unchanged run, and is refused with the form meant.
	if _, err := ParseGate("valid>+1%"); err == nil || !strings.Contains(err.Error(), "write valid<-1%") {
		t.Errorf("ParseGate(valid>+1%%) = %v, want it refused", err)
	}
	// Runs without checks: no row, so that every other comparison's
	// table stays as it was; a gate on it says the runs lack it.
	plain := []*Summary{{Completed: 10, Requests: 10}}
	rows := CompareRuns(plain, plain)
	if slices.ContainsFunc(rows, func(c Comparison) bool { return c.Figure == FigureValid }) {
		t.Error("a comparison of runs without checks has a valid row")
	}
	bounds, _ := ParseGate("valid<-1%")
	if _, err := CheckGate(bounds, rows); err == nil || !strings.Contains(err.Error(), "valid: the runs do not have this figure") {
		t.Errorf("gate on runs without checks: %v, want an error", err)
	}
}

// TestCheckFailuresDetails: --output-details names, per request, the
// checks its answer failed (null for a request no check judged, [] for an
// answer that passed every one), the same from memory and from the spool,
// and reads back through the one details reader (DetailRequests).
func TestCheckFailuresDetails(t *testing.T) {
	results, rows := reasoningRun()
	results[0].Checks = []prober.CheckResult{{Check: prober.CheckJSONSchema, Result: prober.CheckPass},
		{Check: prober.CheckRegex, Result: prober.CheckFail, Reason: `no match for the regex in "x"`}}
	results[1].Checks = []prober.CheckResult{{Check: prober.CheckJSONSchema, Result: prober.CheckPass}, {Check: prober.CheckRegex, Result: prober.CheckPass}}
	failed := prober.Result{Outcome: prober.OutcomeServerError, Err: "HTTP 500"}
	results = append(results, failed)
	rows = append(rows, datasets.Prompt{PromptLen: 4, OutputLen: 5})
	want := `"check_failures": [[{"check": "regex", "result": "fail", "reason": "no match for the regex in \"x\""}], [], null]`
	var recs [][]byte
	for _, spool := range []bool{false, true} {
		s, err := Summarize(results, rows, Params{Backend: "vllm-chat", Details: true, SpoolDetails: spool})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := s.Record(JSONOptions{Details: true})
		s.SpooledDetails.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(rec, []byte(want)) {
			t.Errorf("spool %v: record lacks %s:\n%s", spool, want, rec)
		}
		recs = append(recs, rec)
	}
	if !bytes.Equal(recs[0], recs[1]) {
		t.Errorf("the spooled record differs from the in-memory one:\n%s\n%s", recs[0], recs[1])
	}
	back, err := ParseRecord(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	var got []CheckFailures
	for r := range back.DetailRequests() {
		got = append(got, r.CheckFailures)
	}
	wantRows := []CheckFailures{{{Check: prober.CheckRegex, Result: prober.CheckFail, Reason: `no match for the regex in "x"`}}, {}, nil}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Errorf("DetailRequests' CheckFailures (-want +got):\n%s", diff)
	}
	// A record cannot bring a check of its own, nor a pass as a failure.
	for _, bad := range []string{`[{"check": "vibes", "result": "fail"}]`, `[{"check": "regex", "result": "pass"}]`} {
		rec := bytes.Replace(recs[0], []byte(`[], null]`), []byte(bad+`, null]`), 1)
		if _, err := ParseRecord(rec); err == nil || !strings.Contains(err.Error(), "check_failures[1]") {
			t.Errorf("ParseRecord with check_failures entry %s: %v, want an error naming it", bad, err)
		}
	}
	// A run without checks keeps the keys it always had.
	plain, _ := reasoningRun()
	s, err := Summarize(plain, rows[:2], Params{Backend: "vllm-chat", Details: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Record(JSONOptions{Details: true}); bytes.Contains(rec, []byte("check_failures")) {
		t.Errorf("a run without checks writes check_failures: %s", rec)
	}
}
