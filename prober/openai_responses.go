package prober

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
)

// openAIResponses is OpenAI's Responses API, POST /v1/responses, as vLLM,
// sglang and ollama serve it. A stream is server-sent events, each with an
// "event:" line naming its type and a JSON object whose "type" repeats it,
// and no [DONE]: the last event is response.completed (or
// response.incomplete, response.failed, error). Only the *.delta events
// carry new text: the *.done events and the items of response.completed
// repeat the whole text, so they count nothing. Usage arrives once, inside
// response.completed's response object, as input_tokens, output_tokens
// and output_tokens_details.reasoning_tokens.
type openAIResponses struct{}

var _ Backend = openAIResponses{}

func (openAIResponses) framing() Framing { return Framing{} } // server-sent events

func (b openAIResponses) decodeMemo(ev SSEEvent, _ *scanMemo, d *Delta) error {
	return d.set(b.Decode(ev))
}

// pathResponses is the Responses API's endpoint.
const pathResponses = "/v1/responses"

// responsesInput is "input": the prompt as a string, or the conversation
// as role/content messages (vLLM and ollama take OpenAI's "easy input
// message" form, a role and a string).
func responsesInput(p datasets.Prompt) any {
	if len(p.Messages) == 0 {
		return p.Text
	}
	out := make([]object, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = object{{"role", m.Role}, {"content", m.Content}}
	}
	return out
}

func (openAIResponses) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	body := object{
		{"model", modelFor(o, p)},
		{"input", responsesInput(p)},
		{"max_output_tokens", p.OutputLen},
		{"stream", o.Stream},
		{"temperature", floatOr(o.Temperature, 0)},
	}
	if o.TopP != nil {
		body = append(body, field{"top_p", pyFloat(*o.TopP)})
	}
	if o.IgnoreEOS {
		// Not part of OpenAI's schema; vLLM's sampling extensions read it
		// on its other routes, and servers that do not know it ignore it.
		body = append(body, field{"ignore_eos", true})
	}
	return newJSONRequest(o, pathResponses, body, p)
}

// responsesUsage is the Responses API's usage object.
type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *responsesUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, Source: TokenSourceUsage}
	if u.InputTokensDetails != nil {
		out.CachedTokens = u.InputTokensDetails.CachedTokens
	}
	if u.OutputTokensDetails != nil {
		out.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
	}
	return out
}

// responsesEvent is one event of a Responses stream: the fields of every
// type that servingprobe reads.
type responsesEvent struct {
	Type     string `json:"type"`
	Delta    string `json:"delta"`
	Response *struct {
		Status            string          `json:"status"`
		Usage             *responsesUsage `json:"usage"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Error *struct {
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		} `json:"error"`
	} `json:"response"`
	// The error event's own fields (message, code) and the error shapes
	// of the other routes, for a server that fails the stream with one.
	errorField
}

// Decode reads one event. The text of reasoning deltas (vLLM's
// response.reasoning_text.delta, ollama's
// response.reasoning_summary_text.delta) is output marked as reasoning;
// output text, refusals and function-call arguments are the answer. A
// failure is a ServerError whether it comes as response.failed (the
// response object's error) or as an error event: either arrives inside a
// 200 stream.
func (openAIResponses) Decode(ev SSEEvent) (Delta, error) {
	if isDone(ev.Data) {
		return Delta{Done: true}, nil
	}
	var e responsesEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return Delta{}, fmt.Errorf("decode responses event: %w", err)
	}
	if e.Type == "" {
		e.Type = ev.Event
	}
	if e.Type != "error" {
		if err := e.err(); err != nil {
			return Delta{}, err
		}
	}
	var d Delta
	switch e.Type {
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
		d.Text = []byte(e.Delta)
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		d.Text, d.Reasoning = []byte(e.Delta), true
	case "response.completed", "response.incomplete":
		d.FinishReason = "stop"
		if r := e.Response; r != nil {
			d.Usage = r.Usage.usage()
			if r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "" {
				d.FinishReason = r.IncompleteDetails.Reason
			}
		}
		if d.FinishReason == "max_output_tokens" {
			d.FinishReason = "length" // the request's length, as the other protocols say it
		}
	case "response.failed":
		msg, status := "response failed", 0
		if r := e.Response; r != nil && r.Error != nil {
			msg, status = r.Error.Message, statedStatus(r.Error.Code)
		}
		return Delta{}, &ServerError{Message: TruncateUTF8(msg, maxErrText), Status: status}
	case "error":
		return Delta{}, &ServerError{Message: TruncateUTF8(e.Message, maxErrText), Status: statedStatus(e.Code)}
	}
	return d, nil
}
