package prober

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestBenchmarkConversations: a conversation's rounds go out one after the
// other, each carrying the real replies so far, under one concurrency
// slot; their results take consecutive indices; a failed round ends its
// conversation, and the rounds never sent are counted as planned but not
// dispatched.
func TestBenchmarkConversations(t *testing.T) {
	conv := func(name string, turns int) datasets.Prompt {
		p := datasets.Prompt{MultiTurn: true, OutputLen: 2}
		for k := range turns {
			p.Messages = append(p.Messages, datasets.Message{Role: "user", Content: fmt.Sprintf("%s-q%d", name, k)})
			p.TurnLens = append(p.TurnLens, 10)
		}
		return p
	}
	prompts := []datasets.Prompt{conv("a", 3), {Text: "single", OutputLen: 2}, conv("b", 3)}
	var (
		mu   sync.Mutex
		sent = map[string][]datasets.Message{} // last user turn -> the history sent
		got  = map[int]datasets.Prompt{}
	)
	do := func(ctx context.Context, p datasets.Prompt, scheduled time.Time) Result {
		mu.Lock()
		sent[p.Text] = p.Messages
		mu.Unlock()
		r := Result{Scheduled: scheduled, Sent: time.Now(), End: time.Now(), Outcome: OutcomeSuccess,
			GeneratedText: "reply-to-" + p.Text, OutputTokens: 4, OutputTokensSource: TokenSourceUsage}
		if p.Text == "b-q1" {
			r.Outcome, r.GeneratedText = OutcomeHTTP5xx, ""
		}
		return r
	}
	run, err := Benchmark(t.Context(), BenchmarkConfig{
		Prompts: prompts, MaxConcurrency: 1, Do: do,
		OnResult: func(i int, p datasets.Prompt, r Result) {
			mu.Lock()
			got[i] = p
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// a: 3 rounds (0..2), single (3), b: round 0 (4) and the failed round 1
	// (5); b's round 2 (6) is never sent.
	if run.Planned != 7 || run.Dispatched != 6 || len(run.Results) != 6 {
		t.Fatalf("planned %d dispatched %d results %d, want 7 6 6", run.Planned, run.Dispatched, len(run.Results))
	}
	want := map[int]string{0: "a-q0", 1: "a-q1", 2: "a-q2", 3: "single", 4: "b-q0", 5: "b-q1"}
	for i, text := range want {
		if got[i].Text != text {
			t.Errorf("index %d sent %q, want %q", i, got[i].Text, text)
		}
	}
	// Each round's result is numbered by its turn, as a conversation
	// probe's; a request of no conversation has none.
	var turns []int
	for _, r := range run.Results {
		turns = append(turns, r.Turn)
	}
	if want := []int{1, 2, 3, 0, 1, 2}; !slices.Equal(turns, want) {
		t.Errorf("turns %v, want %v", turns, want)
	}
	if _, ok := sent["b-q2"]; ok {
		t.Error("b's third round was sent after its second failed")
	}
	// Round 2 of a carries both earlier questions and their real replies.
	wantHist := []string{"user:a-q0", "assistant:reply-to-a-q0", "user:a-q1", "assistant:reply-to-a-q1", "user:a-q2"}
	var hist []string
	for _, m := range sent["a-q2"] {
		hist = append(hist, m.Role+":"+m.Content)
	}
	if !slices.Equal(hist, wantHist) {
		t.Errorf("round 2 of a sent %v, want %v", hist, wantHist)
	}
	// Its input length: three turns of 10 plus two replies of 4 tokens.
	if got[2].PromptLen != 38 {
		t.Errorf("round 2 PromptLen %d, want 38", got[2].PromptLen)
	}
	if strings.Contains(fmt.Sprint(got[1].Messages), "reply-to-a-q1") {
		t.Error("round 1 carried its own reply")
	}
}

// TestPromptRound: the dataset's own assistant turns are replaced by the
// real replies, system messages stay, and later turns are cut.
func TestPromptRound(t *testing.T) {
	p := datasets.Prompt{MultiTurn: true, TurnLens: []int{20, 5, 7}, Messages: []datasets.Message{
		{Role: "system", Content: "sys"}, {Role: "user", Content: "u0"}, {Role: "assistant", Content: "recorded"},
		{Role: "user", Content: "u1"}, {Role: "user", Content: "u2"},
	}}
	if p.Rounds() != 3 {
		t.Fatalf("Rounds = %d, want 3", p.Rounds())
	}
	q := p.Round(1, []string{"real0"}, 6)
	var got []string
	for _, m := range q.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	if want := []string{"system:sys", "user:u0", "assistant:real0", "user:u1"}; !slices.Equal(got, want) {
		t.Errorf("round 1 = %v, want %v", got, want)
	}
	if q.Text != "u1" || q.PromptLen != 31 || q.MultiTurn || q.Rounds() != 1 {
		t.Errorf("round 1: text %q, PromptLen %d, MultiTurn %v", q.Text, q.PromptLen, q.MultiTurn)
	}
	if r0 := p.Round(0, nil, 0); len(r0.Messages) != 2 || r0.PromptLen != 20 {
		t.Errorf("round 0 = %+v", r0.Messages)
	}
	if (datasets.Prompt{Text: "x"}).Rounds() != 1 {
		t.Error("a plain prompt is one round")
	}
}
