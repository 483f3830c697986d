package simulator

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func keys(m map[string]any) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

func TestChatStreamFraming(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      string
		wantUsage bool
		want      int
	}{
		{"usage requested", `{"model":"servingprobe-sim","messages":[{"role":"user","content":"hello there world"}],"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, true, 5},
		{"no usage", `{"messages":[{"role":"user","content":"hello there world"}],"max_completion_tokens":7,"max_tokens":99,"ignore_eos":true,"stream":true}`, false, 7},
		{"content parts", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello there world"},{"type":"image_url","image_url":{"url":"https://example.invalid/cat.png"}}]}],"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, fastConfig())
			ts := startLoopback(t, s)
			resp := post(t, ts.Client(), ts.URL+"/v1/chat/completions", tc.body, RequestIDHeader, "req-1")
			if got, want := resp.Header.Get("Content-Type"), "text/event-stream; charset=utf-8"; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if got := resp.Header.Get(RequestIDHeader); got != "req-1" {
				t.Errorf("%s = %q, want req-1", RequestIDHeader, got)
			}
			events := sseEvents(t, readAll(t, resp))
			if events[len(events)-1] != "[DONE]" {
				t.Fatalf("last event = %q, want [DONE]", events[len(events)-1])
			}
			events = events[:len(events)-1]

			role := object(t, events[0])
			if diff := cmp.Diff([]string{"choices", "created", "id", "model", "object"}, keys(role)); diff != "" {
				t.Errorf("role chunk keys (-want +got):\n%s", diff)
			}
			if role["id"] != "chatcmpl-req-1" || role["object"] != "chat.completion.chunk" || role["model"] != "servingprobe-sim" {
				t.Errorf("role chunk header = %v", role)
			}
			choice := role["choices"].([]any)[0].(map[string]any)
			if diff := cmp.Diff(map[string]any{"role": "assistant", "content": ""}, choice["delta"]); diff != "" {
				t.Errorf("role delta (-want +got):\n%s", diff)
			}

			var text string
			tokenChunks := events[1:]
			var usage map[string]any
			if tc.wantUsage {
				last := object(t, tokenChunks[len(tokenChunks)-1])
				tokenChunks = tokenChunks[:len(tokenChunks)-1]
				if c := last["choices"].([]any); len(c) != 0 {
					t.Errorf("usage chunk choices = %v, want []", c)
				}
				usage = last["usage"].(map[string]any)
			}
			for i, ev := range tokenChunks {
				m := object(t, ev)
				if _, ok := m["usage"]; ok {
					t.Errorf("chunk %d has a usage key: %s", i, ev)
				}
				c := m["choices"].([]any)[0].(map[string]any)
				delta := c["delta"].(map[string]any)
				if diff := cmp.Diff([]string{"content"}, keys(delta)); diff != "" {
					t.Errorf("chunk %d delta keys (-want +got):\n%s", i, diff)
				}
				text += delta["content"].(string)
				final := i == len(tokenChunks)-1
				if final != (c["finish_reason"] != nil) {
					t.Errorf("chunk %d finish_reason = %v, final %v", i, c["finish_reason"], final)
				}
				if final {
					if c["finish_reason"] != "length" {
						t.Errorf("finish_reason = %v, want length", c["finish_reason"])
					}
					if _, ok := c["stop_reason"]; !ok {
						t.Errorf("final chunk lacks stop_reason: %s", ev)
					}
				}
			}
			if got := countTokens(text); got != tc.want {
				t.Errorf("streamed %d tokens (%q), want %d", got, text, tc.want)
			}
			if tc.wantUsage {
				if num(t, usage["completion_tokens"]) != tc.want ||
					num(t, usage["total_tokens"]) != num(t, usage["prompt_tokens"])+tc.want {
					t.Errorf("usage = %v, want %d completion tokens", usage, tc.want)
				}
			}
		})
	}
}

func TestCompletionsStreamFraming(t *testing.T) {
	for _, path := range []string{"/v1/completions", "/v1/models/model:predict"} {
		for _, usage := range []bool{false, true} {
			t.Run(path+"/usage="+map[bool]string{false: "no", true: "yes"}[usage], func(t *testing.T) {
				s := newServer(t, fastConfig())
				ts := startLoopback(t, s)
				body := `{"model":"servingprobe-sim","prompt":"Hello world","max_tokens":6,"ignore_eos":true,"stream":true`
				if usage {
					body += `,"stream_options":{"include_usage":true}`
				}
				resp := post(t, ts.Client(), ts.URL+path, body+"}")
				id := resp.Header.Get(RequestIDHeader)
				if len(id) != 32 {
					t.Errorf("generated request id %q is not 32 hex digits", id)
				}
				events := sseEvents(t, readAll(t, resp))
				if events[len(events)-1] != "[DONE]" {
					t.Fatalf("last event = %q, want [DONE]", events[len(events)-1])
				}
				events = events[:len(events)-1]
				if usage {
					m := object(t, events[len(events)-1])
					events = events[:len(events)-1]
					want := map[string]any{"prompt_tokens": "2", "total_tokens": "8", "completion_tokens": "6"}
					got := map[string]any{}
					for k, v := range m["usage"].(map[string]any) {
						got[k] = v.(interface{ String() string }).String()
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("usage (-want +got):\n%s", diff)
					}
					if len(m["choices"].([]any)) != 0 {
						t.Errorf("usage chunk has choices: %v", m["choices"])
					}
				}
				var text string
				for i, ev := range events {
					m := object(t, ev)
					if diff := cmp.Diff([]string{"choices", "created", "id", "model", "object", "usage"}, keys(m)); diff != "" {
						t.Errorf("chunk %d keys (-want +got):\n%s", i, diff)
					}
					if m["usage"] != nil || m["id"] != "cmpl-"+id || m["object"] != "text_completion" {
						t.Errorf("chunk %d = %s", i, ev)
					}
					c := m["choices"].([]any)[0].(map[string]any)
					if diff := cmp.Diff([]string{"finish_reason", "index", "logprobs", "stop_reason", "text"}, keys(c)); diff != "" {
						t.Errorf("chunk %d choice keys (-want +got):\n%s", i, diff)
					}
					text += c["text"].(string)
					if final := i == len(events)-1; final != (c["finish_reason"] == "length") {
						t.Errorf("chunk %d finish_reason = %v", i, c["finish_reason"])
					}
				}
				if got := countTokens(text); got != 6 {
					t.Errorf("streamed %d tokens, want 6", got)
				}
			})
		}
	}
}

func TestGenerateStreamFraming(t *testing.T) {
	for _, tc := range []struct {
		name, body   string
		promptTokens int
		n            int
	}{
		{"text", `{"text":"Hello world","sampling_params":{"max_new_tokens":8,"ignore_eos":true,"temperature":0},"stream":true}`, 2, 8},
		{"input_ids", `{"input_ids":[1,2,3,4,5,6,7],"sampling_params":{"max_new_tokens":4,"ignore_eos":true},"stream":true}`, 7, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, fastConfig())
			ts := startLoopback(t, s)
			resp := post(t, ts.Client(), ts.URL+"/generate", tc.body)
			id := resp.Header.Get(RequestIDHeader)
			events := sseEvents(t, readAll(t, resp))
			if got := len(events); got != tc.n+1 || events[tc.n] != "[DONE]" {
				t.Fatalf("got %d events ending %q, want %d and [DONE]", got, events[len(events)-1], tc.n+1)
			}
			prev := ""
			for i, ev := range events[:tc.n] {
				m := object(t, ev)
				if diff := cmp.Diff([]string{"meta_info", "output_ids", "text"}, keys(m)); diff != "" {
					t.Errorf("event %d keys (-want +got):\n%s", i, diff)
				}
				text := m["text"].(string)
				if !strings.HasPrefix(text, prev) || countTokens(text) != i+1 {
					t.Errorf("event %d text %q is not cumulative after %q", i, text, prev)
				}
				prev = text
				if got := len(m["output_ids"].([]any)); got != i+1 {
					t.Errorf("event %d has %d output_ids, want %d", i, got, i+1)
				}
				meta := m["meta_info"].(map[string]any)
				if meta["id"] != id || num(t, meta["prompt_tokens"]) != tc.promptTokens ||
					num(t, meta["completion_tokens"]) != i+1 || num(t, meta["cached_tokens"]) != 0 {
					t.Errorf("event %d meta_info = %v", i, meta)
				}
				final := i == tc.n-1
				if _, ok := meta["e2e_latency"]; ok != final {
					t.Errorf("event %d has e2e_latency %v, final %v", i, ok, final)
				}
				if final {
					want := map[string]any{"type": "length", "length": json1(tc.n)}
					if diff := cmp.Diff(want, meta["finish_reason"]); diff != "" {
						t.Errorf("finish_reason (-want +got):\n%s", diff)
					}
				} else if meta["finish_reason"] != nil {
					t.Errorf("event %d finish_reason = %v, want null", i, meta["finish_reason"])
				}
			}
		})
	}
}

func TestTRTStreamFraming(t *testing.T) {
	s := newServer(t, fastConfig())
	ts := startLoopback(t, s)
	resp := post(t, ts.Client(), ts.URL+"/v2/models/ensemble/generate_stream",
		`{"accumulate_tokens":true,"text_input":"hi there","temperature":0.000001,"top_p":1.0,"max_tokens":5,"stream":true,"min_length":5,"end_id":1048576}`)
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Errorf("Content-Type = %q", got)
	}
	events := sseEvents(t, readAll(t, resp))
	if len(events) != 5 {
		t.Fatalf("got %d events, want 5 (no terminator): %q", len(events), events)
	}
	var text string
	for i, ev := range events {
		m := object(t, ev)
		want := map[string]any{"model_name": "ensemble", "model_version": "1", "sequence_end": false, "sequence_id": json1(0), "sequence_start": false}
		text += m["text_output"].(string)
		delete(m, "text_output")
		if diff := cmp.Diff(want, m); diff != "" {
			t.Errorf("event %d (-want +got):\n%s", i, diff)
		}
	}
	if countTokens(text) != 5 {
		t.Errorf("text_output %q has %d tokens, want 5", text, countTokens(text))
	}
}

func TestNonStreaming(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		check            func(t *testing.T, m map[string]any)
	}{
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"ignore_eos":true}`, func(t *testing.T, m map[string]any) {
			c := m["choices"].([]any)[0].(map[string]any)
			msg := c["message"].(map[string]any)
			if m["object"] != "chat.completion" || msg["role"] != "assistant" || countTokens(msg["content"].(string)) != 4 || c["finish_reason"] != "length" {
				t.Errorf("response = %v", m)
			}
			if num(t, m["usage"].(map[string]any)["completion_tokens"]) != 4 {
				t.Errorf("usage = %v", m["usage"])
			}
		}},
		{"completions", "/v1/completions", `{"prompt":[1,2,3],"max_tokens":4,"ignore_eos":true}`, func(t *testing.T, m map[string]any) {
			c := m["choices"].([]any)[0].(map[string]any)
			u := m["usage"].(map[string]any)
			if m["object"] != "text_completion" || countTokens(c["text"].(string)) != 4 || num(t, u["prompt_tokens"]) != 3 || num(t, u["completion_tokens"]) != 4 {
				t.Errorf("response = %v", m)
			}
		}},
		{"generate", "/generate", `{"text":"hi","sampling_params":{"max_new_tokens":4,"ignore_eos":true}}`, func(t *testing.T, m map[string]any) {
			meta := m["meta_info"].(map[string]any)
			if countTokens(m["text"].(string)) != 4 || num(t, meta["completion_tokens"]) != 4 || len(m["output_ids"].([]any)) != 4 {
				t.Errorf("response = %v", m)
			}
		}},
		{"trt", "/v2/models/ensemble/generate", `{"text_input":"hi","max_tokens":4,"min_length":4}`, func(t *testing.T, m map[string]any) {
			if countTokens(m["text_output"].(string)) != 4 || m["model_name"] != "ensemble" {
				t.Errorf("response = %v", m)
			}
		}},
		{"truss", "/v1/models/model:predict", `{"prompt":"hi","max_tokens":4,"ignore_eos":true}`, func(t *testing.T, m map[string]any) {
			c := m["choices"].([]any)[0].(map[string]any)
			if countTokens(c["text"].(string)) != 4 {
				t.Errorf("response = %v", m)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, fastConfig())
			ts := startLoopback(t, s)
			resp := post(t, ts.Client(), ts.URL+tc.path, tc.body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			tc.check(t, object(t, string(readAll(t, resp))))
		})
	}
}

func TestEOS(t *testing.T) {
	cfg := fastConfig()
	cfg.MeanOutputTokens = 3
	s := newServer(t, cfg)
	ts := startLoopback(t, s)
	early := 0
	for i := range 20 {
		for _, tc := range []struct {
			body   string
			forced bool
		}{
			{`{"prompt":"x","max_tokens":50,"stream":true,"stream_options":{"include_usage":true}}`, false},
			{`{"prompt":"x","max_tokens":50,"min_tokens":50,"stream":true,"stream_options":{"include_usage":true}}`, true},
			{`{"prompt":"x","max_tokens":50,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, true},
		} {
			events := sseEvents(t, readAll(t, post(t, ts.Client(), ts.URL+"/v1/completions", tc.body)))
			var text, finish string
			for _, ev := range events[:len(events)-2] {
				c := object(t, ev)["choices"].([]any)[0].(map[string]any)
				text += c["text"].(string)
				if f, ok := c["finish_reason"].(string); ok {
					finish = f
				}
			}
			n := countTokens(text)
			usage := object(t, events[len(events)-2])["usage"].(map[string]any)
			if got := num(t, usage["completion_tokens"]); got != n {
				t.Errorf("request %d: usage says %d tokens, streamed %d", i, got, n)
			}
			switch {
			case tc.forced && (n != 50 || finish != "length"):
				t.Errorf("request %d %s: %d tokens, finish %q; want 50, length", i, tc.body, n, finish)
			case !tc.forced && n < 50 && finish != "stop":
				t.Errorf("request %d: stopped early at %d with finish %q, want stop", i, n, finish)
			case !tc.forced && n < 50:
				early++
			}
		}
	}
	if early == 0 {
		t.Errorf("no request stopped early with a mean output of 3 tokens")
	}
}

func TestRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		status           int
		wantMsg          string
	}{
		{"unknown model", "/v1/chat/completions", `{"model":"other","messages":[{"role":"user","content":"hi"}]}`, 404, "The model `other` does not exist."},
		{"context overflow", "/v1/completions", `{"prompt":"hi","max_tokens":40000}`, 400, "This model's maximum context length is 32768 tokens."},
		{"stream options without stream", "/v1/completions", `{"prompt":"hi","stream_options":{"include_usage":true}}`, 400, "Stream options can only be defined when `stream=True`."},
		{"batched prompt", "/v1/completions", `{"prompt":["a","b"]}`, 400, "batched prompts"},
		{"n", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":2}`, 400, "n=1 only"},
		{"bad json", "/v1/chat/completions", `{`, 400, "invalid JSON body"},
		{"generate without prompt", "/generate", `{"sampling_params":{}}`, 400, "Either text, input_ids"},
		{"trt without max_tokens", "/v2/models/ensemble/generate_stream", `{"text_input":"hi"}`, 400, "max_tokens"},
		{"truss wrong verb", "/v1/models/model:train", `{"prompt":"hi"}`, 404, "Not Found"},
		{"unknown fault", "/v1/completions", `{"prompt":"hi","max_tokens":1}`, 400, "unknown fault"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, fastConfig())
			ts := startLoopback(t, s)
			var hdr []string
			if tc.name == "unknown fault" {
				hdr = []string{FaultHeader, "explode"}
			}
			resp := post(t, ts.Client(), ts.URL+tc.path, tc.body, hdr...)
			body := string(readAll(t, resp))
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.wantMsg) {
				t.Errorf("got %d %s, want %d containing %q", resp.StatusCode, body, tc.status, tc.wantMsg)
			}
		})
	}
}

func TestModelsAndTokenize(t *testing.T) {
	s := newServer(t, fastConfig())
	ts := startLoopback(t, s)
	resp, err := ts.Client().Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	m := object(t, string(readAll(t, resp)))
	data := m["data"].([]any)
	if m["object"] != "list" || len(data) != 1 || data[0].(map[string]any)["id"] != "servingprobe-sim" {
		t.Errorf("/v1/models = %v", m)
	}
	detok := object(t, string(readAll(t, post(t, ts.Client(), ts.URL+"/detokenize", `{"tokens":[1000,1001]}`))))
	if detok["prompt"] != " the of" {
		t.Errorf("/detokenize = %v", detok)
	}
}

// json1 is a number as the decoder with UseNumber returns it.
func json1(n int) any { return jsonNumber(n) }
