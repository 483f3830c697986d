package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

func llmdSim(t *testing.T) string { return llmtest.LLMDSim(t) }

// TestBenchEndToEndLLMD runs the same bench as TestBenchEndToEndSimulator
// against a third-party vLLM simulator.
func TestBenchEndToEndLLMD(t *testing.T) {
	base := startLLMD(t, "--time-to-first-token", "20ms", "--inter-token-latency", "2ms")
	benchE2E(t, base)
}

// startLLMD starts llm-d-inference-sim with the flags every test here
// uses and these, and returns its base URL once it answers.
func startLLMD(t *testing.T, flags ...string) string {
	t.Helper()
	bin := llmdSim(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(t.Context())
	args := append([]string{"--model", "Qwen/Qwen2.5-0.5B-Instruct", "--port", strconv.Itoa(port),
		"--mode", "random", "--force-dummy-tokenizer", "--max-num-seqs", "64"}, flags...)
	cmd := exec.CommandContext(ctx, bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/models")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("llm-d-inference-sim not ready after 60 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return base
}

// TestBenchServerMetricsLLMD reads a third-party vLLM simulator's
// /metrics (vLLM's names) around a bench with a 60 ms TTFT: the server's
// TTFT p50 is near 60 ms and at most ours, in the table and the JSONL, and
// its prompt and generation token counts are ours.
func TestBenchServerMetricsLLMD(t *testing.T) {
	base := startLLMD(t, "--time-to-first-token", "60ms", "--inter-token-latency", "2ms")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, stdout, stderr := runCLI(t, "bench", "--backend", "vllm", "--base-url", base,
		"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--random-input-len", "64", "--random-output-len", "16", "--random-range-ratio", "1",
		"--num-prompts", "40", "--request-rate", "inf", "--max-concurrency", "8",
		"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10")
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("table:\n%s", stdout)
	m := regexp.MustCompile(`(?m)^Server TTFT P50/P90/P99 \(ms\): +([0-9.]+) / `).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no server TTFT row in the table:\n%s\nstderr:\n%s", stdout, stderr)
	}
	tableP50, _ := strconv.ParseFloat(m[1], 64)
	ours := tableFloat(t, stdout, "Median TTFT (ms):")
	if tableP50 < 40 || tableP50 > 80 || tableP50 > ours {
		t.Errorf("server TTFT p50 %v ms, want near 60 and at most ours (%v ms)", tableP50, ours)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		TotalOutputTokens int `json:"total_output_tokens"`
		TotalInputTokens  int `json:"total_input_tokens"`
		Completed         int `json:"completed"`
		Servingprobe      struct {
			Server struct {
				Engine string `json:"engine"`
				TTFT   struct {
					Count float64 `json:"count"`
					P50   float64 `json:"p50"`
				} `json:"ttft_ms"`
				PromptTokens     *float64 `json:"prompt_tokens"`
				GenerationTokens *float64 `json:"generation_tokens"`
				Gap              struct {
					P50 float64 `json:"p50"`
				} `json:"ttft_minus_server_ms"`
			} `json:"server"`
		} `json:"servingprobe"`
	}
	// bench_serving writes an infinite rate as Python's bare Infinity.
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(b), "Infinity", "null")), &rec); err != nil {
		t.Fatalf("record: %v\n%s", err, b)
	}
	sv := rec.Servingprobe.Server
	if sv.Engine != "vllm" || math.Abs(sv.TTFT.P50-tableP50) > 0.01 || sv.TTFT.Count != float64(rec.Completed) || sv.Gap.P50 < 0 {
		t.Errorf("JSONL server block = %+v, want engine vllm, TTFT p50 %v ms as the table over %d requests, gap >= 0", sv, tableP50, rec.Completed)
	}
	if sv.GenerationTokens == nil || *sv.GenerationTokens != float64(rec.TotalOutputTokens) {
		t.Errorf("server generation tokens %v, want ours %d", sv.GenerationTokens, rec.TotalOutputTokens)
	}
	// The simulator counts the prompt tokens it states in usage, which
	// are ours (bench takes the server's usage first).
	if sv.PromptTokens == nil || *sv.PromptTokens != float64(rec.TotalInputTokens) {
		t.Errorf("server prompt tokens %v, want ours %d", sv.PromptTokens, rec.TotalInputTokens)
	}
}

// tableFloat reads the number after a table label in bench's output.
func tableFloat(t *testing.T, stdout, label string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + `\s*([0-9.]+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no %q line in:\n%s", label, stdout)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestBenchTraceDatasetsLLMD replays the trace and plan datasets against
// a third-party vLLM simulator: an Azure code trace and a BurstGPT trace
// on their timestamps, and a two-phase dynamic plan. Every request
// succeeds, and the table and the JSONL agree on the totals, which are
// the simulator's usage (no --compat: input is what the server counted).
func TestBenchTraceDatasetsLLMD(t *testing.T) {
	base := startLLMD(t, "--time-to-first-token", "2ms", "--inter-token-latency", "1ms", "--max-model-len", "16384")
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"phases": [
		{"name": "a", "duration": 0.2, "request_rate": 20, "input_len": 8, "output_len": 3},
		{"name": "b", "duration": 0.1, "request_rate": 20, "input_len": 16, "output_len": 6}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"azure-trace", []string{"--dataset-name", "azure-trace", "--dataset-path", "../../datasets/testdata/azure_code_2023.csv",
			"--num-prompts", "4", "--use-trace-timestamps", "--mooncake-slowdown-factor", "0.01"}, 4},
		{"burstgpt", []string{"--dataset-name", "burstgpt", "--dataset-path", "../../datasets/testdata/burstgpt.csv",
			"--num-prompts", "3", "--use-trace-timestamps", "--mooncake-slowdown-factor", "0.001"}, 3},
		{"dynamic", []string{"--dataset-name", "dynamic", "--dynamic-workload-path", plan}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := append([]string{"bench", "--backend", "vllm", "--base-url", base, "--tokenizer", "../../tokenizer/testdata/qwen3",
				"--output-file", out, "--strict-json", "--disable-tqdm", "--ready-check-timeout-sec", "10", "--warmup-requests", "0"}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if got := tableInt(t, stdout, "Successful requests:"); got != tc.want {
				t.Errorf("successful requests %d, want %d\n%s", got, tc.want, stdout)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Completed         int `json:"completed"`
				TotalInputTokens  int `json:"total_input_tokens"`
				TotalOutputTokens int `json:"total_output_tokens"`
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Completed != tc.want || rec.TotalInputTokens != tableInt(t, stdout, "Total input tokens:") ||
				rec.TotalOutputTokens != tableInt(t, stdout, "Total generated tokens:") || rec.TotalInputTokens == 0 {
				t.Errorf("JSONL completed %d, input %d, output %d; the table says otherwise or nothing was counted\n%s",
					rec.Completed, rec.TotalInputTokens, rec.TotalOutputTokens, stdout)
			}
		})
	}
}
