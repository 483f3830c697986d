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
	"github.com/servingprobe/servingprobe/testkit/llmtest"
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

// TestTrussSSEBehindOctetStream: a truss model that passes an OpenAI
// engine's stream through (the stream bench_serving's truss backend
// parses: "data: " lines of completions chunks, then [DONE]) is served
// by truss as application/octet-stream. Before, the bytes were read as raw
// text: the JSON became the generated text and was counted as hundreds of
// tokens. Now the first bytes show SSE, and it is decoded as such.
func TestTrussSSEBehindOctetStream(t *testing.T) {
	words := []string{" The", " sky", " is", " blue", "."}
	var events []string
	for _, w := range words {
		events = append(events, `data: {"id":"cmpl-5","object":"text_completion","created":1730000000,"model":"m","choices":[{"index":0,"text":"`+w+`","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`+"\n\n")
	}
	events = append(events,
		`data: {"id":"cmpl-5","object":"text_completion","created":1730000000,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":7,"total_tokens":12,"completion_tokens":5}}`+"\n\n",
		"data: [DONE]\n\n")
	for _, ct := range []string{"application/octet-stream", "text/plain; charset=utf-8"} {
		t.Run(ct, func(t *testing.T) {
			script := llmtest.Script{
				Header: http.Header{"Content-Type": {ct}},
				Chunks: llmtest.SSE(goldenFirst, goldenGap, events...),
			}
			var res Result
			synctest.Test(t, func(t *testing.T) {
				p := &Prober{
					Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{script}}},
					Backend: truss{}, Name: "truss", Counter: wordCounter{},
					Options: RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true, IncludeUsage: true},
				}
				res = p.Run(t.Context(), datasets.Prompt{Text: "What colour is the sky?", OutputLen: 5}, time.Now())
			})
			if res.Outcome != OutcomeSuccess {
				t.Fatalf("Run() outcome = %q (%s), want success", res.Outcome, res.Err)
			}
			if got, want := res.GeneratedText, strings.Join(words, ""); got != want {
				t.Errorf("GeneratedText = %q, want %q", got, want)
			}
			if res.OutputTokens != 5 || res.OutputTokensSource != TokenSourceUsage || len(res.Events) != 5 {
				t.Errorf("output tokens = %d (%s) in %d events, want 5 (usage) in 5", res.OutputTokens, res.OutputTokensSource, len(res.Events))
			}
		})
	}
}

// TestRawOrSSESniff: the raw-or-SSE format decides on the first line's
// start, waiting for more bytes only while they could still be either.
func TestRawOrSSESniff(t *testing.T) {
	for _, tc := range []struct {
		body string
		step int
		want StreamFormat
	}{
		{"data: {}\n\n", 100, FormatSSE},
		{"data: {}\n\n", 1, FormatSSE},
		{"\n: keep-alive\n\ndata: {}\n\n", 2, FormatSSE},
		{"The sky is blue.", 100, FormatRaw},
		{"dawn breaks", 1, FormatRaw},
		{"da", 1, FormatRaw}, // EOF decides
		{"", 1, FormatRaw},
	} {
		sr := NewStreamReader(&stepReader{b: []byte(tc.body), step: tc.step}, FormatRawOrSSE, Limits{}, nil)
		for {
			if _, _, err := sr.Next(); err != nil {
				break
			}
		}
		if sr.format != tc.want {
			t.Errorf("body %q in reads of %d: format %d, want %d", tc.body, tc.step, sr.format, tc.want)
		}
	}
}
