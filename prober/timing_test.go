package prober

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/llmtest"
)

// wordCounter counts space-separated words: a stand-in tokenizer.
type wordCounter struct{}

func (wordCounter) Count(s string) (int, error) { return len(strings.Fields(s)), nil }

func chatEv(content string) string {
	return `data: {"choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
}

const (
	roleEv  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	finEv   = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n"
	usageEv = `data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":6}}` + "\n\n"
	doneEv  = "data: [DONE]\n\n"
)

// TestTiming proves the timing definitions with exact virtual durations.
func TestTiming(t *testing.T) {
	ms := time.Millisecond
	type want struct {
		Outcome           Outcome
		TTFT, E2E, TPOT   time.Duration
		ChunkITLs, ITLs   []time.Duration
		OutputTokens      int
		EventTokensSource TokenSource
		Queue             time.Duration
	}
	for _, tc := range []struct {
		name    string
		script  llmtest.Script
		counter Counter
		queue   time.Duration
		want    want
	}{
		{
			name: "role-only, keep-alive, finish-only and usage-only events never move TTFT or ITL",
			script: llmtest.Script{HeaderDelay: 30 * ms, Chunks: []llmtest.Chunk{
				{Delay: 20 * ms, Data: roleEv},        // 50
				{Delay: 40 * ms, Data: ": ping\n\n"},  // 90
				{Delay: 60 * ms, Data: chatEv("a")},   // 150: first token
				{Delay: 5 * ms, Data: ": ping\n\n"},   // 155
				{Delay: 20 * ms, Data: chatEv("b c")}, // 175
				{Delay: 25 * ms, Data: chatEv("d")},   // 200
				{Delay: 7 * ms, Data: finEv},          // 207
				{Delay: 3 * ms, Data: usageEv},        // 210
				{Delay: 2 * ms, Data: doneEv},         // 212: End
			}},
			queue: 15 * ms,
			want: want{
				Outcome: OutcomeSuccess, TTFT: 150 * ms, E2E: 212 * ms,
				TPOT:         (212 - 150) * ms / 5, // 6 tokens from usage
				ChunkITLs:    []time.Duration{25 * ms, 25 * ms},
				ITLs:         []time.Duration{25 * ms, 25 * ms},
				OutputTokens: 6, EventTokensSource: TokenSourceEvents, Queue: 15 * ms,
			},
		},
		{
			name: "with a tokenizer, a chunk of n tokens splits its gap n ways",
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: chatEv(" a")},
				{Delay: 30 * ms, Data: chatEv(" b c d")}, // speculative: 3 tokens at once
				{Delay: 10 * ms, Data: chatEv(" e")},
				{Delay: 0, Data: finEv + doneEv},
			}},
			counter: wordCounter{},
			want: want{
				Outcome: OutcomeSuccess, TTFT: 100 * ms, E2E: 140 * ms, TPOT: 40 * ms / 4,
				ChunkITLs:    []time.Duration{30 * ms, 10 * ms},
				ITLs:         []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms},
				OutputTokens: 5, EventTokensSource: TokenSourceTokenizer,
			},
		},
		{
			name: "events coalesced in one write share one arrival time",
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: chatEv("a")},
				{Delay: 50 * ms, Data: chatEv("b") + chatEv("c") + chatEv("d")},
				{Delay: 10 * ms, Data: finEv + doneEv},
			}},
			want: want{
				Outcome: OutcomeSuccess, TTFT: 100 * ms, E2E: 160 * ms, TPOT: 60 * ms / 3,
				ChunkITLs:    []time.Duration{50 * ms, 0, 0},
				ITLs:         []time.Duration{50 * ms, 0, 0},
				OutputTokens: 4, EventTokensSource: TokenSourceEvents,
			},
		},
		{
			name: "a reset mid-stream ends at the failure",
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: chatEv("a")},
				{Delay: 10 * ms, Data: chatEv("b")},
			}, Reset: syscall.ECONNRESET},
			want: want{
				Outcome: OutcomeStreamCut, TTFT: 100 * ms, E2E: 110 * ms, TPOT: 10 * ms,
				ChunkITLs: []time.Duration{10 * ms}, ITLs: []time.Duration{10 * ms},
				OutputTokens: 2, EventTokensSource: TokenSourceEvents,
			},
		},
		{
			name: "a stall mid-stream hits the deadline",
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: chatEv("a")},
			}, Hang: true},
			want: want{
				Outcome: OutcomeTimeout, TTFT: 100 * ms, E2E: time.Second,
				OutputTokens: 1, EventTokensSource: TokenSourceEvents,
			},
		},
		{
			name:   "a stall before headers hits the deadline",
			script: llmtest.Script{HeaderDelay: time.Hour},
			want:   want{Outcome: OutcomeTimeout, E2E: time.Second},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &Prober{
					Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{tc.script}}},
					Backend: openAIChat{},
					Options: RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true, IncludeUsage: true},
					Counter: tc.counter,
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				scheduled := time.Now()
				time.Sleep(tc.queue)
				r := p.Run(ctx, datasets.Prompt{Text: "x", OutputLen: 8}, scheduled)
				got := want{
					Outcome: r.Outcome, TTFT: r.TTFT(), E2E: r.E2E(), TPOT: r.TPOT(),
					ChunkITLs: r.ChunkITLs(), ITLs: r.ITLs(), OutputTokens: r.OutputTokens,
					EventTokensSource: r.EventTokensSource, Queue: r.QueueTime(),
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Run() timing (-want +got):\n%s\nerr: %s", diff, r.Err)
				}
			})
		})
	}
}

// TestParentCancel checks a cancelled parent context is "canceled", not a
// timeout or a cut stream.
func TestParentCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &Prober{
			Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{{Chunks: []llmtest.Chunk{{Delay: 10 * time.Millisecond, Data: chatEv("a")}}, Hang: true}}}},
			Backend: openAIChat{},
			Options: RequestOptions{BaseURL: "http://llm.test", Stream: true},
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		r := p.Run(ctx, datasets.Prompt{Text: "x"}, time.Time{})
		if r.Outcome != OutcomeCanceled || r.E2E() != 50*time.Millisecond {
			t.Errorf("Run() = %s after %v (%s), want canceled after 50ms", r.Outcome, r.E2E(), r.Err)
		}
	})
}
