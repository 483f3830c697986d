package prober

import (
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
