package prober

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// TestSglangThinkTagsParserOnOff replays sglang's chat stream of one Qwen3
// answer twice, as sglang sends it without a reasoning parser (the think tags
// in delta.content, one chunk per decode step) and with --reasoning-parser
// qwen3 (reasoning_content, and no chunk at all for the steps that decode to
// only <think> or </think>), on one timeline of decode steps that each take a
// different time. The answer begins at the same step either way, so TTFAT
// must be equal; TTFT is the <think> step without the parser and the step
// after it with the parser. docs/protocols.md states both.
func TestSglangThinkTagsParserOnOff(t *testing.T) {
	// Step k's arrival: 100+k² ms after the previous, so every gap differs.
	// Steps: 0 role, 1 <think>, 2 \n, 3 Sky, 4 " colour", 5 ?\n, 6 </think>,
	// 7 \n\n, 8 Blue, 9 ., 10 finish, 11 usage, 12 [DONE].
	const steps = 13
	var stepAt [steps]time.Duration
	var at time.Duration
	for k := range stepAt {
		at += time.Duration(100+k*k) * time.Millisecond
		stepAt[k] = at
	}
	replayAt := func(file string, eventSteps []int) Result {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "sglang-oai-chat", file))
		if err != nil {
			t.Fatal(err)
		}
		events := llmtest.SplitEvents(string(b))
		if len(events) != len(eventSteps) {
			t.Fatalf("%s: %d events, the test maps %d to decode steps", file, len(events), len(eventSteps))
		}
		var chunks []llmtest.Chunk
		var prev time.Duration
		for i, e := range events {
			chunks = append(chunks, llmtest.Chunk{Delay: stepAt[eventSteps[i]] - prev, Data: e})
			prev = stepAt[eventSteps[i]]
		}
		r := replayChunks(t, "sglang-oai-chat", llmtest.Script{Chunks: chunks})
		if r.Outcome != OutcomeSuccess || r.ReasoningTokensSource == "" {
			t.Fatalf("%s: outcome %s, reasoning source %q: want a success that reasoned", file, r.Outcome, r.ReasoningTokensSource)
		}
		return r
	}
	off := replayAt("think_tags_no_parser.sse", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	on := replayAt("reasoning_parser_qwen3.sse", []int{0, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12})

	offS, onS := off.Samples(), on.Samples()
	if offS.TTFAT != stepAt[7] || onS.TTFAT != stepAt[7] {
		t.Errorf("TTFAT without the parser %v, with it %v; want both the \\n\\n step's arrival %v", offS.TTFAT, onS.TTFAT, stepAt[7])
	}
	if offS.TTFT != stepAt[1] {
		t.Errorf("TTFT without the parser = %v, want the <think> step's arrival %v", offS.TTFT, stepAt[1])
	}
	if onS.TTFT != stepAt[2] {
		t.Errorf("TTFT with the parser = %v, want the step after <think> %v (the <think> step sends no chunk)", onS.TTFT, stepAt[2])
	}
	// The reasoning events are the tagged ones (both tags included) without
	// the parser, and the reasoning_content ones with it.
	for _, tc := range []struct {
		name      string
		r         Result
		reasoning int
	}{{"without the parser", off, 6}, {"with the parser", on, 4}} {
		n := 0
		for i, e := range tc.r.Events {
			if e.Reasoning != (i < tc.reasoning) {
				t.Errorf("%s: event %d reasoning = %v, want the first %d events reasoning", tc.name, i, e.Reasoning, tc.reasoning)
			}
			if e.Reasoning {
				n++
			}
		}
		if n != tc.reasoning {
			t.Errorf("%s: %d reasoning events, want %d", tc.name, n, tc.reasoning)
		}
	}
}
