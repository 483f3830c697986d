package prober

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestNDJSONToSSEBackend: ollama's native API (application/x-ndjson, in
// the form of its docs/api.md) answering a backend that reads SSE. Before,
// the lines decoded as events with no tokens and no end, and the request
// ended as stream_cut; now it is refused on its Content-Type, and the
// error says what the user has to change.
func TestNDJSONToSSEBackend(t *testing.T) {
	const body = `{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","response":"The","done":false}
{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","response":" sky","done":false}
{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","response":"","done":true,"done_reason":"stop","context":[1,2,3],"total_duration":10706818083,"load_duration":6338219291,"prompt_eval_count":26,"prompt_eval_duration":130079000,"eval_count":259,"eval_duration":4232710000}
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	for _, name := range []string{"openai", "openai-chat", "sglang", "trt", "truss"} {
		t.Run(name, func(t *testing.T) {
			info, err := LookupBackend(name)
			if err != nil {
				t.Fatal(err)
			}
			p := &Prober{Client: srv.Client(), Backend: info.New(), Name: name,
				Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true}}
			res := p.Run(t.Context(), datasets.Prompt{Text: "Why is the sky blue?", OutputLen: 2}, time.Time{})
			if res.Outcome != OutcomeParseError {
				t.Errorf("outcome = %q (%v), want parse_error", res.Outcome, res.Err)
			}
			if !strings.Contains(res.Err, "newline-delimited JSON") || !strings.Contains(res.Err, "--backend ollama") {
				t.Errorf("error = %q, want it to name the framing and the backend to use", res.Err)
			}
			if res.OutputTokens != 0 || len(res.Events) != 0 {
				t.Errorf("%d tokens in %d events from a stream that was not read", res.OutputTokens, len(res.Events))
			}
		})
	}
}

// ollamaOpenAIChunk is one chunk of ollama's OpenAI-compatible
// /v1/chat/completions stream (its openai package: a ChatCompletionChunk
// written as "data: <json>\n\n", Content-Type text/event-stream).
const ollamaOpenAIChunk = `{"id":"chatcmpl-613","object":"chat.completion.chunk","created":1730000000,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":" sky"},"finish_reason":null}]}`

// TestSSEToNDJSONBackend: ollama's OpenAI route answering a backend that
// reads ollama's native NDJSON. Before, every chunk decoded as an empty
// event, no token was counted, and the request ran until the server
// stopped or the timeout (31 s and 730 KB against a real ollama). Now it
// is refused at the first event, whatever the Content-Type says, with the
// backend to use.
func TestSSEToNDJSONBackend(t *testing.T) {
	for _, ct := range []string{"text/event-stream", "application/x-ndjson", ""} {
		for _, name := range []string{"ollama", "ollama-chat"} {
			t.Run(name+"/"+ct, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header()["Content-Type"] = nil // no sniffed type when ct is empty
					if ct != "" {
						w.Header().Set("Content-Type", ct)
					}
					f := w.(http.Flusher)
					for r.Context().Err() == nil { // a model that does not stop
						if _, err := io.WriteString(w, "data: "+ollamaOpenAIChunk+"\n\n"); err != nil {
							return
						}
						f.Flush()
						time.Sleep(time.Millisecond)
					}
				}))
				defer srv.Close()
				info, err := LookupBackend(name)
				if err != nil {
					t.Fatal(err)
				}
				p := &Prober{Client: srv.Client(), Backend: info.New(), Name: name,
					Options: RequestOptions{BaseURL: srv.URL, Model: "llama3.2", Stream: true}}
				// A refusal that did not happen at the first bytes would run
				// until this deadline and end as a timeout, not parse_error.
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				res := p.Run(ctx, datasets.Prompt{Text: "Why is the sky blue?", OutputLen: 16}, time.Time{})
				if res.Outcome != OutcomeParseError {
					t.Errorf("outcome = %q (%v), want parse_error", res.Outcome, res.Err)
				}
				if !strings.Contains(res.Err, "server-sent events") || !strings.Contains(res.Err, "--backend openai-chat") {
					t.Errorf("error = %q, want it to name the framing and the backend to use", res.Err)
				}
				if res.OutputTokens != 0 || len(res.Events) != 0 {
					t.Errorf("%d tokens in %d events from a stream that was not read", res.OutputTokens, len(res.Events))
				}
			})
		}
	}
}

// TestTokenlessStreamCut: streams whose events never carry a token, in
// each framing, end as overrun after a bounded stretch instead of running
// until the server or the timeout stops them.
func TestTokenlessStreamCut(t *testing.T) {
	for _, tc := range []struct {
		backend, ct, line string
	}{
		// role-only chat chunks, as vLLM sends the first one
		{"openai-chat", "text/event-stream", `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` + "\n\n"},
		// usage-only completions chunks (an empty choices list)
		{"vllm", "text/event-stream", `data: {"id":"c","object":"text_completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}` + "\n\n"},
		// ollama's native lines with empty text (as its first line before a thinking model's output)
		{"ollama", "application/x-ndjson", `{"model":"m","created_at":"2025-08-15T21:38:23.714020953Z","response":"","done":false}` + "\n"},
		// sglang chunks whose cumulative count never moves
		{"sglang", "text/event-stream", `data: {"text":"","meta_info":{"id":"x","finish_reason":null,"prompt_tokens":3,"completion_tokens":0,"cached_tokens":0}}` + "\n\n"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			gone := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(gone)
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tc.ct)
				f := w.(http.Flusher)
				for r.Context().Err() == nil {
					if _, err := io.WriteString(w, tc.line); err != nil {
						return
					}
					f.Flush()
				}
			}))
			defer srv.Close()
			info, _ := LookupBackend(tc.backend)
			p := &Prober{Client: srv.Client(), Backend: info.New(), Name: tc.backend,
				Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true}}
			const n = 16
			res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: n}, time.Time{})
			if res.Outcome != OutcomeOverrun || !strings.Contains(res.Err, "without a token") {
				t.Fatalf("outcome = %q (%s), want overrun without a token", res.Outcome, res.Err)
			}
			events, bytes := StallLimits(n)
			if res.BytesRead > bytes+burstBufSize || res.BytesRead > int64(events+1)*int64(len(tc.line))+burstBufSize {
				t.Errorf("read %d bytes before the cut, want at most %d events' worth", res.BytesRead, events+1)
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Fatal("the server kept streaming after the client cut the stream")
			}
		})
	}
}

// TestTokenlessBytesCut: one huge event after another, each without a
// token, is cut by bytes before the event count is reached.
func TestTokenlessBytesCut(t *testing.T) {
	pad := strings.Repeat("x", 200<<10)
	line := `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}],"pad":"` + pad + `"}` + "\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	p := &Prober{Client: srv.Client(), Backend: openAIChat{}, Name: "openai-chat",
		Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true}}
	res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 1}, time.Time{})
	events, bytes := StallLimits(1)
	if res.Outcome != OutcomeOverrun || !strings.Contains(res.Err, "without a token") {
		t.Fatalf("outcome = %q (%s), want overrun without a token", res.Outcome, res.Err)
	}
	if res.BytesRead > bytes+int64(2*len(line)) || int64(events)*int64(len(line)) <= bytes {
		t.Errorf("read %d bytes, want the cut near the %d-byte limit, before %d events", res.BytesRead, bytes, events)
	}
}
