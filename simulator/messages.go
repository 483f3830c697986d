package simulator

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/servingprobe/servingprobe/datasets"
)

// The two newer routes that vLLM and ollama serve beside chat: OpenAI's
// Responses API and Anthropic's Messages API. Their events follow vLLM's
// converters (vllm/entrypoints/openai/serving_responses.py and
// vllm/entrypoints/anthropic/serving.py): typed server-sent events with an
// "event:" line, usage in the last event, no [DONE].

type responsesBody struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	IgnoreEOS       bool            `json:"ignore_eos"`
	Stream          bool            `json:"stream"`
}

// conversation reads "input" (Responses: a string or role/content
// messages) or "messages" plus "system" (Anthropic) as chat messages.
func conversation(raw json.RawMessage, system string) ([]datasets.Message, *apiError) {
	var msgs []datasets.Message
	if system != "" {
		msgs = append(msgs, datasets.Message{Role: "system", Content: system})
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return append(msgs, datasets.Message{Role: "user", Content: s}), nil
	}
	var list []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return nil, badRequest("input must be a string or a non-empty list of messages")
	}
	for _, m := range list {
		t, e := messageText(m.Content)
		if e != nil {
			return nil, e
		}
		msgs = append(msgs, datasets.Message{Role: m.Role, Content: t})
	}
	return msgs, nil
}

// chatRequest is the part parseResponses and parseMessages share.
func (s *Server) chatRequest(model string, msgs []datasets.Message, stream, ignoreEOS bool, maxTokens *int) (genRequest, *apiError) {
	if e := s.checkModel(model); e != nil {
		return genRequest{}, e
	}
	roles, contents := make([]string, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		roles[i], contents[i] = m.Role, m.Content
	}
	if e := s.checkHistory(roles, contents); e != nil {
		return genRequest{}, e
	}
	ids, e := s.chatIDs(msgs)
	if e != nil {
		return genRequest{}, e
	}
	req := genRequest{model: s.cfg.Model, stream: stream, promptTokens: len(ids), promptIDs: ids, ignoreEOS: ignoreEOS}
	return req, s.openAILimits(&req, maxTokens)
}

func (s *Server) parseResponses(body []byte) (genRequest, *apiError) {
	var b responsesBody
	if err := json.Unmarshal(body, &b); err != nil {
		return genRequest{}, badRequest("invalid JSON body: %v", err)
	}
	msgs, e := conversation(b.Input, "")
	if e != nil {
		return genRequest{}, e
	}
	return s.chatRequest(b.Model, msgs, b.Stream, b.IgnoreEOS, b.MaxOutputTokens)
}

type messagesBody struct {
	Model     string          `json:"model"`
	System    string          `json:"system"`
	Messages  json.RawMessage `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
	IgnoreEOS bool            `json:"ignore_eos"`
	Stream    bool            `json:"stream"`
}

func (s *Server) parseMessages(body []byte) (genRequest, *apiError) {
	var b messagesBody
	if err := json.Unmarshal(body, &b); err != nil {
		return genRequest{}, badRequest("invalid JSON body: %v", err)
	}
	if b.MaxTokens == nil {
		return genRequest{}, badRequest("max_tokens: Field required")
	}
	msgs, e := conversation(b.Messages, b.System)
	if e != nil {
		return genRequest{}, e
	}
	return s.chatRequest(b.Model, msgs, b.Stream, b.IgnoreEOS, b.MaxTokens)
}

// sseEvent appends `event: <name>\ndata: ` to b.
func sseEvent(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	return append(b, "\ndata: "...)
}

// responsesEmitter is vLLM's /v1/responses stream.
type responsesEmitter struct {
	g   *gen
	seq int
}

func newResponsesEmitter(g *gen) *responsesEmitter { return &responsesEmitter{g: g} }

func (e *responsesEmitter) next(b []byte) []byte {
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.seq), 10)
	e.seq++
	return b
}

// response appends the response object with a status and, when done, the usage.
func (e *responsesEmitter) response(b []byte, status string, usage bool) []byte {
	g := e.g
	b = append(b, `{"id":`...)
	b = appendJSONString(b, "resp_"+g.id)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, g.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, g.model)
	b = append(b, `,"object":"response","output":[],"status":"`...)
	b = append(b, status...)
	b = append(b, '"')
	if status == "incomplete" {
		b = append(b, `,"incomplete_details":{"reason":"max_output_tokens"}`...)
	}
	if !usage {
		return append(b, `,"usage":null}`...)
	}
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.promptTokens), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(g.emitted), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(g.promptTokens+g.emitted), 10)
	return append(b, `}}`...)
}

func (e *responsesEmitter) status() string {
	if e.g.finishReason() == "length" {
		return "incomplete"
	}
	return "completed"
}

func (e *responsesEmitter) begin(sw *streamWriter, _ *gen) error {
	b := append(sseEvent(sw.buf, "response.created"), `{"response":`...)
	b = e.response(b, "in_progress", false)
	sw.buf = append(append(e.next(b), `,"type":"response.created"}`...), "\n\n"...)
	return sw.commit(ChunkRole, 0)
}

func (e *responsesEmitter) tokens(sw *streamWriter, g *gen, k int, _ bool) error {
	if k == 0 {
		return nil
	}
	b := append(sseEvent(sw.buf, "response.output_text.delta"), `{"content_index":0,"delta":"`...)
	b, _ = drawTokens(g, k, b, nil)
	b = append(b, `","item_id":"msg_`...)
	b = append(b, g.id...)
	b = append(b, `","logprobs":[],"output_index":0`...)
	sw.buf = append(append(e.next(b), `,"type":"response.output_text.delta"}`...), "\n\n"...)
	return sw.commit(ChunkToken, k)
}

func (e *responsesEmitter) usage(*streamWriter, *gen) error { return nil }

func (e *responsesEmitter) done(sw *streamWriter) error {
	name := "response." + e.status()
	b := append(sseEvent(sw.buf, name), `{"response":`...)
	b = e.response(b, e.status(), true)
	b = append(e.next(b), `,"type":"`...)
	sw.buf = append(append(b, name...), "\"}\n\n"...)
	return sw.commit(ChunkDone, 0)
}

func (e *responsesEmitter) errorEvent(sw *streamWriter) error {
	b := append(sseEvent(sw.buf, "error"), `{"code":"server_error","message":"simulated engine failure","param":null`...)
	sw.buf = append(append(e.next(b), `,"type":"error"}`...), "\n\n"...)
	return sw.commit(ChunkError, 0)
}

func (e *responsesEmitter) malformed(sw *streamWriter, _ *gen) error {
	sw.buf = append(sseEvent(sw.buf, "response.output_text.delta"), `{"content_index":0,"delta":`+"\n\n"...)
	return sw.commit(ChunkMalformed, 0)
}

func (e *responsesEmitter) body(g *gen, text []byte, _ []int) []byte {
	saved := g.emitted
	g.emitted = g.n
	b := e.response(nil, e.status(), true)
	g.emitted = saved
	// The output item goes where the streamed events leave it empty.
	item := append([]byte(`"output":[{"id":"msg_`), g.id...)
	item = append(item, `","content":[{"annotations":[],"text":"`...)
	item = append(item, text...)
	item = append(item, `","type":"output_text"}],"role":"assistant","status":"completed","type":"message"}]`...)
	out := []byte(`"output":[]`)
	i := bytes.Index(b, out)
	return append(append(append([]byte(nil), b[:i]...), item...), b[i+len(out):]...)
}

// messagesEmitter is vLLM's /v1/messages stream.
type messagesEmitter struct{ g *gen }

func newMessagesEmitter(g *gen) *messagesEmitter { return &messagesEmitter{g: g} }

// stopReason maps the finish reason as vLLM's stop_reason_map does.
func (e *messagesEmitter) stopReason() string {
	if e.g.finishReason() == "length" {
		return "max_tokens"
	}
	return "end_turn"
}

func (e *messagesEmitter) begin(sw *streamWriter, g *gen) error {
	b := append(sseEvent(sw.buf, "message_start"), `{"type":"message_start","message":{"id":`...)
	b = appendJSONString(b, "chatcmpl-"+g.id)
	b = append(b, `,"content":[],"model":`...)
	b = appendJSONString(b, g.model)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.promptTokens), 10)
	b = append(b, `,"output_tokens":0}}}`+"\n\n"...)
	b = append(sseEvent(b, "content_block_start"), `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n"...)
	sw.buf = b
	return sw.commit(ChunkRole, 0)
}

func (e *messagesEmitter) tokens(sw *streamWriter, g *gen, k int, _ bool) error {
	if k == 0 {
		return nil
	}
	b := append(sseEvent(sw.buf, "content_block_delta"), `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`...)
	b, _ = drawTokens(g, k, b, nil)
	sw.buf = append(b, `"}}`+"\n\n"...)
	return sw.commit(ChunkToken, k)
}

func (e *messagesEmitter) usage(*streamWriter, *gen) error { return nil }

func (e *messagesEmitter) done(sw *streamWriter) error {
	g := e.g
	b := append(sseEvent(sw.buf, "content_block_stop"), `{"type":"content_block_stop","index":0}`+"\n\n"...)
	b = append(sseEvent(b, "message_delta"), `{"type":"message_delta","delta":{"stop_reason":"`...)
	b = append(b, e.stopReason()...)
	b = append(b, `"},"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.promptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(g.emitted), 10)
	b = append(b, `}}`+"\n\n"...)
	sw.buf = append(sseEvent(b, "message_stop"), `{"type":"message_stop"}`+"\n\n"...)
	return sw.commit(ChunkDone, 0)
}

func (e *messagesEmitter) errorEvent(sw *streamWriter) error {
	sw.buf = append(sseEvent(sw.buf, "error"), `{"type":"error","error":{"type":"internal_error","message":"simulated engine failure"}}`+"\n\n"...)
	return sw.commit(ChunkError, 0)
}

func (e *messagesEmitter) malformed(sw *streamWriter, _ *gen) error {
	sw.buf = append(sseEvent(sw.buf, "content_block_delta"), `{"type":"content_block_delta","index":0,"delta":`+"\n\n"...)
	return sw.commit(ChunkMalformed, 0)
}

func (e *messagesEmitter) body(g *gen, text []byte, _ []int) []byte {
	b := append([]byte(nil), `{"id":`...)
	b = appendJSONString(b, "chatcmpl-"+g.id)
	b = append(b, `,"type":"message","role":"assistant","content":[{"type":"text","text":"`...)
	b = append(b, text...)
	b = append(b, `"}],"model":`...)
	b = appendJSONString(b, g.model)
	b = append(b, `,"stop_reason":"`...)
	b = append(b, e.stopReason()...)
	b = append(b, `","stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.promptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(g.n), 10)
	return append(b, `}}`...)
}
