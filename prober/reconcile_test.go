package prober_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestQwen3SplitChunk runs the case that halved ITL: a server streams one
// token per chunk every 10 ms, each chunk's text "tok ", which the real
// Qwen3 tokenizer encodes as two ids on its own. The per-token ITL must be
// the server's 10 ms, with the server's count and without one.
func TestQwen3SplitChunk(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	counter := prober.TokenizerCounter{Tokenizer: tok}
	if n, _ := counter.Count("tok "); n != 2 {
		t.Fatalf("premise: Qwen3 encodes %q as %d ids alone, want 2", "tok ", n)
	}
	const tokens = 64
	chunk := `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}` + "\n\n"
	fin := `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n"
	usage := `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":` +
		strconv.Itoa(tokens) + `,"total_tokens":` + strconv.Itoa(tokens+5) + `}}` + "\n\n"
	for _, tc := range []struct {
		name       string
		withUsage  bool
		wantSource prober.TokenSource
	}{
		{"server count", true, prober.TokenSourceUsage},
		{"no server count", false, prober.TokenSourceTokenizer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := slices.Repeat([]string{chunk}, tokens)
			tail := fin
			if tc.withUsage {
				tail += usage
			}
			events = append(events, tail+"data: [DONE]\n\n")
			script := llmtest.Script{Chunks: llmtest.SSE(100*time.Millisecond, 10*time.Millisecond, events...)}
			var r prober.Result
			synctest.Test(t, func(t *testing.T) {
				be, err := prober.NewBackend("vllm-chat")
				if err != nil {
					t.Fatal(err)
				}
				p := &prober.Prober{
					Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{script}}},
					Backend: be, Name: "vllm-chat", Counter: counter,
					Options: prober.RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true, IncludeUsage: true},
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				r = p.Run(ctx, datasets.Prompt{Text: "x", OutputLen: tokens}, time.Now())
			})
			if r.Outcome != prober.OutcomeSuccess || r.OutputTokensSource != tc.wantSource {
				t.Fatalf("outcome %s, output tokens %d from %s (%s), want success from %s", r.Outcome, r.OutputTokens, r.OutputTokensSource, r.Err, tc.wantSource)
			}
			itl := r.AppendITLs(nil, false)
			slices.Sort(itl)
			median := itl[len(itl)/2]
			if median < 0.0098 || median > 0.0102 {
				t.Errorf("median ITL %.4f ms, want the server's 10 ms within 2%% (%d samples, events from %s)",
					median*1000, len(itl), r.EventTokensSource)
			}
			sum := 0
			for _, e := range r.Events {
				sum += e.Tokens
			}
			if sum != r.OutputTokens {
				t.Errorf("events carry %d tokens, output count is %d", sum, r.OutputTokens)
			}
			if tc.withUsage && r.OutputTokens != tokens {
				t.Errorf("output tokens %d, want the server's %d", r.OutputTokens, tokens)
			}
			if !strings.HasPrefix(r.GeneratedText, "tok tok") {
				t.Errorf("generated text %q", r.GeneratedText[:min(len(r.GeneratedText), 20)])
			}
		})
	}
}
