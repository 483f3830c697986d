package prober

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// wordCounter counts space-separated words: a stand-in tokenizer.
type wordCounter struct{}

func (wordCounter) Count(s string) (int, error) { return len(strings.Fields(s)), nil }

// charCounter counts bytes: a stand-in tokenizer under which a chunk's
// text retokenized alone gives more ids than the server's one token, as
// Qwen3 does for "tok ".
type charCounter struct{}

func (charCounter) Count(s string) (int, error) { return len(s), nil }

// sglangEv is a /generate event: cumulative text and completion_tokens.
func sglangEv(text string, ct int) string {
	return `data: {"text":"` + text + `","meta_info":{"id":"1","finish_reason":null,"prompt_tokens":3,"completion_tokens":` +
		strconv.Itoa(ct) + `}}` + "\n\n"
}

func reasoningEv(content string) string {
	return `data: {"choices":[{"index":0,"delta":{"reasoning_content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
}

func usageOnly(ct int) string {
	return `data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":` + strconv.Itoa(ct) + `}}` + "\n\n"
}

func chatEv(content string) string {
	return `data: {"choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
}

const (
	roleEv  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	finEv   = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n"
	usageEv = `data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":6}}` + "\n\n"
	doneEv  = "data: [DONE]\n\n"
)

// itlDurations are r's ITL samples as durations, rounded to the
// nanosecond (tests compare exact virtual times).
func itlDurations(r *Result, perChunk bool) []time.Duration {
	var out []time.Duration
	for _, v := range r.AppendITLs(nil, perChunk) {
		out = append(out, time.Duration(math.Round(v*1e9)))
	}
	return out
}

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
		backend Backend // openAIChat if nil
		script  llmtest.Script
		counter Counter
		queue   time.Duration
		want    want
	}{
		{
			name: "the server's count is the count: a chunk that retokenizes to 2 ids alone is still 1 token",
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: chatEv("ab")},
				{Delay: 10 * ms, Data: chatEv("ab")},
				{Delay: 10 * ms, Data: chatEv("ab")},
				{Delay: 10 * ms, Data: chatEv("ab")},
				{Delay: 0, Data: finEv + usageOnly(4) + doneEv},
			}},
			counter: charCounter{},
			want: want{
				Outcome: OutcomeSuccess, TTFT: 100 * ms, E2E: 130 * ms, TPOT: 10 * ms,
				ChunkITLs:    []time.Duration{10 * ms, 10 * ms, 10 * ms},
				ITLs:         []time.Duration{10 * ms, 10 * ms, 10 * ms},
				OutputTokens: 4, EventTokensSource: TokenSourceEvents,
			},
		},
		{
			name: "without a server count the whole text is counted once and spread by chunk",
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: chatEv("ab")},
				{Delay: 10 * ms, Data: chatEv("cdef")},
				{Delay: 10 * ms, Data: chatEv("gh")},
				{Delay: 0, Data: finEv + doneEv},
			}},
			counter: charCounter{},
			want: want{
				Outcome: OutcomeSuccess, TTFT: 100 * ms, E2E: 120 * ms, TPOT: 2857143, // 20 ms / 7, rounded
				ChunkITLs:    []time.Duration{10 * ms, 10 * ms},
				ITLs:         []time.Duration{2500 * time.Microsecond, 2500 * time.Microsecond, 2500 * time.Microsecond, 2500 * time.Microsecond, 5 * ms, 5 * ms},
				OutputTokens: 8, EventTokensSource: TokenSourceSpread,
			},
		},
		{
			name: "without any count or tokenizer, one token per event",
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: chatEv("ab")},
				{Delay: 10 * ms, Data: chatEv("cdef")},
				{Delay: 0, Data: finEv + doneEv},
			}},
			want: want{
				Outcome: OutcomeSuccess, TTFT: 100 * ms, E2E: 110 * ms, TPOT: 10 * ms,
				ChunkITLs: []time.Duration{10 * ms}, ITLs: []time.Duration{10 * ms},
				OutputTokens: 2, EventTokensSource: TokenSourceEvents,
			},
		},
		{
			name:    "sglang: cumulative text; an event whose count did not move is skipped and keeps the reference",
			backend: sglangGenerate{},
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: sglangEv(" a", 1)},
				{Delay: 10 * ms, Data: sglangEv(" a b", 2)},
				{Delay: 10 * ms, Data: sglangEv(" a b c", 2)}, // held-back text released, no new token
				{Delay: 10 * ms, Data: sglangEv(" a b c d e", 4)},
				{Delay: 0, Data: doneEv},
			}},
			want: want{
				Outcome: OutcomeSuccess, TTFT: 100 * ms, E2E: 130 * ms, TPOT: 10 * ms,
				ChunkITLs:    []time.Duration{10 * ms, 10 * ms, 10 * ms},
				ITLs:         []time.Duration{10 * ms, 10 * ms, 10 * ms},
				OutputTokens: 4, EventTokensSource: TokenSourceMetaInfo,
			},
		},
		{
			name: "reasoning text is output: it sets TTFT and counts as events",
			script: llmtest.Script{Chunks: []llmtest.Chunk{
				{Delay: 100 * ms, Data: reasoningEv("think")},
				{Delay: 10 * ms, Data: reasoningEv("more")},
				{Delay: 10 * ms, Data: chatEv("answer")},
				{Delay: 0, Data: finEv + usageOnly(3) + doneEv},
			}},
			want: want{
				Outcome: OutcomeSuccess, TTFT: 100 * ms, E2E: 120 * ms, TPOT: 10 * ms,
				ChunkITLs:    []time.Duration{10 * ms, 10 * ms},
				ITLs:         []time.Duration{10 * ms, 10 * ms},
				OutputTokens: 3, EventTokensSource: TokenSourceEvents,
			},
		},
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
				TPOT:      (212 - 150) * ms / 5, // 6 tokens from usage
				ChunkITLs: []time.Duration{25 * ms, 25 * ms},
				// usage's 6 tokens over 3 events: one each, and the 3 left
				// by text length beyond the first byte ("b c" has 2 more).
				ITLs:         []time.Duration{6250 * time.Microsecond, 6250 * time.Microsecond, 6250 * time.Microsecond, 6250 * time.Microsecond, 25 * ms},
				OutputTokens: 6, EventTokensSource: TokenSourceSpread, Queue: 15 * ms,
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
				OutputTokens: 5, EventTokensSource: TokenSourceSpread,
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
				Outcome: OutcomeTimeout, TTFT: 100 * ms, E2E: time.Second, TPOT: -1,
				OutputTokens: 1, EventTokensSource: TokenSourceEvents,
			},
		},
		{
			name:   "a stall before headers hits the deadline",
			script: llmtest.Script{HeaderDelay: time.Hour},
			want:   want{Outcome: OutcomeTimeout, TTFT: -1, E2E: time.Second, TPOT: -1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if tc.backend == nil {
					tc.backend = openAIChat{}
				}
				p := &Prober{
					Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{tc.script}}},
					Backend: tc.backend,
					Options: RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true, IncludeUsage: true},
					Counter: tc.counter,
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				scheduled := time.Now()
				time.Sleep(tc.queue)
				r := p.Run(ctx, datasets.Prompt{Text: "x", OutputLen: 8}, scheduled)
				sm := r.Samples()
				got := want{
					Outcome: r.Outcome, TTFT: sm.TTFT, E2E: sm.E2E, TPOT: secondsDuration(sm.TPOTSeconds),
					ChunkITLs: itlDurations(&r, true), ITLs: itlDurations(&r, false), OutputTokens: r.OutputTokens,
					EventTokensSource: r.EventTokensSource, Queue: sm.Queue,
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
		if r.Outcome != OutcomeCanceled || r.Samples().E2E != 50*time.Millisecond {
			t.Errorf("Run() = %s after %v (%s), want canceled after 50ms", r.Outcome, r.Samples().E2E, r.Err)
		}
	})
}
