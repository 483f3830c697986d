package prober

import (
	"errors"
	"testing"
)

// TestAnthropicErrorEvent: an error event is the server's error whatever
// its shape (Anthropic's nested object, llama-server's bare OpenAI error
// object with its code, a string), with the server's text and the status
// it states; never a parse error.
func TestAnthropicErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		name, event, data string
		want              Outcome
		msg               string
	}{
		{"anthropic", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, OutcomeHTTP5xx, "overloaded_error: Overloaded"},
		{"llama-server 500", "error", `{"code":500,"message":"Failed to decode the batch","type":"server_error"}`, OutcomeHTTP5xx, "server_error: Failed to decode the batch"},
		{"llama-server context", "error", `{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}`,
			OutcomeHTTP4xx, "exceed_context_size_error: the request exceeds the available context size"},
		{"nested with code", "error", `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, OutcomeHTTP5xx, "unavailable_error: Loading model"},
		{"string", "error", `"boom"`, OutcomeServerError, "boom"},
		{"not JSON", "error", `boom`, OutcomeServerError, "boom"},
		{"type only, no event line", "", `{"type":"error","error":{"type":"api_error","message":"x"}}`, OutcomeHTTP5xx, "api_error: x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := anthropic{}.Decode(SSEEvent{Event: tc.event, Data: []byte(tc.data)})
			var se *ServerError
			if !errors.As(err, &se) {
				t.Fatalf("Decode(%q) error = %v, want a *ServerError", tc.data, err)
			}
			if got := classify(err); got != tc.want || se.Message != tc.msg {
				t.Errorf("Decode(%q) = %s %q, want %s %q", tc.data, got, se.Message, tc.want, tc.msg)
			}
		})
	}
}

// TestAnthropicCacheUsage: the prompt is input_tokens plus the tokens read
// from and written to the cache; the cached count stays visible.
func TestAnthropicCacheUsage(t *testing.T) {
	for _, tc := range []struct {
		name, data           string
		prompt, cached, done int
	}{
		{"llama-server cache hit", `{"type":"message_start","message":{"usage":{"cache_read_input_tokens":14,"input_tokens":1,"output_tokens":0}}}`, 15, 14, 0},
		{"all cached", `{"type":"message_start","message":{"usage":{"cache_read_input_tokens":15,"input_tokens":0}}}`, 15, 15, 0},
		{"cache write", `{"type":"message_start","message":{"usage":{"cache_creation_input_tokens":1000,"cache_read_input_tokens":50,"input_tokens":3}}}`, 1053, 50, 0},
		{"message_delta repeats", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"cache_read_input_tokens":14,"input_tokens":1,"output_tokens":7}}`, 15, 14, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := anthropic{}.Decode(SSEEvent{Data: []byte(tc.data)})
			if err != nil {
				t.Fatal(err)
			}
			if d.Usage.PromptTokens != tc.prompt || d.Usage.CachedTokens != tc.cached || d.Usage.CompletionTokens != tc.done {
				t.Errorf("Decode(%q).Usage = %+v, want prompt %d, cached %d, completion %d", tc.data, d.Usage, tc.prompt, tc.cached, tc.done)
			}
		})
	}
}
