package prober

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
)

// Endpoint paths, as bench_serving's backends request them.
const (
	pathGenerate    = "/generate"
	pathCompletions = "/v1/completions"
	pathChat        = "/v1/chat/completions"
	pathTRT         = "/v2/models/ensemble/generate_stream"
	pathTruss       = "/v1/models/model:predict"

	// Control endpoints, never measured.
	pathModels           = "/v1/models"
	pathFlushCache       = "/flush_cache"
	pathResetPrefixCache = "/reset_prefix_cache"
)

// field is one key of a JSON object whose key order we control: golden
// request bodies, and people diffing them against bench_serving's, expect
// Python's dict order.
type field struct {
	k string
	v any
}

// object is an ordered JSON object.
type object []field

func (o object) set(k string, v any) object {
	for i := range o {
		if o[i].k == k {
			o[i].v = v
			return o
		}
	}
	return append(o, field{k, v})
}

// merge applies extra the way Python's dict.update does: existing keys keep
// their place, new keys are appended (sorted, since Go maps have no order).
func (o object) merge(extra map[string]any) object {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		o = o.set(k, extra[k])
	}
	return o
}

// MarshalJSON writes the fields in order. A request body calls it itself
// rather than through json.Marshal, which would scan and copy the whole
// output once more to check it (the prompt is most of a body's bytes).
func (o object) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, '{')
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(f.k)
		b = append(b, k...)
		b = append(b, ':')
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.k, err)
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// pyFloat marshals like Python's json.dumps (pyfmt.Float): an integral value
// keeps ".0" (0.0, 1.0), as in bench_serving's bodies.
type pyFloat float64

func (f pyFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("unsupported float %v", v)
	}
	return []byte(pyfmt.Float(v)), nil
}

func floatOr(p *float64, def float64) pyFloat {
	if p != nil {
		return pyFloat(*p)
	}
	return pyFloat(def)
}

// modelFor returns the model to send: the LoRA name when the prompt has one
// (bench_serving sets both model and lora_path to it, to cover sglang and
// vLLM).
func modelFor(o RequestOptions, p datasets.Prompt) string {
	if p.LoRA != "" {
		return p.LoRA
	}
	return o.Model
}

// newJSONRequest builds the POST with the headers every backend shares.
func newJSONRequest(o RequestOptions, path string, body object, p datasets.Prompt) (*http.Request, error) {
	body = body.merge(o.ExtraBody).merge(p.ExtraBody)
	b, err := body.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode request body: %w", err)
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(o.BaseURL, "/")+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	// Ask for identity explicitly: a compressed stream cannot be stamped as
	// it arrives, and a gzip bomb must not expand behind our size limits.
	req.Header.Set("Accept-Encoding", "identity")
	if o.Stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range o.Headers {
		req.Header.Set(k, v)
	}
	if p.RoutingKey != "" {
		req.Header.Set("X-SMG-Routing-Key", p.RoutingKey)
	}
	if p.RequestID != "" {
		// After the user's headers, as vLLM's _update_headers_common sets it.
		req.Header.Set("X-Request-Id", p.RequestID)
	}
	return req, nil
}

// isDone reports the OpenAI end-of-stream sentinel.
func isDone(data []byte) bool {
	return string(bytes.TrimSpace(data)) == "[DONE]"
}

// ServerError is a failure the server reported inside a 200 response,
// after the status line was sent: an error object, or a finish reason by
// which the server says the generation failed. It is not a malformed
// stream, so it is not parse_error: the server answered, deliberately.
type ServerError struct {
	Message string
	// Status is the HTTP status the server states for the failure (the
	// "code" of vLLM's, sglang's and lmdeploy's error objects, sglang's
	// abort status_code), or 0 when it states none. classify treats a
	// stated status as if it had been the response's.
	Status int
}

func (e *ServerError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("server error in stream (status %d): %s", e.Status, e.Message)
	}
	return "server error in stream: " + e.Message
}

// errorField decodes the shapes servers use for an in-stream error:
// {"error":"msg"} (Triton, ollama), {"error":{"message":...,"code":500}}
// (OpenAI, vLLM, sglang, lmdeploy), vLLM's and sglang's older top-level
// {"object":"error","message":...,"code":500}, and lmdeploy's proxy
// {"error":true,"status":500,"message":...}.
type errorField struct {
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
	Status  json.RawMessage `json:"status"`
}

func (e errorField) err() error {
	if e.Object == "error" {
		return &ServerError{Message: TruncateUTF8(e.Message, maxErrText), Status: statedStatus(e.Code)}
	}
	raw := bytes.TrimSpace(e.Error)
	switch string(raw) {
	case "", "null", "false":
		return nil
	case "true":
		return &ServerError{Message: TruncateUTF8(e.Message, maxErrText), Status: statedStatus(e.Status)}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &ServerError{Message: TruncateUTF8(s, maxErrText)}
	}
	var o struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Message != "" {
		return &ServerError{Message: TruncateUTF8(o.Message, maxErrText), Status: statedStatus(o.Code)}
	}
	return &ServerError{Message: TruncateUTF8(string(raw), maxErrText), Status: statedStatus(o.Code)}
}

// statedStatus reads an error's code as an HTTP status: an integer from 400
// to 599. OpenAI's own codes are strings ("context_length_exceeded") and
// say nothing about the status, so they give 0.
func statedStatus(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) != nil || n < 400 || n > 599 {
		return 0
	}
	return n
}

// finishError reports a finish reason by which the server says the
// generation failed: "error" (lmdeploy puts the error message in that
// chunk's content; vLLM's engine uses it for a failed request) and "abort"
// (vLLM and lmdeploy: the request was aborted on the server, since a
// client that aborts reads nothing more). The chunk's text is the message,
// never output.
func finishError(d *Delta) error {
	switch d.FinishReason {
	case "error", "abort":
	default:
		return nil
	}
	msg := `finish_reason "` + d.FinishReason + `"`
	if text := d.TextString(); text != "" {
		msg += ": " + text
	}
	return &ServerError{Message: TruncateUTF8(msg, maxErrText)}
}

// maxErrText bounds any server-provided text that reaches Result.Err.
const maxErrText = 512

// TruncateUTF8 is config.TruncateUTF8: it bounds text where no redactor
// is at hand (the decoders are pure); text that may hold a secret is cut
// by config.Redactor.Sanitize, after redaction.
func TruncateUTF8(s string, n int) string { return config.TruncateUTF8(s, n) }

// usageJSON is the OpenAI usage block.
type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	ReasoningTokens int `json:"reasoning_tokens"` // sglang's place for it
}

func (u *usageJSON) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Source: TokenSourceUsage}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	details := 0
	if u.CompletionTokensDetails != nil {
		details = u.CompletionTokensDetails.ReasoningTokens
	}
	out.ReasoningTokens = reasoningTokens(details, u.ReasoningTokens)
	return out
}
