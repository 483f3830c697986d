package prober

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
)

// anthropic is Anthropic's Messages API, POST /v1/messages, as vLLM (its
// anthropic entrypoint) and ollama (its anthropic middleware) serve it. A
// stream is server-sent events, each with an "event:" line and a JSON
// object whose "type" repeats it:
//
//	message_start        usage.input_tokens (output_tokens is 0 or 1, no count of ours);
//	                     with a prompt cache also cache_read_input_tokens and
//	                     cache_creation_input_tokens, which input_tokens leaves out
//	content_block_start  a text, thinking or tool_use block opens (no text)
//	content_block_delta  text_delta (answer), thinking_delta (reasoning),
//	                     input_json_delta (tool arguments), signature_delta (nothing)
//	content_block_stop
//	message_delta        delta.stop_reason and usage.output_tokens (ollama and vLLM
//	                     also repeat input_tokens)
//	message_stop         the end
//	ping                 a keep-alive
//	error                {"type":"error","error":{"type":...,"message":...}}, in a 200;
//	                     llama-server sends its OpenAI error object bare under
//	                     event: error ({"code":500,"message":...,"type":"server_error"})
type anthropic struct{}

var _ Backend = anthropic{}

func (anthropic) framing() Framing { return Framing{} } // server-sent events

func (b anthropic) decodeMemo(ev SSEEvent, _ *scanMemo, d *Delta) error { return d.set(b.Decode(ev)) }

// The Messages endpoint, the API version it is spoken at (the one both
// servers' converters implement), and Anthropic's API key header.
const (
	pathMessages          = "/v1/messages"
	anthropicVersion      = "2023-06-01"
	anthropicAPIKeyHeader = "x-api-key"
)

// anthropicMessages is the conversation: Anthropic takes only user and
// assistant turns in "messages"; system turns go in the top-level "system".
func anthropicMessages(p datasets.Prompt) (msgs []object, system string) {
	if len(p.Messages) == 0 {
		return []object{{{"role", "user"}, {"content", p.Text}}}, ""
	}
	for _, m := range p.Messages {
		if m.Role == "system" {
			system += m.Content
			continue
		}
		msgs = append(msgs, object{{"role", m.Role}, {"content", m.Content}})
	}
	return msgs, system
}

func (anthropic) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	msgs, system := anthropicMessages(p)
	body := object{{"model", modelFor(o, p)}}
	if system != "" {
		body = append(body, field{"system", system})
	}
	body = append(body,
		field{"messages", msgs},
		field{"max_tokens", p.OutputLen},
		field{"stream", o.Stream},
		field{"temperature", floatOr(o.Temperature, 0)},
	)
	if o.TopP != nil {
		body = append(body, field{"top_p", pyFloat(*o.TopP)})
	}
	req, err := newJSONRequest(o, pathMessages, body, p)
	if err == nil && req.Header.Get("anthropic-version") == "" {
		req.Header.Set("anthropic-version", anthropicVersion)
	}
	return req, err
}

// anthropicUsage is the usage object of message_start's message and of
// message_delta.
type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

// promptTokens is the whole prompt: Anthropic's input_tokens counts only
// the tokens after the last cache breakpoint, so the prompt is it plus
// the tokens read from the cache and those written to it (Anthropic's
// usage documentation defines the total input so). llama-server states a
// 15-token prompt with 14 in its prompt cache as input_tokens 1 and
// cache_read_input_tokens 14.
func (u *anthropicUsage) promptTokens() int {
	return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// anthropicEvent is one event of a Messages stream: the fields of every
// type that servingprobe reads.
type anthropicEvent struct {
	Type string `json:"type"`
	// Message is message_start's message; raw, because llama-server's
	// error object has a string "message" at the top level.
	Message json.RawMessage `json:"message"`
	Delta   *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"` // content_block_delta, message_delta
	Usage *anthropicUsage `json:"usage"` // message_delta
	Error json.RawMessage `json:"error"`
}

// anthropicErrorStatus is the HTTP status Anthropic's API gives each error
// type (the mapping ollama's anthropic.NewError applies the other way).
// Types it does not list (vLLM's "internal_error") state no status.
var anthropicErrorStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"permission_error":      403,
	"not_found_error":       404,
	"rate_limit_error":      429,
	"api_error":             500,
	"overloaded_error":      529,
}

// Decode reads one event. message_delta's usage is the request's count;
// message_start's gives the input count only, since its output_tokens is
// a placeholder (0 or 1) sent before any output.
func (anthropic) Decode(ev SSEEvent) (Delta, error) {
	if isDone(ev.Data) {
		return Delta{Done: true}, nil
	}
	if ev.Event == "error" {
		return Delta{}, anthropicErrorEvent(ev.Data)
	}
	var e anthropicEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return Delta{}, fmt.Errorf("decode anthropic event: %w", err)
	}
	if e.Type == "" {
		e.Type = ev.Event
	}
	var d Delta
	switch e.Type {
	case "message_start":
		var m struct {
			Usage *anthropicUsage `json:"usage"`
		}
		if len(e.Message) > 0 {
			if err := json.Unmarshal(e.Message, &m); err != nil {
				return Delta{}, fmt.Errorf("decode anthropic message_start: %w", err)
			}
		}
		if u := m.Usage; u != nil && u.promptTokens() > 0 {
			d.Usage = Usage{PromptTokens: u.promptTokens(), CachedTokens: u.CacheReadInputTokens, Source: TokenSourceUsage}
		}
	case "content_block_delta":
		if e.Delta != nil {
			switch e.Delta.Type {
			case "text_delta":
				d.Text = []byte(e.Delta.Text)
			case "thinking_delta":
				d.Text, d.Reasoning = []byte(e.Delta.Thinking), true
			case "input_json_delta":
				d.Text = []byte(e.Delta.PartialJSON)
			}
		}
	case "message_delta":
		if e.Usage != nil {
			d.Usage = Usage{PromptTokens: e.Usage.promptTokens(), CompletionTokens: e.Usage.OutputTokens,
				CachedTokens: e.Usage.CacheReadInputTokens, Source: TokenSourceUsage}
		}
		if e.Delta != nil && e.Delta.StopReason != nil {
			d.FinishReason = *e.Delta.StopReason
		}
	case "message_stop":
		d.Done = true
	case "message":
		// A response not streamed: the whole message in one object.
		return anthropicWhole(ev.Data)
	case "error":
		return Delta{}, anthropicErrorEvent(ev.Data)
	default:
		if len(e.Error) > 0 && string(e.Error) != "null" {
			return Delta{}, anthropicError(e.Error)
		}
	}
	return d, nil
}

// anthropicWhole reads a message returned whole (stream false): its text
// blocks, its usage and its stop reason. Thinking and tool-use blocks are
// output the usage counts, but carry no text of the answer.
func anthropicWhole(data []byte) (Delta, error) {
	var m struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason *string         `json:"stop_reason"`
		Usage      *anthropicUsage `json:"usage"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Delta{}, fmt.Errorf("decode anthropic message: %w", err)
	}
	// Not Done: the body's end ends it, and a Done delta carries nothing.
	var d Delta
	for _, c := range m.Content {
		if c.Type == "text" {
			d.Text = append(d.Text, c.Text...)
		}
	}
	if u := m.Usage; u != nil {
		d.Usage = Usage{PromptTokens: u.promptTokens(), CompletionTokens: u.OutputTokens, CachedTokens: u.CacheReadInputTokens, Source: TokenSourceUsage}
	}
	if m.StopReason != nil {
		d.FinishReason = *m.StopReason
	}
	return d, nil
}

// anthropicErrorEvent reads an error event's data as the server's error:
// Anthropic's {"type":"error","error":{...}}, or an error object sent bare
// ({"code":500,"message":...,"type":"server_error"}, llama-server's), or
// anything else as the message itself. It never fails to decode: an error
// event is the server's failure, whatever its shape.
func anthropicErrorEvent(data []byte) error {
	var o struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &o) == nil && len(o.Error) > 0 && string(o.Error) != "null" {
		return anthropicError(o.Error)
	}
	return anthropicError(data)
}

// anthropicError reads an error object ({"type":..., "message":...}, with
// llama-server's "code", or another server's string) as a ServerError. A
// code that is an HTTP error status is the status, as on the server's
// OpenAI routes; else the type's status in Anthropic's API.
func anthropicError(raw json.RawMessage) *ServerError {
	var o struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			o.Message = s
		} else {
			o.Message = string(raw)
		}
	}
	msg := o.Message
	if o.Type != "" {
		msg = o.Type + ": " + msg
	}
	se := &ServerError{Message: TruncateUTF8(msg, maxErrText), Status: anthropicErrorStatus[o.Type]}
	var code int
	if json.Unmarshal(o.Code, &code) == nil && code >= 400 && code <= 599 {
		se.Status = code
	}
	return se
}
