package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/servingprobe/servingprobe/datasets"
)

// genRequest is what every protocol's request body comes down to.
type genRequest struct {
	model        string // the model to echo
	stream       bool
	promptTokens int
	// promptIDs are the prompt's token ids (len promptTokens), read by
	// the prefix cache model.
	promptIDs    []int
	maxTokens    int
	minTokens    int
	ignoreEOS    bool
	includeUsage bool
	// tool is the tool call a chat request's tools ask for; nil otherwise.
	tool *toolCall
}

// apiError is a request the simulator refuses, as the real server would.
type apiError struct {
	status  int
	message string
}

func badRequest(format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, a...)}
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// promptIDs reads an OpenAI prompt: a string, a list of token ids, or a
// one-element list of either (batches are refused).
func (s *Server) promptIDs(raw json.RawMessage) ([]int, *apiError) {
	if text, ok := plainJSONString(raw); ok {
		return s.encodeText(text)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return s.encodeText(text)
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return ids, nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil && len(ss) == 1 {
		return s.encodeText(ss[0])
	}
	var ii [][]int
	if json.Unmarshal(raw, &ii) == nil && len(ii) == 1 {
		return ii[0], nil
	}
	return nil, badRequest("prompt must be a string or a list of token ids; the simulator does not serve batched prompts")
}

// openAILimits applies vLLM's max_tokens default and context-length check.
func (s *Server) openAILimits(req *genRequest, maxTokens *int) *apiError {
	if maxTokens == nil {
		req.maxTokens = s.cfg.MaxModelLen - req.promptTokens
	} else {
		if *maxTokens < 1 {
			return badRequest("max_tokens must be at least 1, got %d.", *maxTokens)
		}
		req.maxTokens = *maxTokens
	}
	// Compared without adding, so that a huge max_tokens cannot overflow.
	if req.maxTokens > s.cfg.MaxModelLen-req.promptTokens {
		return badRequest("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.cfg.MaxModelLen, req.promptTokens+req.maxTokens, req.promptTokens, req.maxTokens)
	}
	if req.minTokens > req.maxTokens {
		return badRequest("min_tokens must be less than or equal to max_tokens=%d, got %d.", req.maxTokens, req.minTokens)
	}
	return nil
}

func (s *Server) checkModel(model string) *apiError {
	if model != "" && model != s.cfg.Model {
		return &apiError{status: http.StatusNotFound, message: fmt.Sprintf("The model `%s` does not exist.", model)}
	}
	return nil
}

func (s *Server) checkOpenAICommon(stream bool, so *streamOptions, n *int) *apiError {
	if so != nil && !stream {
		return badRequest("Stream options can only be defined when `stream=True`.")
	}
	if n != nil && *n != 1 {
		return badRequest("the simulator serves n=1 only, got n=%d", *n)
	}
	return nil
}

type completionBody struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	MinTokens     int             `json:"min_tokens"`
	IgnoreEOS     bool            `json:"ignore_eos"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	N             *int            `json:"n"`
	// ImageData is sglang's extension: images beside the prompt.
	ImageData json.RawMessage `json:"image_data"`
}

func (s *Server) parseCompletions(body []byte) (genRequest, *apiError) {
	var b completionBody
	if err := json.Unmarshal(body, &b); err != nil {
		return genRequest{}, badRequest("invalid JSON body: %v", err)
	}
	if e := s.checkModel(b.Model); e != nil {
		return genRequest{}, e
	}
	if e := s.checkOpenAICommon(b.Stream, b.StreamOptions, b.N); e != nil {
		return genRequest{}, e
	}
	if len(b.Prompt) == 0 {
		return genRequest{}, badRequest("prompt is required")
	}
	ids, e := s.promptIDs(b.Prompt)
	if e != nil {
		return genRequest{}, e
	}
	images, e := imageDataTokens(b.ImageData)
	if e != nil {
		return genRequest{}, e
	}
	req := genRequest{
		model: s.cfg.Model, stream: b.Stream, promptTokens: len(ids) + images, promptIDs: ids, minTokens: b.MinTokens,
		ignoreEOS: b.IgnoreEOS, includeUsage: b.StreamOptions != nil && b.StreamOptions.IncludeUsage,
	}
	return req, s.openAILimits(&req, b.MaxTokens)
}

type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	MinTokens           int            `json:"min_tokens"`
	IgnoreEOS           bool           `json:"ignore_eos"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options"`
	N                   *int           `json:"n"`
	// Tools and ToolChoice make the answer a tool call (toolcall.go).
	Tools      []chatTool      `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// messageText is a message's text: a string, or the text parts of a list of
// content parts (images are counted apart, by imageTokens).
func messageText(raw json.RawMessage) (string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("message content must be a string or a list of parts")
	}
	var out string
	for _, p := range parts {
		if p.Type == "text" {
			out += p.Text
		}
	}
	return out, nil
}

func (s *Server) parseChat(body []byte) (genRequest, *apiError) {
	var b chatBody
	if err := json.Unmarshal(body, &b); err != nil {
		return genRequest{}, badRequest("invalid JSON body: %v", err)
	}
	if e := s.checkModel(b.Model); e != nil {
		return genRequest{}, e
	}
	if e := s.checkOpenAICommon(b.Stream, b.StreamOptions, b.N); e != nil {
		return genRequest{}, e
	}
	if len(b.Messages) == 0 {
		return genRequest{}, badRequest("messages must not be empty")
	}
	contents := make([]string, len(b.Messages))
	roles := make([]string, len(b.Messages))
	msgs := make([]datasets.Message, len(b.Messages))
	images := 0 // the images' prompt tokens, beside the text's
	for i, m := range b.Messages {
		t, e := messageText(m.Content)
		if e != nil {
			return genRequest{}, e
		}
		contents[i], roles[i] = t, m.Role
		msgs[i] = datasets.Message{Role: m.Role, Content: t}
		n, e := imageTokens(m.Content)
		if e != nil {
			return genRequest{}, e
		}
		images += n
	}
	if e := s.checkHistory(roles, contents); e != nil {
		return genRequest{}, e
	}
	ids, e := s.chatIDs(msgs)
	if e != nil {
		return genRequest{}, e
	}
	req := genRequest{
		model: s.cfg.Model, stream: b.Stream, promptTokens: len(ids) + images, promptIDs: ids, minTokens: b.MinTokens,
		ignoreEOS: b.IgnoreEOS, includeUsage: b.StreamOptions != nil && b.StreamOptions.IncludeUsage,
		tool: newToolCall(b.Tools, b.ToolChoice),
	}
	// vLLM prefers max_completion_tokens and falls back to max_tokens.
	mt := b.MaxCompletionTokens
	if mt == nil {
		mt = b.MaxTokens
	}
	return req, s.openAILimits(&req, mt)
}

type generateBody struct {
	Text           *string         `json:"text"`
	InputIDs       json.RawMessage `json:"input_ids"`
	Stream         bool            `json:"stream"`
	ImageData      json.RawMessage `json:"image_data"`
	SamplingParams struct {
		MaxNewTokens *int `json:"max_new_tokens"`
		MinNewTokens int  `json:"min_new_tokens"`
		IgnoreEOS    bool `json:"ignore_eos"`
	} `json:"sampling_params"`
}

// sglang's default max_new_tokens.
const sglangDefaultMaxNewTokens = 128

func (s *Server) parseGenerate(body []byte) (genRequest, *apiError) {
	var b generateBody
	if err := json.Unmarshal(body, &b); err != nil {
		return genRequest{}, badRequest("invalid JSON body: %v", err)
	}
	req := genRequest{model: s.cfg.Model, stream: b.Stream, minTokens: b.SamplingParams.MinNewTokens, ignoreEOS: b.SamplingParams.IgnoreEOS}
	switch {
	case len(b.InputIDs) > 0 && string(b.InputIDs) != "null":
		var ids []int
		if err := json.Unmarshal(b.InputIDs, &ids); err != nil {
			return genRequest{}, badRequest("input_ids must be a list of ints; the simulator does not serve batches")
		}
		req.promptTokens, req.promptIDs = len(ids), ids
	case b.Text != nil:
		ids, e := s.encodeText(*b.Text)
		if e != nil {
			return genRequest{}, e
		}
		req.promptTokens, req.promptIDs = len(ids), ids
	default:
		return genRequest{}, badRequest("Either text, input_ids or input_embeds should be provided.")
	}
	images, e := imageDataTokens(b.ImageData)
	if e != nil {
		return genRequest{}, e
	}
	req.promptTokens += images
	req.maxTokens = sglangDefaultMaxNewTokens
	if p := b.SamplingParams.MaxNewTokens; p != nil {
		if *p < 0 {
			return genRequest{}, badRequest("max_new_tokens must be at least 0, got %d.", *p)
		}
		req.maxTokens = *p
	}
	if req.maxTokens > s.cfg.MaxModelLen-req.promptTokens {
		return genRequest{}, badRequest("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
			s.cfg.MaxModelLen, req.promptTokens+req.maxTokens, req.promptTokens, req.maxTokens)
	}
	return req, nil
}

type trtBody struct {
	TextInput *string `json:"text_input"`
	MaxTokens *int    `json:"max_tokens"`
	MinLength int     `json:"min_length"`
	EndID     *int    `json:"end_id"`
}

func (s *Server) parseTRT(body []byte, model string, stream bool) (genRequest, *apiError) {
	var b trtBody
	if err := json.Unmarshal(body, &b); err != nil {
		return genRequest{}, badRequest("failed to parse the request JSON buffer: %v", err)
	}
	if b.TextInput == nil {
		return genRequest{}, badRequest("input 'text_input' is required")
	}
	if b.MaxTokens == nil || *b.MaxTokens < 1 {
		return genRequest{}, badRequest("input 'max_tokens' is required and must be at least 1")
	}
	ids, e := s.encodeText(*b.TextInput)
	pt := len(ids)
	if e != nil {
		return genRequest{}, e
	}
	if *b.MaxTokens > s.cfg.MaxModelLen-pt {
		return genRequest{}, badRequest("max_tokens %d plus %d input tokens exceeds the maximum sequence length %d", *b.MaxTokens, pt, s.cfg.MaxModelLen)
	}
	return genRequest{
		model: model, stream: stream, promptTokens: pt, promptIDs: ids,
		maxTokens: *b.MaxTokens, minTokens: b.MinLength,
		// TensorRT-LLM has no ignore_eos: an end_id outside the vocabulary
		// can never be sampled, which has the same effect.
		ignoreEOS: b.EndID != nil && (*b.EndID >= vocabSize || *b.EndID < 0),
	}, nil
}

// plainJSONString returns the string raw holds when it has nothing to
// decode: no escapes, no control bytes, valid UTF-8. json.Unmarshal gives
// the same string for it, after scanning the prompt twice more; a prompt is
// most of a request's bytes.
func plainJSONString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}
