package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// reasoningRun is two successes: one that reasoned for 200 ms (two
// reasoning tokens, counted) before answering in three tokens, one that
// answered at once.
func reasoningRun() ([]prober.Result, []datasets.Prompt) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	thought := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: ms(0), Sent: ms(0),
		FirstToken: ms(100), FirstAnswer: ms(300), End: ms(340),
		Events: []prober.Event{{At: ms(100), Tokens: 1, Reasoning: true}, {At: ms(200), Tokens: 1, Reasoning: true},
			{At: ms(300), Tokens: 1}, {At: ms(320), Tokens: 1}, {At: ms(340), Tokens: 1}},
		OutputTokens: 5, OutputTokensSource: prober.TokenSourceUsage, ReasoningTokens: 2, ReasoningTokensSource: prober.TokenSourceCounted}
	plain := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: ms(0), Sent: ms(0),
		FirstToken: ms(100), End: ms(120),
		Events:       []prober.Event{{At: ms(100), Tokens: 1}, {At: ms(120), Tokens: 1}},
		OutputTokens: 2, OutputTokensSource: prober.TokenSourceUsage}
	rows := []datasets.Prompt{{PromptLen: 4, OutputLen: 5}, {PromptLen: 4, OutputLen: 5}}
	return []prober.Result{thought, plain}, rows
}

// TestReasoningBlock: a run that reasoned gets the answer phase in the
// servingprobe block and record, and reads back from its record; a run
// that did not has neither (its bytes are pinned by the golden tests).
func TestReasoningBlock(t *testing.T) {
	results, rows := reasoningRun()
	s, err := Summarize(results, rows, Params{Backend: "vllm-chat", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := &ReasoningSummary{Requests: 1, CountedRequests: 1, ReasoningTokens: 2, AnswerTokens: 5,
		TTFAT:      Stats{Mean: 200, Median: 200, Std: 100, P90: 280, P95: 290, P99: 298},
		AnswerTPOT: Stats{Mean: 20, Median: 20, Std: 0, P90: 20, P95: 20, P99: 20}}
	approx := cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })
	if diff := cmp.Diff(want, s.Reasoning, approx, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Max" }, cmp.Ignore())); diff != "" {
		t.Errorf("Summary.Reasoning (-want +got):\n%s", diff)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Requests with reasoning:", "Reasoning tokens:", "Mean TTFAT (ms):", "P99 answer TPOT (ms):"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
	rec, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"reasoning_requests": 1`, `"total_reasoning_tokens": 2`, `"mean_ttfat_ms": 200.0`, `"p99_answer_tpot_ms"`} {
		if !bytes.Contains(rec, []byte(key)) {
			t.Errorf("record lacks %s: %s", key, rec)
		}
	}
	if std, _ := s.Record(JSONOptions{StandardOnly: true}); bytes.Contains(std, []byte("ttfat")) {
		t.Errorf("the standard record has servingprobe's keys: %s", std)
	}
	back, err := ParseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	wantBack := *want
	wantBack.TTFAT = Stats{Mean: 200, Median: 200, P99: 298}
	wantBack.AnswerTPOT = Stats{Mean: 20, Median: 20, P99: 20}
	if diff := cmp.Diff(&wantBack, back.Reasoning, approx); diff != "" {
		t.Errorf("ParseRecord's Reasoning (-want +got):\n%s", diff)
	}

	plain, err := Summarize(results[1:], rows[1:], Params{Backend: "vllm-chat", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Reasoning != nil {
		t.Errorf("a run without reasoning has Reasoning %+v", plain.Reasoning)
	}
}
