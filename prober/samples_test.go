package prober

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestThinkEnd pins where think-tagged reasoning ends, against the
// formats sglang's reasoning parsers document (DeepSeek-R1 with and
// without the opening tag, Qwen3 with thinking on and off, a tool call
// opened from thinking, a length cut while thinking).
func TestThinkEnd(t *testing.T) {
	for _, tc := range []struct {
		text string
		end  int
		ok   bool
	}{
		{"The answer is 42.", 0, false},
		{"Models write <think> tags around their thoughts.", 0, false},
		{"<think>I need to think about this...</think>The answer is 42.", len("<think>I need to think about this...</think>"), true},
		{"I need to think about this...</think>The answer is 42.", len("I need to think about this...</think>"), true},
		{"\n<think>\nhmm\n</think>\n\nYes.", len("\n<think>\nhmm\n</think>"), true},
		{"<think>hmm, a tool<tool_call>{}</tool_call>", len("<think>hmm, a tool"), true},
		{"<think>cut while thinking", len("<think>cut while thinking"), true},
	} {
		end, ok := thinkEnd(tc.text)
		if end != tc.end || ok != tc.ok {
			t.Errorf("thinkEnd(%q) = %d, %v, want %d, %v", tc.text, end, ok, tc.end, tc.ok)
		}
	}
}

// TestSamples states the rules of Result.Samples, one case each.
func TestSamples(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
	events := func(at ...float64) []Event {
		var ev []Event
		for _, a := range at {
			ev = append(ev, Event{At: ms(a), Tokens: 1})
		}
		return ev
	}
	tests := []struct {
		name string
		r    Result
		want Samples
	}{
		{
			name: "streamed: TTFT from the first token, TPOT over the tokens after it",
			r: Result{Stream: true, Scheduled: ms(-5), Sent: ms(0), FirstToken: ms(100), End: ms(130),
				Events: events(100, 110, 120, 130), OutputTokens: 4, OutputTokensSource: TokenSourceUsage},
			want: Samples{Queue: 5 * time.Millisecond, TTFT: 100 * time.Millisecond, E2E: 130 * time.Millisecond,
				TPOTSeconds: (0.130 - 0.100) / 3, OutputTokens: 4, OutputTokensSource: TokenSourceUsage, FirstTokens: 1,
				TTFAT: 100 * time.Millisecond, AnswerTokens: 4, AnswerTPOTSeconds: (0.130 - 0.100) / 3},
		},
		{
			name: "not streamed: the answer arrives whole, so only E2E is measured",
			r: Result{Stream: false, Scheduled: ms(-5), Sent: ms(0), FirstToken: ms(100), End: ms(100),
				Events: []Event{{At: ms(100), Tokens: 4}}, OutputTokens: 4},
			want: Samples{Queue: 5 * time.Millisecond, TTFT: -1, E2E: 100 * time.Millisecond, TPOTSeconds: -1,
				OutputTokens: 4, FirstTokens: 4, TTFAT: -1, AnswerTokens: 4, AnswerTPOTSeconds: -1},
		},
		{
			name: "streamed, one token: no TPOT",
			r:    Result{Stream: true, Sent: ms(0), FirstToken: ms(100), End: ms(200), Events: events(100), OutputTokens: 1},
			want: Samples{Queue: -1, TTFT: 100 * time.Millisecond, E2E: 200 * time.Millisecond, TPOTSeconds: -1,
				OutputTokens: 1, FirstTokens: 1, TTFAT: 100 * time.Millisecond, AnswerTokens: 1, AnswerTPOTSeconds: -1},
		},
		{
			name: "streamed, no output: no TTFT or TPOT",
			r:    Result{Stream: true, Sent: ms(0), End: ms(50), OutputTokens: 3},
			want: Samples{Queue: -1, TTFT: -1, E2E: 50 * time.Millisecond, TPOTSeconds: -1, OutputTokens: 3,
				TTFAT: -1, AnswerTokens: 3, AnswerTPOTSeconds: -1},
		},
		{
			name: "never sent: nothing is measured but the counts",
			r:    Result{Stream: true, Scheduled: ms(0), InputTokens: 7, InputTokensSource: TokenSourceDataset},
			want: Samples{Queue: -1, TTFT: -1, E2E: -1, TPOTSeconds: -1, InputTokens: 7, InputTokensSource: TokenSourceDataset,
				TTFAT: -1, AnswerTPOTSeconds: -1},
		},
		{
			name: "a clock going backwards clamps at zero",
			r:    Result{Stream: true, Scheduled: ms(1000), Sent: ms(0), FirstToken: ms(-1000), End: ms(0), OutputTokens: 2},
			want: Samples{Queue: 0, TTFT: 0, E2E: 0, TPOTSeconds: 0, OutputTokens: 2, AnswerTokens: 2},
		},
		{
			name: "reasoning: TTFAT at the first answer event, answer TPOT over the answer's tokens",
			r: Result{Stream: true, Sent: ms(0), FirstToken: ms(100), FirstAnswer: ms(130), End: ms(160),
				Events:       []Event{{At: ms(100), Tokens: 1, Reasoning: true}, {At: ms(110), Tokens: 2, Reasoning: true}, {At: ms(130), Tokens: 1}, {At: ms(160), Tokens: 2}},
				OutputTokens: 6, OutputTokensSource: TokenSourceUsage, ReasoningTokens: 3, ReasoningTokensSource: TokenSourceCounted},
			want: Samples{Queue: -1, TTFT: 100 * time.Millisecond, E2E: 160 * time.Millisecond, TPOTSeconds: (0.160 - 0.100) / 5,
				OutputTokens: 6, OutputTokensSource: TokenSourceUsage, FirstTokens: 1,
				Reasoning: true, TTFAT: 130 * time.Millisecond, ReasoningTokens: 3, ReasoningTokensSource: TokenSourceCounted,
				AnswerTokens: 3, AnswerTPOTSeconds: (0.160 - 0.130) / 2},
		},
		{
			name: "reasoning cut before the answer: no TTFAT",
			r: Result{Stream: true, Sent: ms(0), FirstToken: ms(100), End: ms(110),
				Events:       []Event{{At: ms(100), Tokens: 1, Reasoning: true}, {At: ms(110), Tokens: 1, Reasoning: true}},
				OutputTokens: 2, ReasoningTokens: 2, ReasoningTokensSource: TokenSourceCounted},
			want: Samples{Queue: -1, TTFT: 100 * time.Millisecond, E2E: 110 * time.Millisecond, TPOTSeconds: (110 * time.Millisecond).Seconds() - (100 * time.Millisecond).Seconds(),
				OutputTokens: 2, FirstTokens: 1, Reasoning: true, TTFAT: -1, ReasoningTokens: 2, ReasoningTokensSource: TokenSourceCounted,
				AnswerTPOTSeconds: -1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.r.Samples()); diff != "" {
				t.Errorf("Samples() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
