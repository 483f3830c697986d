package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/internal/llmtest"
	"github.com/servingprobe/servingprobe/prober"
)

const (
	probeRole  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	probeA     = `data: {"choices":[{"index":0,"delta":{"content":" The"},"finish_reason":null}]}` + "\n\n"
	probeB     = `data: {"choices":[{"index":0,"delta":{"content":" sky"},"finish_reason":"length"}]}` + "\n\n"
	probeUsage = `data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}` + "\n\n"
	probeDone  = "data: [DONE]\n\n"
)

func chatScript() llmtest.Script {
	return llmtest.Script{Chunks: llmtest.SSE(20*time.Millisecond, 5*time.Millisecond, probeRole, probeA, probeB, probeUsage, probeDone)}
}

// TestRunProbe exercises the probe core over a real loopback socket,
// including model detection and the API key header.
func TestRunProbe(t *testing.T) {
	srv := llmtest.NewServer(
		llmtest.Script{Header: http.Header{"Content-Type": {"application/json"}}, Chunks: []llmtest.Chunk{{Data: `{"object":"list","data":[{"id":"tiny-model","object":"model"}]}`}}},
		chatScript(),
	)
	defer srv.Close()
	res, err := runProbe(t.Context(), &probeArgs{
		URL: srv.URL, Backend: "vllm-chat", Prompt: "hi", MaxTokens: 2, Stream: true, IgnoreEOS: true,
		IncludeUsage: true, Timeout: 10 * time.Second, APIKey: "sk-test", Headers: map[string]string{"X-Extra": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != prober.OutcomeSuccess || res.Model != "tiny-model" || res.OutputTokens != 2 || res.InputTokens != 9 {
		t.Errorf("runProbe() = %s model %q tokens %d/%d (%s), want success, tiny-model, 9/2",
			res.Outcome, res.Model, res.InputTokens, res.OutputTokens, res.Err)
	}
	// Real sockets: only loose bounds. The first token is scripted 20 ms
	// after the headers.
	if res.Samples().TTFT < 20*time.Millisecond || res.Samples().E2E < res.Samples().TTFT {
		t.Errorf("TTFT %v, E2E %v: want TTFT >= 20ms and E2E >= TTFT", res.Samples().TTFT, res.Samples().E2E)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2 (models, chat)", len(reqs))
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[1], &body); err != nil {
		t.Fatal(err)
	}
	if body["model"] != "tiny-model" || body["max_completion_tokens"] != float64(2) {
		t.Errorf("chat body = %v, want detected model and max_completion_tokens 2", body)
	}
}

// TestProbeCommand runs the whole CLI: summary, JSON, and the exit code of
// a failed request.
func TestProbeCommand(t *testing.T) {
	ok := llmtest.NewServer(chatScript())
	defer ok.Close()
	failing := llmtest.NewServer(llmtest.Script{Status: 503, Header: http.Header{"Content-Type": {"text/plain"}}, Chunks: []llmtest.Chunk{{Data: "overloaded"}}})
	defer failing.Close()
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{"summary", []string{"probe", "--url", ok.URL, "--backend", "openai-chat", "--model", "m", "--max-tokens", "2"}, 0,
			[]string{"Outcome", "success (HTTP 200)", "TTFT", "ITL per token", "Tokens out", "2 (usage), requested 2", "Finish reason", "length"}, ""},
		{"json", []string{"probe", "--url", ok.URL, "--backend", "vllm-chat", "--model", "m", "--json"}, 0,
			[]string{`"outcome": "success"`, `"ttft_seconds"`, `"itl_seconds"`}, ""},
		{"http error exits 1", []string{"probe", "--url", failing.URL, "--backend", "vllm", "--model", "m"}, 1,
			[]string{"http_5xx (HTTP 503)", "overloaded"}, "probe failed: http_5xx"},
		{"no url", []string{"probe"}, 1, nil, "--url or --config.file is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			code := run(ctx, tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if tc.wantErr != "" && !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, stderr.String())
			}
		})
	}
}
