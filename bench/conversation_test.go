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

// conversationRun is two conversations of three turns, the second ended
// by its failed turn 2, and a request of no conversation: turn 1 cold
// (TTFT 200 and 300 ms, nothing cached), turn 3 warm (TTFT 20 ms, 90 of
// 100 input tokens cached, ollama-style prompt eval 5 ms stated).
func conversationRun() ([]prober.Result, []datasets.Prompt) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	ok := func(turn, sent, ttft, in, cached int, eval time.Duration) prober.Result {
		return prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Turn: turn, Scheduled: ms(sent), Sent: ms(sent),
			FirstToken: ms(sent + ttft), End: ms(sent + ttft + 10),
			Events:       []prober.Event{{At: ms(sent + ttft), Tokens: 1}, {At: ms(sent + ttft + 10), Tokens: 1}},
			OutputTokens: 2, OutputTokensSource: prober.TokenSourceUsage, InputTokens: in, InputTokensSource: prober.TokenSourceUsage,
			CachedTokens: cached, Server: prober.ServerTimings{PromptEvalDuration: eval}}
	}
	results := []prober.Result{
		ok(1, 0, 200, 50, 0, 0), ok(2, 300, 40, 80, 40, 0), ok(3, 400, 20, 100, 90, 5*time.Millisecond),
		ok(1, 0, 300, 50, 0, 0), {Outcome: prober.OutcomeHTTP5xx, Turn: 2, Scheduled: ms(400), Sent: ms(400), End: ms(410), Err: "HTTP 500"},
		ok(0, 0, 100, 10, 0, 0),
	}
	rows := make([]datasets.Prompt, len(results))
	for i, r := range results {
		rows[i] = datasets.Prompt{PromptLen: max(r.InputTokens, 1), OutputLen: 2}
	}
	return results, rows
}

// TestConversations: a run of conversations gets its turns apart in the
// summary (turn 1 cold, later turns warm), the same under exact and
// sketch statistics within the sketch's error, printed in the table,
// written in the record and read back from it; a run without
// conversations has none of it.
func TestConversations(t *testing.T) {
	results, rows := conversationRun()
	s, err := Summarize(results, rows, Params{Backend: "vllm-chat", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Conversations
	if c == nil {
		t.Fatal("no conversations in the summary")
	}
	if c.Sessions != 2 || c.EndedByFailure != 1 || len(c.Turns) != 3 || c.TurnsPerSession() != 2.5 {
		t.Fatalf("conversations %+v: want 2 sessions, 1 ended by a failure, 3 turns, 2.5 turns each", c)
	}
	t1, t2, t3 := c.Turns[0], c.Turns[1], c.Turns[2]
	if t1.Requests != 2 || t1.Completed != 2 || t1.TTFT.Median != 250 || t1.InputTokens != 100 || t1.CachedTokens != 0 {
		t.Errorf("turn 1 %+v: want 2 requests, median TTFT 250 ms, 100 input tokens, none cached", t1)
	}
	if t2.Requests != 2 || t2.Completed != 1 || t2.TTFT.Median != 40 || t2.CachedPct() != 50 {
		t.Errorf("turn 2 %+v: want 2 requests, 1 ok, median TTFT 40 ms, 50%% cached", t2)
	}
	if t3.TTFT.Median != 20 || t3.CachedTokens != 90 || t3.PromptEvalRequests != 1 || t3.PromptEvalMs != 5 || t3.Name() != "3" || t1.Name() != "1 (cold)" {
		t.Errorf("turn 3 %+v: want TTFT 20 ms, 90 cached, a 5 ms prompt eval", t3)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"----------------Conversation turns----------------", "Conversations:                           2",
		"Ended by a failed turn:                  1", "Turns per conversation (mean):           2.50",
		"Turn 1 (cold) median TTFT (ms):          250.00", "Turn 2 requests:                         2 (1 ok)",
		"Turn 2 cached input:                     40/80 (50.0%)", "Turn 3 server prompt eval (ms):          5.00"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
	if strings.Contains(table.String(), "Turn 1 (cold) server prompt eval") {
		t.Error("the table prints a prompt eval for a turn whose server stated none")
	}
	rec, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	want := *c
	for i := range want.Turns {
		st := want.Turns[i].TTFT
		want.Turns[i].TTFT = Stats{Mean: st.Mean, Median: st.Median, P99: st.P99} // what the record keeps
	}
	if diff := cmp.Diff(&want, back.Conversations); diff != "" {
		t.Errorf("ParseRecord's Conversations (-want +got):\n%s", diff)
	}
	if _, err := ParseRecord(bytes.Replace(rec, []byte(`"turn": 2,`), []byte(`"turn": 5,`), 1)); err == nil || !strings.Contains(err.Error(), "conversations: turns[1]") {
		t.Errorf("ParseRecord with turns out of order: %v, want an error", err)
	}

	sk, err := Summarize(results, rows, Params{Backend: "vllm-chat", Duration: time.Second, Stats: StatsSketch})
	if err != nil {
		t.Fatal(err)
	}
	// Under --stats sketch a turn's TTFT is the sketch's, as the run's is.
	one := NewSketch(SketchRelativeError)
	one.Add(0.2)
	one.Add(0.3)
	if got, want := sk.Conversations.Turns[0].TTFT, one.Stats(); got != want {
		t.Errorf("turn 1 under sketch statistics %+v, want the sketch's %+v", got, want)
	}

	plain, prow := reasoningRun()
	s, err = Summarize(plain, prow, Params{Backend: "vllm-chat"})
	if err != nil {
		t.Fatal(err)
	}
	table.Reset()
	_ = s.WriteTable(&table)
	rec, _ = s.Record(JSONOptions{})
	if s.Conversations != nil || strings.Contains(table.String(), "Conversation turns") || bytes.Contains(rec, []byte(`"conversations"`)) {
		t.Errorf("a run without conversations shows turns: %+v", s.Conversations)
	}
}

// TestConversationsManyTurns: turns beyond MaxTurnRows are counted in the
// last row, which says so.
func TestConversationsManyTurns(t *testing.T) {
	var a turnTally
	for turn := 1; turn <= 12; turn++ {
		a.add(&prober.Result{Turn: turn}, true, 0.01, 10)
	}
	var s Summary
	a.fill(&s)
	last := s.Conversations.Turns[len(s.Conversations.Turns)-1]
	if len(s.Conversations.Turns) != MaxTurnRows || !last.AndLater || last.Requests != 5 || last.Name() != "8+" {
		t.Errorf("turns %+v: want %d rows, the last holding turns 8 to 12", s.Conversations.Turns, MaxTurnRows)
	}
}
