package prober

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
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
		{
			name: "a stated reasoning count without reasoning events: the first event is the answer's",
			r: Result{Stream: true, Sent: ms(0), FirstToken: ms(900), End: ms(920), Events: events(900, 910, 920),
				OutputTokens: 43, OutputTokensSource: TokenSourceUsage, ReasoningTokens: 40, ReasoningTokensSource: TokenSourceUsage},
			want: Samples{Queue: -1, TTFT: 900 * time.Millisecond, E2E: 920 * time.Millisecond, TPOTSeconds: ((920 * time.Millisecond).Seconds() - (900 * time.Millisecond).Seconds()) / 42,
				OutputTokens: 43, OutputTokensSource: TokenSourceUsage, FirstTokens: 1, Reasoning: true, TTFAT: 900 * time.Millisecond,
				ReasoningTokens: 40, ReasoningTokensSource: TokenSourceUsage, AnswerTokens: 3, AnswerTPOTSeconds: ((920 * time.Millisecond).Seconds() - (900 * time.Millisecond).Seconds()) / 2},
		},
		{
			name: "the server's stated TTFT splits ours",
			r: Result{Stream: true, Sent: ms(0), FirstToken: ms(900), End: ms(920), Events: events(900, 910, 920),
				OutputTokens: 3, OutputTokensSource: TokenSourceUsage, Server: ServerTimings{FirstToken: 700 * time.Millisecond}},
			want: Samples{Queue: -1, TTFT: 900 * time.Millisecond, E2E: 920 * time.Millisecond, TPOTSeconds: ((920 * time.Millisecond).Seconds() - (900 * time.Millisecond).Seconds()) / 2,
				OutputTokens: 3, OutputTokensSource: TokenSourceUsage, FirstTokens: 1, TTFAT: 900 * time.Millisecond, AnswerTokens: 3,
				AnswerTPOTSeconds: ((920 * time.Millisecond).Seconds() - (900 * time.Millisecond).Seconds()) / 2,
				ServerTTFT:        700 * time.Millisecond, OutsideServerTTFT: 200 * time.Millisecond},
		},
		{
			name: "a stated TTFT beyond ours is not this request's: no split",
			r: Result{Stream: true, Sent: ms(0), FirstToken: ms(900), End: ms(920), Events: events(900, 910, 920),
				OutputTokens: 3, OutputTokensSource: TokenSourceUsage, Server: ServerTimings{FirstToken: 901 * time.Millisecond}},
			want: Samples{Queue: -1, TTFT: 900 * time.Millisecond, E2E: 920 * time.Millisecond, TPOTSeconds: ((920 * time.Millisecond).Seconds() - (900 * time.Millisecond).Seconds()) / 2,
				OutputTokens: 3, OutputTokensSource: TokenSourceUsage, FirstTokens: 1, TTFAT: 900 * time.Millisecond, AnswerTokens: 3,
				AnswerTPOTSeconds: ((920 * time.Millisecond).Seconds() - (900 * time.Millisecond).Seconds()) / 2,
				ServerTTFT:        -1, OutsideServerTTFT: -1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want.ServerTTFT == 0 && want.OutsideServerTTFT == 0 {
				// The server stated no TTFT in most cases: undefined.
				want.ServerTTFT, want.OutsideServerTTFT = -1, -1
			}
			if diff := cmp.Diff(want, tc.r.Samples()); diff != "" {
				t.Errorf("Samples() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnswerITLGaps states which gaps are the answer's: those measured
// from the first answer event on, per token and per chunk.
func TestAnswerITLGaps(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type gap struct {
		Ms, Tokens int
	}
	tests := []struct {
		name               string
		r                  Result
		perToken, perChunk []gap
	}{
		{
			name:     "no reasoning: every gap is the answer's",
			r:        Result{Events: []Event{{At: ms(100), Tokens: 1}, {At: ms(110), Tokens: 2}, {At: ms(130), Tokens: 1}}},
			perToken: []gap{{10, 2}, {20, 1}}, perChunk: []gap{{10, 1}, {20, 1}},
		},
		{
			name: "reasoning: the gap into the answer is reasoning's",
			r: Result{ReasoningTokensSource: TokenSourceCounted, Events: []Event{{At: ms(100), Tokens: 1, Reasoning: true},
				{At: ms(105), Tokens: 1, Reasoning: true}, {At: ms(150), Tokens: 1}, {At: ms(157), Tokens: 3}, {At: ms(170), Tokens: 1}}},
			perToken: []gap{{7, 3}, {13, 1}}, perChunk: []gap{{7, 1}, {13, 1}},
		},
		{
			name: "an answer event without a token count moves no reference per token",
			r: Result{ReasoningTokensSource: TokenSourceCounted, Events: []Event{{At: ms(100), Tokens: 1, Reasoning: true},
				{At: ms(150), Tokens: 0}, {At: ms(160), Tokens: 2}, {At: ms(175), Tokens: 1}}},
			perToken: []gap{{15, 1}}, perChunk: []gap{{10, 1}, {15, 1}},
		},
		{
			name: "reasoning after the answer began is in the answer's gaps",
			r: Result{ReasoningTokensSource: TokenSourceCounted, Events: []Event{{At: ms(100), Tokens: 1, Reasoning: true},
				{At: ms(120), Tokens: 1}, {At: ms(125), Tokens: 1, Reasoning: true}, {At: ms(133), Tokens: 1}}},
			perToken: []gap{{5, 1}, {8, 1}}, perChunk: []gap{{5, 1}, {8, 1}},
		},
		{
			name: "cut while thinking: no answer gaps",
			r: Result{ReasoningTokensSource: TokenSourceCounted, Events: []Event{{At: ms(100), Tokens: 1, Reasoning: true},
				{At: ms(110), Tokens: 1, Reasoning: true}}},
		},
		{
			name:     "a stated reasoning count without reasoning events: the stream is the answer",
			r:        Result{ReasoningTokens: 40, ReasoningTokensSource: TokenSourceUsage, Events: []Event{{At: ms(900), Tokens: 1}, {At: ms(910), Tokens: 1}}},
			perToken: []gap{{10, 1}}, perChunk: []gap{{10, 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, perChunk := range []bool{false, true} {
				want := tc.perToken
				if perChunk {
					want = tc.perChunk
				}
				var got []gap
				for g := range tc.r.AnswerITLGaps(perChunk) {
					got = append(got, gap{int(g.Gap / time.Millisecond), g.Tokens})
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("AnswerITLGaps(%t) (-want +got):\n%s", perChunk, diff)
				}
				// The answer's gaps are the last of ITLGaps: a suffix the
				// bench keeps as part of a request's samples.
				var all []ITLGap
				for g := range tc.r.ITLGaps(perChunk) {
					all = append(all, g)
				}
				for i, g := range all[len(all)-len(got):] {
					if !g.Answer || (i == 0 && len(all) > len(got) && all[len(all)-len(got)-1].Answer) {
						t.Errorf("ITLGaps(%t): the answer's gaps are not its last %d: %+v", perChunk, len(got), all)
					}
				}
				var wantSecs []float64
				for _, g := range want {
					for range g.Tokens {
						wantSecs = append(wantSecs, (time.Duration(g.Ms)*time.Millisecond).Seconds()/float64(g.Tokens))
					}
				}
				if diff := cmp.Diff(wantSecs, tc.r.AppendAnswerITLs(nil, perChunk)); diff != "" {
					t.Errorf("AppendAnswerITLs(%t) (-want +got):\n%s", perChunk, diff)
				}
			}
		})
	}
}

// TestAnswerITLTranscripts replays reasoning streams captured from the
// servers (reasoning in reasoning_content, in reasoning, in think tags the
// server left in the content, on the Responses and Anthropic routes) with
// a different delay before each event, and checks that the answer's gaps
// are exactly the gaps between the answer's chunks. The answer chunks are
// listed by hand from each transcript (their index among its events).
func TestAnswerITLTranscripts(t *testing.T) {
	for _, tc := range []struct {
		file   string
		answer []int
	}{
		{"vllm-chat/reasoning.sse", []int{3}},
		{"vllm-chat/reasoning_field.sse", []int{3, 4}},
		{"vllm-chat/think_tags.sse", []int{5, 6}},
		{"vllm-chat/think_close_only.sse", []int{4}},
		{"sglang-oai-chat/reasoning_tokens_stated.sse", []int{3, 4}},
		{"openai-responses/vllm_reasoning.sse", []int{10, 11}},
		{"anthropic/vllm_thinking.sse", []int{6, 7}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			transcript, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			events := llmtest.SplitEvents(string(transcript))
			// Event i arrives after a delay of 100+i² ms: every gap differs.
			var chunks []llmtest.Chunk
			arrive := make([]time.Duration, len(events))
			var at time.Duration
			for i, e := range events {
				d := time.Duration(100+i*i) * time.Millisecond
				at += d
				arrive[i] = at
				chunks = append(chunks, llmtest.Chunk{Delay: d, Data: e})
			}
			r := replayChunks(t, filepath.Base(filepath.Dir(tc.file)), llmtest.Script{Chunks: chunks})
			if r.Outcome != OutcomeSuccess || r.ReasoningTokensSource == "" {
				t.Fatalf("outcome %s, reasoning source %q: want a success that reasoned", r.Outcome, r.ReasoningTokensSource)
			}
			if sm := r.Samples(); sm.TTFAT != arrive[tc.answer[0]] {
				t.Errorf("TTFAT = %v, want the first answer chunk's arrival %v", sm.TTFAT, arrive[tc.answer[0]])
			}
			var want, got []time.Duration
			for k := 1; k < len(tc.answer); k++ {
				want = append(want, arrive[tc.answer[k]]-arrive[tc.answer[k-1]])
			}
			for g := range r.AnswerITLGaps(true) {
				got = append(got, g.Gap)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer gaps per chunk (-want +got):\n%s", diff)
			}
			// Per token, the same gaps, each shared by its event's tokens.
			got = got[:0]
			var n, answerTokens int
			for g := range r.AnswerITLGaps(false) {
				got = append(got, g.Gap)
				n += g.Tokens
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer gaps per token (-want +got):\n%s", diff)
			}
			for _, e := range r.Events[len(r.Events)-len(tc.answer)+1:] {
				answerTokens += e.Tokens
			}
			if n != answerTokens || len(r.AppendAnswerITLs(nil, false)) != n {
				t.Errorf("per-token answer samples: %d tokens in the gaps, %d samples; the answer chunks after the first carry %d",
					n, len(r.AppendAnswerITLs(nil, false)), answerTokens)
			}
		})
	}
}

// replayChunks plays one scripted stream through backend inside a
// synctest bubble, as replay does for the golden transcripts, so that the
// arrival times are exact virtual times after Sent.
func replayChunks(t *testing.T, backend string, script llmtest.Script) Result {
	t.Helper()
	return replayScript(t, backend, script, true)
}

// replayScript sends one request of backend, streamed or not, through
// script inside a synctest bubble.
func replayScript(t *testing.T, backend string, script llmtest.Script, stream bool) Result {
	t.Helper()
	b, err := NewBackend(backend)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	synctest.Test(t, func(t *testing.T) {
		p := &Prober{
			Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{script}}},
			Backend: b,
			Name:    backend,
			Options: RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: stream, IgnoreEOS: true, IncludeUsage: true},
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		res = p.Run(ctx, datasets.Prompt{Text: "What colour is the sky?", OutputLen: 4, PromptLen: 7}, time.Now())
	})
	return res
}
