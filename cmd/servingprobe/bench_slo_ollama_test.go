package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/internal/testing/llmtest"
)

// TestBenchSLOSearchOllama runs the SLO search with its defaults against a
// real engine, ollama with 4 parallel slots, twice in a row: the search
// that once flooded ollama (1,250 requests in 0.13 s, 23 GB, no request
// finished) must answer within its default 5-minute budget. The requests
// are short (64 tokens in, 8 out) and the objective one that ollama meets
// one request at a time on a busy 2-core machine (measured there: 256 in
// and 32 out take 2 s and one request's TTFT p99 is over 500 ms; 64 in and
// 8 out, 1.1 req/s and a TTFT p99 of 1.7 s), so that each point has
// samples enough to decide within its 30 s; the two
// answers must agree within the precision each states (their brackets
// [answer, bound) overlap), and ollama must answer a probe within 5 s
// after each search.
func TestBenchSLOSearchOllama(t *testing.T) {
	o := llmtest.StartOllama(t, "OLLAMA_NUM_PARALLEL=4")
	if err := o.Healthy(60 * time.Second); err != nil {
		t.Fatalf("ollama does not answer before the search (the model loads on the first request): %v", err)
	}
	type answer struct{ capacity, bound float64 }
	var answers []answer
	for i := range 2 {
		out := filepath.Join(t.TempDir(), "slo.jsonl")
		code, stdout, stderr := runCLI(t, "bench", "--backend", "vllm", "--base-url", o.URL, "--model", llmtest.OllamaModel,
			"--tokenizer", "../../tokenizer/testdata/qwen3", "--dataset-name", "random",
			"--random-input-len", "64", "--random-output-len", "8", "--slo", "ttft:p99<=5s",
			"--output-file", out, "--disable-tqdm", "--strict-json")
		if code != 0 {
			t.Fatalf("search %d: bench exited %d\nstdout:\n%s\nstderr:\n%s", i+1, code, stdout, stderr)
		}
		table := stdout[max(0, strings.LastIndex(stdout, "SLO search:")-40):]
		if err := o.Healthy(5 * time.Second); err != nil {
			t.Fatalf("search %d: ollama does not answer a probe within 5 s after the search: %v\n%s", i+1, err, table)
		}
		// The search ended on its own, within its budget: no budget line.
		if strings.Contains(stdout, "budget (--slo-budget") {
			t.Fatalf("search %d: the default 5-minute budget ran out:\n%s", i+1, table)
		}
		var measured time.Duration
		for _, r := range readRecords(t, out) {
			d, _ := r["duration"].(float64)
			measured += time.Duration(d * float64(time.Second))
		}
		m := regexp.MustCompile(`Highest request rate meeting the SLO: ([\d.]+) req/s \(held twice; (?:it breaks by|below the completion capacity,) ([\d.]+) req/s`).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("search %d: no confirmed answer with its bound:\n%s", i+1, table)
		}
		c, _ := strconv.ParseFloat(m[1], 64)
		b, _ := strconv.ParseFloat(m[2], 64)
		answers = append(answers, answer{c, b})
		t.Logf("search %d: %v req/s, bound %v req/s, %s measured\n%s", i+1, c, b, measured.Round(time.Second), table)
	}
	a, b := answers[0], answers[1]
	if !(a.capacity < b.bound && b.capacity < a.bound) {
		t.Errorf("the two searches disagree beyond their stated precision: [%v, %v) and [%v, %v)", a.capacity, a.bound, b.capacity, b.bound)
	}
}
