package prober

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

// ollama is ollama's native API: /api/generate (ollama) and /api/chat
// (ollama-chat). A stream is newline-delimited JSON (application/x-ndjson),
// one object per piece of output; the last has "done": true, its
// "done_reason" ("stop", "length"; "load" and "unload" for the model
// management calls) and the server's counts and timings: prompt_eval_count
// and eval_count (tokens), total_duration, load_duration,
// prompt_eval_duration and eval_duration (nanoseconds). A failure after the
// stream started is one more line, {"error": "..."}, with no status (the
// server's streamResponse; before any output it is an HTTP error instead).
// Without "stream": false the whole answer is one such object.
type ollama struct {
	chat bool
}

var _ Backend = ollama{}

func (b ollama) decodeMemo(ev SSEEvent, _ *scanMemo, d *Delta) error { return d.set(b.Decode(ev)) }

// Endpoint paths of ollama's native API, and the root its documentation
// gives base URLs under.
const (
	ollamaAPIRoot      = "/api"
	pathOllamaGenerate = "/api/generate"
	pathOllamaChat     = "/api/chat"
)

// ollamaOptions is the request's options object. num_predict is the length
// field (ollama has no ignore_eos: a model that stops early stops, and
// the stream still ends with done_reason "stop").
func ollamaOptions(o RequestOptions, p datasets.Prompt) object {
	opts := object{
		{"num_predict", p.OutputLen},
		{"temperature", floatOr(o.Temperature, 0)},
	}
	if o.TopP != nil {
		opts = append(opts, field{"top_p", pyFloat(*o.TopP)})
	}
	return opts
}

// ollamaImages are the raw base64 payloads ollama takes in "images": our
// prompts carry data URIs.
func ollamaImages(uris []string) []string {
	out := make([]string, len(uris))
	for i, u := range uris {
		if _, b64, ok := strings.Cut(u, ";base64,"); ok && strings.HasPrefix(u, "data:") {
			u = b64
		}
		out[i] = u
	}
	return out
}

func (b ollama) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	body := object{{"model", modelFor(o, p)}}
	path := pathOllamaGenerate
	if b.chat {
		path = pathOllamaChat
		msgs := make([]object, 0, max(len(p.Messages), 1))
		if len(p.Messages) == 0 {
			msgs = append(msgs, object{{"role", "user"}, {"content", p.Text}})
		} else {
			for _, m := range p.Messages {
				msgs = append(msgs, object{{"role", m.Role}, {"content", m.Content}})
			}
		}
		if len(p.Images) > 0 {
			last := len(msgs) - 1
			for i, m := range msgs {
				if m[0].v == "user" {
					last = i
				}
			}
			msgs[last] = append(msgs[last], field{"images", ollamaImages(p.Images)})
		}
		body = append(body, field{"messages", msgs})
	} else {
		body = append(body, field{"prompt", p.Text})
		if len(p.Images) > 0 {
			body = append(body, field{"images", ollamaImages(p.Images)})
		}
	}
	if b.chat && len(o.Tools) > 0 {
		body = append(body, field{"tools", o.Tools}) // ollama has no tool_choice
	}
	if f := ollamaFormat(o.ResponseFormat); f != nil {
		body = append(body, field{"format", f})
	}
	body = append(body, field{"stream", o.Stream}, field{"options", ollamaOptions(o, p)})
	o.BaseURL = trimAPIRoot(o.BaseURL, ollamaAPIRoot) // http://host:11434/api is the server's own base URL
	req, err := newJSONRequest(o, path, body, p)
	if err == nil && o.Stream {
		req.Header.Set("Accept", "application/x-ndjson")
	}
	return req, err
}

// ollamaChunk is one line of either endpoint's stream.
type ollamaChunk struct {
	errorField
	Response *string `json:"response"` // /api/generate
	Thinking *string `json:"thinking"` // /api/generate with think
	Message  *struct {
		Content   string `json:"content"`
		Thinking  string `json:"thinking"`
		ToolCalls []struct {
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"` // /api/chat
	Done       bool   `json:"done"`
	DoneReason string `json:"done_reason"`
	ServerTimings
}

// Decode reads one line. The last line's text, counts and timings are all
// kept: it is not a bare terminator (Delta.Done would drop them), so it
// ends the request through its finish reason and the EOF after it.
func (ollama) Decode(ev SSEEvent) (Delta, error) {
	var c ollamaChunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return Delta{}, fmt.Errorf("decode ollama event: %w", err)
	}
	if err := c.err(); err != nil {
		return Delta{}, err
	}
	var d Delta
	var text []byte
	if c.Thinking != nil {
		text = append(text, *c.Thinking...)
	}
	if c.Response != nil {
		text = append(text, *c.Response...)
	}
	if m := c.Message; m != nil {
		text = append(append(text, m.Thinking...), m.Content...)
		for _, tc := range m.ToolCalls {
			text = append(append(text, tc.Function.Name...), tc.Function.Arguments...)
			// ollama sends each call whole, its arguments as an object.
			d.ToolCalls = append(d.ToolCalls, ToolCallDelta{Index: -1, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
		}
		d.Answer, d.AnswerSet = m.Content, true
	}
	d.Text = text
	// Thinking alone is reasoning; a line with any answer text (or a tool
	// call) is the answer's.
	d.Reasoning = len(text) > 0 && len(text) == ollamaThinkingLen(&c)
	if c.Done {
		// Older servers send no done_reason; the stream has still ended.
		d.FinishReason = c.DoneReason
		if d.FinishReason == "" {
			d.FinishReason = "done"
		}
		d.Server = c.ServerTimings.checked()
		if c.PromptEvalCount > 0 || c.EvalCount > 0 {
			d.Usage = Usage{PromptTokens: c.PromptEvalCount, CompletionTokens: c.EvalCount, Source: TokenSourceUsage}
		}
	}
	return d, nil
}

// ollamaThinkingLen is the length of the line's thinking text.
func ollamaThinkingLen(c *ollamaChunk) int {
	n := 0
	if c.Thinking != nil {
		n += len(*c.Thinking)
	}
	if c.Message != nil {
		n += len(c.Message.Thinking)
	}
	return n
}

func (ollama) framing() Framing { return Framing{NDJSON: true} }

// ServerTimings are the durations and counts a server states for one
// request (ollama's final object), as it states them: durations in
// nanoseconds. They let a user set the client's view (TTFT, TPOT, E2E)
// beside the server's.
type ServerTimings struct {
	TotalDuration      time.Duration `json:"total_duration,omitzero"`
	LoadDuration       time.Duration `json:"load_duration,omitzero"`
	PromptEvalCount    int           `json:"prompt_eval_count,omitzero"`
	PromptEvalDuration time.Duration `json:"prompt_eval_duration,omitzero"`
	EvalCount          int           `json:"eval_count,omitzero"`
	EvalDuration       time.Duration `json:"eval_duration,omitzero"`
	// FirstToken is the server's own time to first token, as it states
	// it: vLLM's metrics.time_to_first_token_ms (from the request's
	// arrival at its API server, so its queue and prefill), llama.cpp's
	// timings.prompt_ms (its prompt processing: it states no queue),
	// Dynamo's nvext.timing.ttft_ms (from its frontend's receipt), and
	// for sglang the difference of two timestamps it states (sglangTimes).
	FirstToken time.Duration `json:"first_token_duration,omitzero"`
	// QueueDuration is vLLM's metrics.queue_time_ms, Dynamo's
	// prefill_wait_time_ms, sglang's queue_time.
	QueueDuration time.Duration `json:"queue_duration,omitzero"`
	// PromptCachedCount is llama.cpp's timings.cache_n: prompt tokens
	// taken from its cache, not processed (not in PromptEvalCount).
	PromptCachedCount int `json:"prompt_cached_count,omitzero"`
}

// Stated reports whether the server stated any timing.
func (t ServerTimings) Stated() bool {
	return t.TotalDuration > 0 || t.PromptEvalDuration > 0 || t.EvalDuration > 0 || t.FirstToken > 0 || t.QueueDuration > 0
}

// PerOutputToken is the server's decode time per generated token
// (eval_duration / eval_count), -1 when it did not state both.
func (t ServerTimings) PerOutputToken() time.Duration {
	if t.EvalCount <= 0 || t.EvalDuration <= 0 {
		return -1
	}
	return t.EvalDuration / time.Duration(t.EvalCount)
}
