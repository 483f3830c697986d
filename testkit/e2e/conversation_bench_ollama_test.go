package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// TestOllamaBenchConversation runs bench's conversation dataset against a
// real ollama with one slot, whose prompt cache keeps the last request's
// prefix, one conversation at a time: each conversation's turn 1 starts
// with a fresh random prefix (cold), its later turns resend the history
// the slot holds (warm). The record's conversations block must show it:
// turn 3's median TTFT under half of turn 1's, and ollama's own prompt
// evaluation time (prompt_eval_duration, the prefill of what its cache did
// not hold) per turn, also under half of turn 1's. Ollama states no
// cached token count, so the cached share is 0. Tolerances are wide: a
// real engine on a shared CPU. The first message is 2500 tokens, so that
// its prefill outweighs what a busy machine adds to every first token:
// with 1000, inside the main test run, ollama's prefill of turn 3 was a
// third of turn 1's while the client's TTFT was 0.53 of it, some 500 ms
// of each being the wait for a CPU.
func TestOllamaBenchConversation(t *testing.T) {
	llmtest.OllamaDir(t) // skips, saying how to build it, before the build
	bin := binary(t)
	tok, err := filepath.Abs("../../tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	o := llmtest.StartOllama(t, "OLLAMA_NUM_PARALLEL=1")
	if err := o.Healthy(3 * time.Minute); err != nil {
		t.Fatalf("ollama did not answer a first generation: %v", err)
	}
	out := filepath.Join(t.TempDir(), "conv.jsonl")
	code, console := runBinary(t, bin, "bench", "--backend", "ollama-chat", "--base-url", o.URL, "--model", llmtest.OllamaModel,
		"--tokenizer", tok, "--dataset-name", "conversation", "--conversation-turns", "3", "--random-input-len", "2500",
		"--conversation-turn-input-len", "32", "--random-range-ratio", "1", "--random-output-len", "8", "--num-prompts", "4", "--max-concurrency", "1",
		"--warmup-requests", "0", "--seed", "1", "--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "0")
	if code != 0 {
		t.Fatalf("bench exit %d:\n%s", code, console)
	}
	i := strings.Index(console, "Conversation turns")
	if i < 0 {
		t.Fatalf("the table has no Conversation turns block:\n%s", console)
	}
	t.Logf("%s", console[i:])
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bench.ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Conversations
	if c == nil || c.Sessions != 4 || c.EndedByFailure != 0 || len(c.Turns) != 3 {
		t.Fatalf("conversations %+v: want 4 of 3 turns, none ended by a failure", c)
	}
	cold, warm := c.Turns[0], c.Turns[2]
	if cold.Completed != 4 || warm.Completed != 4 {
		t.Fatalf("turns %+v: want every turn of every conversation to succeed", c.Turns)
	}
	if !(warm.TTFT.Median < cold.TTFT.Median/2) {
		t.Errorf("turn 3's median TTFT %.1f ms is not under half of turn 1's %.1f ms: the history was not served from the cache", warm.TTFT.Median, cold.TTFT.Median)
	}
	if cold.PromptEvalRequests != 4 || warm.PromptEvalRequests != 4 || !(warm.PromptEvalMs < cold.PromptEvalMs/2) {
		t.Errorf("ollama's prompt eval: turn 1 %.1f ms over %d requests, turn 3 %.1f ms over %d: want it stated on every request, turn 3's under half of turn 1's",
			cold.PromptEvalMs, cold.PromptEvalRequests, warm.PromptEvalMs, warm.PromptEvalRequests)
	}
	if cold.CachedTokens != 0 || warm.CachedTokens != 0 || cold.InputTokens < 4*2400 {
		t.Errorf("turn 1 %+v, turn 3 %+v: ollama states no cached count, and turn 1 sends the 2500-token messages", cold, warm)
	}
}
