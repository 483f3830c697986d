package simulator

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

// ollama's native API (/api/generate, /api/chat), as its server streams it:
// newline-delimited JSON, one object per piece of output with "done":
// false, then a final object with "done": true, the done_reason, and the
// server's counts and timings in nanoseconds (prompt_eval_count,
// prompt_eval_duration, eval_count, eval_duration, load_duration,
// total_duration). An error after output started is one more line,
// {"error": "..."}, and the stream ends.

type ollamaOptions struct {
	NumPredict *int `json:"num_predict"`
}

type ollamaBody struct {
	Model    string          `json:"model"`
	Prompt   *string         `json:"prompt"`
	System   string          `json:"system"`
	Raw      bool            `json:"raw"`
	Messages []ollamaMessage `json:"messages"`
	Stream   *bool           `json:"stream"`
	Options  ollamaOptions   `json:"options"`
}

type ollamaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// parseOllama reads either endpoint's body. ollama streams unless told
// not to; num_predict bounds the output (absent or negative: up to the
// context), and there is no ignore_eos.
func (s *Server) parseOllama(body []byte, chat bool) (genRequest, *apiError) {
	var b ollamaBody
	if err := json.Unmarshal(body, &b); err != nil {
		return genRequest{}, badRequest("invalid JSON body: %v", err)
	}
	if b.Model == "" {
		return genRequest{}, badRequest("model is required")
	}
	if b.Model != s.cfg.Model {
		return genRequest{}, &apiError{status: 404, message: "model '" + b.Model + "' not found"}
	}
	var ids []int
	if chat {
		if len(b.Messages) == 0 {
			return genRequest{}, badRequest("messages must not be empty")
		}
		contents := make([]string, len(b.Messages))
		roles := make([]string, len(b.Messages))
		msgs := make([]datasets.Message, len(b.Messages))
		for i, m := range b.Messages {
			contents[i], roles[i] = m.Content, m.Role
			msgs[i] = datasets.Message{Role: m.Role, Content: m.Content}
		}
		if e := s.checkHistory(roles, contents); e != nil {
			return genRequest{}, e
		}
		var e *apiError
		if ids, e = s.chatIDs(msgs); e != nil {
			return genRequest{}, e
		}
	} else {
		if b.Prompt == nil || *b.Prompt == "" {
			// ollama loads the model and answers done_reason "load"; the
			// simulator has nothing to load.
			return genRequest{}, badRequest("prompt is required")
		}
		var e *apiError
		switch {
		case b.Raw:
			ids, e = s.encodeText(*b.Prompt)
		case b.System != "":
			ids, e = s.chatIDs([]datasets.Message{{Role: "system", Content: b.System}, {Role: "user", Content: *b.Prompt}})
		default:
			ids, e = s.chatIDs([]datasets.Message{{Role: "user", Content: *b.Prompt}})
		}
		if e != nil {
			return genRequest{}, e
		}
	}
	prompt := len(ids)
	req := genRequest{model: b.Model, stream: b.Stream == nil || *b.Stream, promptTokens: prompt, promptIDs: ids}
	req.maxTokens = s.cfg.MaxModelLen - prompt
	if n := b.Options.NumPredict; n != nil && *n > 0 {
		req.maxTokens = min(*n, req.maxTokens)
	}
	if req.maxTokens < 1 {
		return genRequest{}, badRequest("the prompt (%d tokens) fills the context (%d)", prompt, s.cfg.MaxModelLen)
	}
	return req, nil
}

// ollamaEmitter writes either endpoint's stream.
type ollamaEmitter struct {
	g    *gen
	chat bool
}

func newOllamaEmitter(g *gen, chat bool) *ollamaEmitter { return &ollamaEmitter{g: g, chat: chat} }

// head is `{"model":"<m>","created_at":"<now>",`, as Go's encoding/json
// writes ollama's structs (created_at in RFC 3339 with nanoseconds).
func (e *ollamaEmitter) head(b []byte) []byte {
	b = append(b, `{"model":`...)
	b = appendJSONString(b, e.g.model)
	b = append(b, `,"created_at":"`...)
	b = time.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `",`...)
}

// text opens the field that carries output text.
func (e *ollamaEmitter) text(b []byte) []byte {
	if e.chat {
		return append(b, `"message":{"role":"assistant","content":"`...)
	}
	return append(b, `"response":"`...)
}

func (e *ollamaEmitter) closeText(b []byte) []byte {
	if e.chat {
		return append(b, `"},`...)
	}
	return append(b, `",`...)
}

func (e *ollamaEmitter) begin(*streamWriter, *gen) error { return nil }

// tokens writes one object per chunk; the finish reason goes in the final
// object that done writes, as ollama sends it.
func (e *ollamaEmitter) tokens(sw *streamWriter, g *gen, k int, _ bool) error {
	b := e.text(e.head(sw.buf))
	b, _ = drawTokens(g, k, b, nil)
	sw.buf = append(e.closeText(b), `"done":false}`+"\n"...)
	return sw.commit(ChunkToken, k)
}

func (e *ollamaEmitter) usage(*streamWriter, *gen) error { return nil }

// done writes the final object with its counts and timings.
func (e *ollamaEmitter) done(sw *streamWriter) error {
	b := e.closeText(e.text(e.head(sw.buf)))
	sw.buf = append(e.final(b), '\n')
	return sw.commit(ChunkDone, 0)
}

// final appends `"done":true,"done_reason":...,<metrics>}`.
func (e *ollamaEmitter) final(b []byte) []byte {
	g, now := e.g, time.Now()
	reason := g.finishReason()
	if reason == "abort" {
		reason = "stop" // ollama has no abort; its errors come as an error line
	}
	b = append(b, `"done":true,"done_reason":"`...)
	b = append(b, reason...)
	b = append(b, `","total_duration":`...)
	b = strconv.AppendInt(b, int64(now.Sub(g.arrived)), 10)
	b = append(b, `,"load_duration":`...)
	b = strconv.AppendInt(b, int64(g.admitted.Sub(g.arrived)), 10)
	b = append(b, `,"prompt_eval_count":`...)
	b = strconv.AppendInt(b, int64(g.promptTokens), 10)
	b = append(b, `,"prompt_eval_duration":`...)
	b = strconv.AppendInt(b, int64(g.first.Sub(g.admitted)), 10)
	b = append(b, `,"eval_count":`...)
	b = strconv.AppendInt(b, int64(g.emitted), 10)
	b = append(b, `,"eval_duration":`...)
	b = strconv.AppendInt(b, int64(now.Sub(g.first)), 10)
	return append(b, '}')
}

func (e *ollamaEmitter) errorEvent(sw *streamWriter) error {
	sw.buf = append(sw.buf, `{"error":"an error was encountered while running the model: simulated engine failure"}`+"\n"...)
	return sw.commit(ChunkError, 0)
}

func (e *ollamaEmitter) malformed(sw *streamWriter, _ *gen) error {
	b := e.head(sw.buf)
	sw.buf = append(e.text(b), "\n"...)
	return sw.commit(ChunkMalformed, 0)
}

func (e *ollamaEmitter) body(_ *gen, text []byte, _ []int) []byte {
	b := e.text(e.head(nil))
	b = append(b, text...)
	return e.final(e.closeText(b))
}
