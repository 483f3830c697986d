package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
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

// TestProbeConfigModule: `probe --config.file --module` sends what the
// daemon's probe of that module sends: its dataset's prompt (three random
// modules with different seeds sent the same default prompt before), and a
// --max-tokens the user gave overrides the module's output_len.
func TestProbeConfigModule(t *testing.T) {
	var scripts []llmtest.Script
	for range 4 {
		scripts = append(scripts, chatScript())
	}
	srv := llmtest.NewServer(scripts...)
	defer srv.Close()
	cfg := "targets:\n  - name: t\n    url: " + srv.URL + "\n    backend: vllm-chat\n    model: m\n    modules: [r1, r2, r3]\nmodules:\n" +
		"  r1: {dataset: random, input_len: 24, output_len: 8, seed: 1}\n" +
		"  r2: {dataset: random, input_len: 24, output_len: 8, seed: 2}\n" +
		"  r3: {dataset: random, input_len: 24, output_len: 8, seed: 3, temperature: 0.5}\n"
	path := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	maxTokens := true
	for _, mod := range []string{"r1", "r2", "r3"} {
		if _, err := runProbe(t.Context(), &probeArgs{ConfigFile: path, Target: "t", Module: mod, set: map[string]*bool{}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runProbe(t.Context(), &probeArgs{ConfigFile: path, Target: "t", Module: "r1", MaxTokens: 3,
		set: map[string]*bool{"max-tokens": &maxTokens}}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("server saw %d requests, want 4", len(reqs))
	}
	type body struct {
		Messages []struct{ Content string } `json:"messages"`
		Max      int                        `json:"max_completion_tokens"`
		Temp     float64                    `json:"temperature"`
	}
	seen := map[string]string{}
	for i, raw := range reqs {
		var b body
		if err := json.Unmarshal(raw, &b); err != nil || len(b.Messages) == 0 {
			t.Fatalf("request %d: %v %s", i, err, raw)
		}
		p := b.Messages[len(b.Messages)-1].Content
		if strings.Contains(p, "Write one sentence about the sky") {
			t.Errorf("request %d sent the default prompt, not the module's dataset", i)
		}
		wantMax := 8
		if i == 3 {
			wantMax = 3
		}
		if b.Max != wantMax {
			t.Errorf("request %d: max_completion_tokens %d, want %d", i, b.Max, wantMax)
		}
		if i == 2 && b.Temp != 0.5 {
			t.Errorf("module r3's temperature: sent %v, want 0.5", b.Temp)
		}
		if i < 3 {
			if other, dup := seen[p]; dup {
				t.Errorf("modules %s and %d sent the same prompt %q", other, i, p)
			}
			seen[p] = strconv.Itoa(i)
		}
	}
}

// TestProbeSummaryText: what `servingprobe probe` prints states only what
// was measured. A response that was not streamed (--no-stream) has its E2E
// and no TTFT, TPOT or ITL (not "TPOT 0.00 ms"); a connection reads "new"
// with its phases or "reused"; a server's own timings follow ours.
func TestProbeSummaryText(t *testing.T) {
	sent := time.Unix(1700000000, 0)
	streamed := prober.Result{Target: "t", Backend: "vllm-chat", Stream: true, Outcome: prober.OutcomeSuccess, HTTPStatus: 200,
		Sent: sent, FirstToken: sent.Add(40 * time.Millisecond), End: sent.Add(100 * time.Millisecond), OutputTokens: 3,
		Events: []prober.Event{{At: sent.Add(40 * time.Millisecond), Tokens: 1}, {At: sent.Add(70 * time.Millisecond), Tokens: 1}, {At: sent.Add(100 * time.Millisecond), Tokens: 1}},
		Trace:  prober.Trace{ConnReused: true}, Clock: prober.ClockKernel}
	// The same stream sent again on a new connection: the reused one
	// closed before answering.
	retried := streamed
	retried.Trace, retried.ConnRetries = prober.Trace{}, 1
	retried.InputTokens, retried.InputTokensSource, retried.CachedTokens = 15, prober.TokenSourceUsage, 14
	// As Samples gives a result that was not streamed: no first token.
	whole := prober.Result{Target: "t", Backend: "ollama", Stream: false, Outcome: prober.OutcomeSuccess, HTTPStatus: 200,
		Sent: sent, End: sent.Add(250 * time.Millisecond), OutputTokens: 16,
		Server: prober.ServerTimings{TotalDuration: 240 * time.Millisecond, LoadDuration: 2 * time.Millisecond, PromptEvalCount: 9,
			PromptEvalDuration: 30 * time.Millisecond, EvalCount: 16, EvalDuration: 200 * time.Millisecond}, Clock: prober.ClockKernel}
	// The same stream with its first event reasoning: the answer begins at 70 ms.
	reasoned := streamed
	reasoned.Events = slices.Clone(streamed.Events)
	reasoned.Events[0].Reasoning = true
	reasoned.FirstAnswer = reasoned.Events[1].At
	reasoned.ReasoningTokens, reasoned.ReasoningTokensSource = 1, prober.TokenSourceCounted
	embedded := prober.Result{Target: "t", Backend: "openai-embeddings", Outcome: prober.OutcomeSuccess, HTTPStatus: 200,
		Sent: sent, End: sent.Add(12 * time.Millisecond), InputTokens: 7, InputTokensSource: prober.TokenSourceUsage, RequestedOutputTokens: 16}
	for _, tc := range []struct {
		name          string
		r             prober.Result
		want, notWant []string
	}{
		{"embedding", embedded,
			[]string{`(?m)^E2E +12.00 ms$`, `(?m)^Tokens in +7 \(usage\)$`},
			// No output: neither "not streamed" timings nor the --max-tokens it never sends.
			[]string{`TTFT`, `TPOT`, `ITL`, `Tokens out`, `requested`}},
		{"reasoning first", reasoned,
			[]string{`(?m)^TTFT +40.00 ms$`, `(?m)^First answer token +70.00 ms \(after 30.00 ms of reasoning\)$`, `(?m)^Answer TPOT +30.00 ms$`,
				`(?m)^Tokens reasoning +1 \(counted: the server stated none\), answer 2$`,
				// Two gaps in all; the answer's one is from its first token at 70 ms.
				`(?m)^ITL per token +p50 30.00 ms  p99 30.00 ms  max 30.00 ms  \(2\)`, `(?m)^Answer ITL per token +p50 30.00 ms  p99 30.00 ms  max 30.00 ms  \(1\)$`},
			nil},
		{"streamed, reused connection", streamed,
			[]string{`(?m)^TTFT +40.00 ms$`, `(?m)^TPOT +30.00 ms$`, `(?m)^ITL per token +p50 30.00 ms`, `(?m)^E2E +100.00 ms$`, `(?m)^Connection +reused \(no DNS, connect or TLS\)$`,
				`(?m)^Timestamps +kernel receive times \(start: the request's write on the reused connection\)$`},
			[]string{`not measured`, `connection:`, `Server timings`, `answer`, `new connection`}},
		{"streamed, retried on a new connection", retried,
			[]string{`(?m)^Connection +new, after a reused one closed before answering \(sent again; --compat new-connection avoids reuse\): DNS `,
				`(?m)^Timestamps +kernel receive times \(start: the HTTP call, before its connection was dialled\)$`,
				`(?m)^Tokens in +15 \(usage\), 14 of them from the server's prompt cache$`},
			[]string{`reused connection\)`}},
		{"not streamed, new connection, server timings", whole,
			[]string{`(?m)^TTFT +not measured: the response was not streamed \(only E2E is\)$`, `(?m)^TPOT +not measured`, `(?m)^ITL +not measured`,
				`(?m)^E2E +250.00 ms$`, `(?m)^Connection +new: DNS `, `(?m)^Timestamps +kernel receive times \(start: the HTTP call, before its connection was dialled\)$`,
				`(?m)^Server timings +load 2.00 ms, prompt eval 30.00 ms \(9 tokens\), eval 200.00 ms \(16 tokens, 12.50 ms/token\), total 240.00 ms$`},
			[]string{`TPOT +0.00 ms`, `TPOT +–`, `ITL per`, `new connection`, `reused`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeProbeSummary(&b, tc.r)
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(b.String()) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.notWant {
				if regexp.MustCompile(w).MatchString(b.String()) {
					t.Errorf("output has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestProbeAPIKeyHeader: OPENAI_API_KEY goes to an anthropic target as the
// bearer token and, kept secret the same way, as x-api-key; other backends
// get the bearer token alone.
func TestProbeAPIKeyHeader(t *testing.T) {
	for _, tc := range []struct {
		backend   string
		wantXAPIK bool
	}{{"anthropic", true}, {"vllm-chat", false}} {
		t.Run(tc.backend, func(t *testing.T) {
			target, _, _, err := resolveProbe(&probeArgs{URL: "http://127.0.0.1:8000", Backend: tc.backend, Model: "m", APIKey: "sk-test",
				Timeout: time.Second, MaxTokens: 4})
			if err != nil {
				t.Fatal(err)
			}
			hc := target.HTTPClientConfig
			if hc.Authorization == nil || string(hc.Authorization.Credentials) != "sk-test" {
				t.Errorf("authorization = %+v, want the bearer token", hc.Authorization)
			}
			var got []string
			if hc.HTTPHeaders != nil {
				for _, s := range hc.HTTPHeaders.Headers["x-api-key"].Secrets {
					got = append(got, string(s))
				}
			}
			if want := tc.wantXAPIK; (len(got) == 1 && got[0] == "sk-test") != want {
				t.Errorf("x-api-key secrets = %q, want it set: %v", got, want)
			}
		})
	}
}
