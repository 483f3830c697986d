package prober

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/servingprobe/servingprobe/datasets"
)

// Endpoint paths (bench_serving §1).
const (
	pathGenerate    = "/generate"
	pathCompletions = "/v1/completions"
	pathChat        = "/v1/chat/completions"
	pathTRT         = "/v2/models/ensemble/generate_stream"
	pathTruss       = "/v1/models/model:predict"
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

// MarshalJSON writes the fields in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.k, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// pyFloat marshals like Python's json.dumps for the values we send: an
// integral value keeps ".0" (0.0, 1.0), as in the spec's example bodies.
type pyFloat float64

func (f pyFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("unsupported float %v", v)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.AppendFloat(nil, v, 'f', 1, 64), nil
	}
	return json.Marshal(v)
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
	b, err := json.Marshal(body)
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
	return req, nil
}

// isDone reports the OpenAI end-of-stream sentinel.
func isDone(data []byte) bool {
	return string(bytes.TrimSpace(data)) == "[DONE]"
}

// ServerError is an error object the server sent inside a 200 response.
type ServerError struct {
	Message string
}

func (e *ServerError) Error() string { return "server error in stream: " + e.Message }

// errorField decodes the shapes servers use for an in-stream error:
// {"error":"msg"} (Triton), {"error":{"message":...}} (OpenAI, vLLM, sglang)
// and vLLM's older top-level {"object":"error","message":...}.
type errorField struct {
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
}

func (e errorField) err() error {
	if e.Object == "error" {
		return &ServerError{Message: truncate(e.Message, maxErrText)}
	}
	raw := bytes.TrimSpace(e.Error)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &ServerError{Message: truncate(s, maxErrText)}
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Message != "" {
		return &ServerError{Message: truncate(o.Message, maxErrText)}
	}
	return &ServerError{Message: truncate(string(raw), maxErrText)}
}

// maxErrText bounds any server-provided text that reaches Result.Err.
const maxErrText = 512

// truncate cuts s to at most n bytes on a rune boundary and replaces
// invalid UTF-8, so error text is printable and bounded.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// usageJSON is the OpenAI usage block.
type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *usageJSON) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Source: TokenSourceUsage}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}
