package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/simulator"
)

// vllmResultKeys are the keys, in order, of the object vLLM's
// `vllm bench serve --save-result --save-detailed` writes for a run with
// no --max-concurrency, --goodput or ramp-up, and one --metadata pair,
// with their JSON types, as vllm/benchmarks/serve.py builds it:
// main_async's result_json (date ... num_prompts, the metadata pairs,
// request_rate, burstiness, max_concurrency), then benchmark()'s result
// dict (duration ... rtfx; --save-detailed keeps input_lens, output_lens,
// ttfts, itls, start_times, generated_texts and errors), then
// process_one_metric's mean_/median_/std_/pXX_ keys for the default
// --percentile-metrics ttft,tpot,itl at --metric-percentiles 99.
var vllmResultKeys = []struct{ key, kind string }{
	{"date", "string"}, {"endpoint_type", "string"}, {"backend", "string"}, {"label", "string"},
	{"model_id", "string"}, {"tokenizer_id", "string"}, {"num_prompts", "number"},
	{"team", "string"}, // --metadata team=sre
	{"request_rate", "string"}, {"burstiness", "number"}, {"max_concurrency", "null"},
	{"duration", "number"}, {"completed", "number"}, {"failed", "number"},
	{"total_input_tokens", "number"}, {"total_output_tokens", "number"},
	{"request_throughput", "number"}, {"request_goodput", "null"}, {"output_throughput", "number"},
	{"total_token_throughput", "number"},
	{"input_lens", "array"}, {"output_lens", "array"}, {"ttfts", "array"}, {"itls", "array"},
	{"latencies", "array"}, {"start_times", "array"}, {"queue_times", "array"},
	{"generated_texts", "array"}, {"errors", "array"},
	{"max_output_tokens_per_s", "number"}, {"max_concurrent_requests", "number"}, {"rtfx", "number"},
	{"mean_ttft_ms", "number"}, {"median_ttft_ms", "number"}, {"std_ttft_ms", "number"}, {"p99_ttft_ms", "number"},
	{"mean_tpot_ms", "number"}, {"median_tpot_ms", "number"}, {"std_tpot_ms", "number"}, {"p99_tpot_ms", "number"},
	{"mean_itl_ms", "number"}, {"median_itl_ms", "number"}, {"std_itl_ms", "number"}, {"p99_itl_ms", "number"},
}

func jsonKindOf(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case bytes.Equal(t, []byte("null")):
		return "null"
	case t[0] == '"':
		return "string"
	case t[0] == '[':
		return "array"
	case t[0] == '{':
		return "object"
	}
	return "number"
}

// orderedKeys are the top-level keys of a JSON object, in order.
func orderedKeys(t *testing.T, b []byte) ([]string, map[string]json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v", err)
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		vals[k.(string)] = v
	}
	return keys, vals
}

// TestBenchVLLMCommandLine runs a vllm bench serve command line, with
// `vllm bench serve` replaced by `servingprobe bench`, against the
// simulator: the sonnet dataset, and the result file vLLM writes, with
// vLLM's keys in vLLM's order and types (vllmResultKeys), the label and
// the metadata pair at the top level and our figures under servingprobe;
// the printed block is vLLM's; --append-result then appends a second
// object on a line of its own; and compare's reader takes the file.
func TestBenchVLLMCommandLine(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "D")
	args := []string{"bench", "--base-url", srv.URL, "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--dataset-name", "sonnet", "--sonnet-input-len", "300", "--sonnet-prefix-len", "100", "--sonnet-output-len", "8",
		"--num-prompts", "4", "--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "run.json",
		"--label", "x", "--metadata", "team=sre", "--ready-check-timeout-sec", "10", "--disable-tqdm"}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, line := range []string{"Request rate configured (RPS):", "Peak concurrent requests:", "Time per Output Token (excl. 1st token)", "P99 ITL (ms):"} {
		if line != "Request rate configured (RPS):" && !strings.Contains(stdout, line) {
			t.Errorf("vLLM's block lacks %q:\n%s", line, stdout)
		}
	}
	if strings.Contains(stdout, "Request rate configured") || strings.Contains(stdout, "Input token throughput") {
		t.Errorf("an infinite rate prints no configured rate, and vLLM prints no input throughput:\n%s", stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	keys, vals := orderedKeys(t, b)
	var want []string
	for _, k := range vllmResultKeys {
		want = append(want, k.key)
		if got := vals[k.key]; got != nil && jsonKindOf(got) != k.kind {
			t.Errorf("%s is %s (%s), want %s", k.key, jsonKindOf(got), got, k.kind)
		}
	}
	if !reflect.DeepEqual(keys, append(want, "servingprobe")) {
		t.Errorf("keys\n %v\nwant vLLM's\n %v and servingprobe", keys, want)
	}
	for k, w := range map[string]string{"label": `"x"`, "team": `"sre"`, "backend": `"openai"`, "request_rate": `"inf"`, "completed": "4", "num_prompts": "4"} {
		if got := string(vals[k]); got != w {
			t.Errorf("%s = %s, want %s", k, got, w)
		}
	}
	var lens []int
	if err := json.Unmarshal(vals["input_lens"], &lens); err != nil || len(lens) != 4 {
		t.Fatalf("input_lens %s: %v", vals["input_lens"], err)
	}
	for _, n := range lens {
		if n > 300 || n < 200 {
			t.Errorf("sonnet prompt of %d tokens, want at most --sonnet-input-len 300 and near it", n)
		}
	}

	// compare reads vLLM's file as a run.
	sum, err := bench.ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Completed != 4 || sum.TTFT.P99 <= 0 || sum.Details == nil || len(sum.Details.TTFTs) != 4 {
		t.Errorf("parsed vLLM result: completed %d, TTFT p99 %g, details %v", sum.Completed, sum.TTFT.P99, sum.Details != nil)
	}

	code, stdout, stderr = runCLI(t, append(args, "--append-result")...)
	if code != 0 {
		t.Fatalf("append: exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err = os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(string(b), "\n"); len(lines) != 2 || !json.Valid([]byte(lines[0])) || !json.Valid([]byte(lines[1])) {
		t.Errorf("--append-result: %d lines, want two JSON objects", len(lines))
	}
}

// TestBenchVLLMDatasetsRun runs vLLM's prefix_repetition, spec_bench,
// random-mm and random with --random-prefix-len through the CLI against
// the simulator: each completes every request it made.
func TestBenchVLLMDatasetsRun(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	spec := filepath.Join(t.TempDir(), "question.jsonl")
	if err := os.WriteFile(spec, []byte(`{"category": "math", "turns": ["What is 2+2?"]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"prefix_repetition", []string{"--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "32", "--prefix-repetition-suffix-len", "8", "--prefix-repetition-num-prefixes", "2", "--prefix-repetition-output-len", "4"}, 4},
		{"spec_bench", []string{"--dataset-name", "spec_bench", "--dataset-path", spec, "--spec-bench-output-len", "4"}, 4},
		{"random-mm", []string{"--backend", "openai-chat", "--dataset-name", "random-mm", "--random-input-len", "16", "--random-output-len", "4", "--random-mm-bucket-config", "{(32, 32, 1): 1.0}"}, 4},
		{"random prefix", []string{"--dataset-name", "random", "--random-prefix-len", "16", "--random-input-len", "8", "--random-output-len", "4"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--base-url", srv.URL, "--tokenizer", "../../tokenizer/testdata/qwen3",
				"--num-prompts", "4", "--ready-check-timeout-sec", "10", "--disable-tqdm", "--no-server-metrics"}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if got := tableInt(t, stdout, "Successful requests:"); got != tc.want {
				t.Errorf("successful requests %d, want %d\n%s", got, tc.want, stdout)
			}
		})
	}
}
