package prober

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/testing/llmtest"
)

// TestTrussRawStream replays a truss generator's raw body, chunk by chunk:
// it must succeed at EOF, with one event per chunk, the first chunk's
// arrival as TTFT, and tokens from the tokenizer when there is one, else
// from the events (labelled so).
func TestTrussRawStream(t *testing.T) {
	b, err := os.ReadFile("testdata/truss-raw/textiteratorstreamer.json")
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		ContentType string   `json:"content_type"`
		Chunks      []string `json:"chunks"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		counter     Counter
		wantTokens  int
		wantSource  TokenSource
		contentType string
	}{
		{"octet-stream, tokenizer", wordCounter{}, 13, TokenSourceTokenizer, tr.ContentType},
		{"octet-stream, no tokenizer", nil, len(tr.Chunks), TokenSourceEvents, tr.ContentType},
		{"text/plain", wordCounter{}, 13, TokenSourceTokenizer, "text/plain; charset=utf-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := llmtest.Script{
				Header: http.Header{"Content-Type": {tc.contentType}},
				Chunks: llmtest.SSE(goldenFirst, goldenGap, tr.Chunks...),
			}
			var res Result
			synctest.Test(t, func(t *testing.T) {
				p := &Prober{
					Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{script}}},
					Backend: truss{}, Name: "truss", Counter: tc.counter,
					Options: RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true, IgnoreEOS: true},
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				res = p.Run(ctx, datasets.Prompt{Text: "What colour is the sky?", OutputLen: 7}, time.Now())
			})
			if res.Outcome != OutcomeSuccess {
				t.Fatalf("Run() outcome = %q (%s), want success", res.Outcome, res.Err)
			}
			if got, want := res.GeneratedText, strings.Join(tr.Chunks, ""); got != want {
				t.Errorf("GeneratedText = %q, want %q", got, want)
			}
			if len(res.Events) != len(tr.Chunks) {
				t.Errorf("%d events, want one per chunk (%d)", len(res.Events), len(tr.Chunks))
			}
			if res.Samples().TTFT != goldenFirst {
				t.Errorf("TTFT = %v, want %v", res.Samples().TTFT, goldenFirst)
			}
			if res.OutputTokens != tc.wantTokens || res.OutputTokensSource != tc.wantSource {
				t.Errorf("output tokens = %d (%s), want %d (%s)", res.OutputTokens, res.OutputTokensSource, tc.wantTokens, tc.wantSource)
			}
		})
	}
}

// TestRawFormatReads: each Read is one event, whatever its bytes, and the
// events concatenate back to the body.
func TestRawFormatReads(t *testing.T) {
	body := `{"not": "json"` + "\n\ndata: [DONE]\n\n" + "é"
	sr := NewStreamReader(&stepReader{b: []byte(body), step: 3}, FormatRaw, Limits{}, nil)
	var got strings.Builder
	n := 0
	for {
		ev, _, err := sr.Next()
		if err != nil {
			break
		}
		n++
		got.Write(ev.Data)
	}
	if got.String() != body {
		t.Errorf("events concatenate to %q, want %q", got.String(), body)
	}
	if want := (len(body) + 2) / 3; n != want {
		t.Errorf("%d events, want %d (one per read)", n, want)
	}
}
