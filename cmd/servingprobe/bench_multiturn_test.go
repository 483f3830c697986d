package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/simulator"
)

// TestBenchMultiTurnGSP: a generated-shared-prefix run of 4 conversations
// of 3 turns sends 12 requests, each round carrying the replies the
// server really generated (the simulator refuses any other history with a
// 400, so one fabricated or missing reply would fail a request), and the
// table counts them all.
func TestBenchMultiTurnGSP(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	cfg.CheckHistory = true
	url := startSimulator(t, cfg)
	for _, backend := range []string{"vllm-chat", "ollama-chat"} {
		t.Run(backend, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "mt.jsonl")
			code, stdout, stderr := runCLI(t, "bench", "--backend", backend, "--base-url", url, "--model", cfg.Model,
				"--dataset-name", "generated-shared-prefix", "--tokenizer", "../../tokenizer/testdata/qwen3",
				"--gsp-num-groups", "2", "--gsp-prompts-per-group", "2", "--gsp-num-turns", "3",
				"--gsp-system-prompt-len", "32", "--gsp-question-len", "8", "--gsp-output-len", "6",
				"--request-rate", "inf", "--max-concurrency", "2", "--output-file", out, "--strict-json", "--output-details", "--disable-tqdm", "--ready-check-timeout-sec", "10")
			if code != 0 {
				t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			intAfter := func(label string) int { return tableInt(t, stdout, label) }
			if n := intAfter("Successful requests:"); n != 12 {
				t.Errorf("Successful requests: %d, want 4 conversations × 3 turns = 12\n%s", n, stdout)
			}
			if n := intAfter("Failed requests:"); n != 0 {
				t.Errorf("Failed requests: %d (a round with a history the server did not generate is refused)\n%s", n, stdout)
			}
			// 6 tokens per reply, every round (ollama has no ignore_eos:
			// the simulated model may stop early there).
			if n := intAfter("Total generated tokens:"); n != 72 && (backend != "ollama-chat" || n > 72 || n < 12) {
				t.Errorf("Total generated tokens: %d, want 72", n)
			}
			// A conversation's rounds take consecutive indices, and each
			// carries the one before it and its reply: the server counts
			// more input every round.
			recs := readRecords(t, out)
			lens, _ := recs[0]["input_lens"].([]any)
			if len(lens) != 12 {
				t.Fatalf("input_lens has %d entries, want 12", len(lens))
			}
			for c := range 4 {
				a, b, d := lens[3*c].(float64), lens[3*c+1].(float64), lens[3*c+2].(float64)
				if !(a < b && b < d) {
					t.Errorf("conversation %d: input tokens per round %v, %v, %v: want each round larger", c, a, b, d)
				}
			}
		})
	}
}

// TestBenchMultiTurnCustom: a messages row with two user turns is two
// requests, the second carrying the first reply in place of the row's
// recorded assistant turn; a one-turn row is one request.
func TestBenchMultiTurnCustom(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	cfg.CheckHistory = true
	url := startSimulator(t, cfg)
	path := filepath.Join(t.TempDir(), "conv.jsonl")
	rows := `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is a tide?"},{"role":"assistant","content":"A recorded answer the server never gave."},{"role":"user","content":"And a spring tide?"}],"output_len":5}
{"messages":[{"role":"user","content":"Name a colour."}],"output_len":5}
`
	if err := os.WriteFile(path, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "bench", "--backend", "openai-chat", "--base-url", url, "--model", cfg.Model,
		"--dataset-name", "custom", "--dataset-path", path, "--num-prompts", "2", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--output-file", filepath.Join(t.TempDir(), "o.jsonl"), "--disable-tqdm", "--ready-check-timeout-sec", "10")
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^Successful requests:\s+3\s`).MatchString(stdout) || !regexp.MustCompile(`(?m)^Failed requests:\s+0\s`).MatchString(stdout) {
		t.Errorf("want 3 successful requests (2 rounds + 1) and no failure:\n%s", stdout)
	}
}

// TestBenchMultiTurnRefused: a conversation dataset on a backend that
// sends one prompt is refused, naming the flag and the backends that can.
func TestBenchMultiTurnRefused(t *testing.T) {
	url := startSimulator(t, simulator.DefaultConfig())
	code, _, stderr := runCLI(t, "bench", "--backend", "vllm", "--base-url", url, "--model", simulator.DefaultConfig().Model,
		"--dataset-name", "generated-shared-prefix", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--gsp-num-groups", "1", "--gsp-prompts-per-group", "2", "--gsp-num-turns", "2",
		"--gsp-system-prompt-len", "16", "--gsp-question-len", "8", "--gsp-output-len", "4", "--disable-tqdm", "--ready-check-timeout-sec", "10")
	if code == 0 {
		t.Fatal("bench accepted a multi-turn dataset on a completions backend")
	}
	for _, want := range []string{"--gsp-num-turns 2", "--backend vllm", "vllm-chat", "ollama-chat"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("error lacks %q: %s", want, stderr)
		}
	}
}
