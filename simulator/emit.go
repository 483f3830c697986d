package simulator

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// gen is the state of one generation shared by the emitters.
type gen struct {
	id           string // the response id suffix (the request id)
	model        string
	created      int64 // Unix seconds at arrival
	arrived      time.Time
	admitted     time.Time // given a running slot
	first        time.Time // the first token is due
	promptTokens int
	n            int  // tokens to produce
	eos          bool // ends by EOS rather than by length
	aborted      bool // the server aborted it (FaultAbortInStream)
	emitted      int
	rng          *rand.Rand
	text         []byte    // the text generated so far, kept only to check histories
	stateMetrics bool      // Config.StateMetrics
	tool         *toolCall // the answer is this tool call (streamed chat only)
}

// appendMetrics appends vLLM's per-request metrics object, as a key of
// the usage chunk, when the server states it: the TTFT and queue time
// this request was given, in milliseconds.
func (g *gen) appendMetrics(b []byte) []byte {
	if !g.stateMetrics || g.first.IsZero() {
		return b
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b = append(b, `,"metrics":{"time_to_first_token_ms":`...)
	b = strconv.AppendFloat(b, ms(g.first.Sub(g.arrived)), 'f', -1, 64)
	b = append(b, `,"queue_time_ms":`...)
	b = strconv.AppendFloat(b, ms(g.admitted.Sub(g.arrived)), 'f', -1, 64)
	return append(b, '}')
}

func (g *gen) finishReason() string {
	if g.aborted {
		return "abort"
	}
	if g.tool != nil && g.eos {
		return "tool_calls"
	}
	if g.eos {
		return "stop"
	}
	return "length"
}

// emitter writes one protocol's events. Every method appends one event to
// sw.buf and commits it (begin, usage and done may write nothing).
type emitter interface {
	begin(sw *streamWriter, g *gen) error                     // before the first token chunk
	tokens(sw *streamWriter, g *gen, k int, final bool) error // k tokens; final carries the finish reason
	usage(sw *streamWriter, g *gen) error                     // the usage-only chunk, if the protocol has one
	done(sw *streamWriter) error                              // the terminator, if the protocol has one
	errorEvent(sw *streamWriter) error                        // the in-stream error object and what follows it
	malformed(sw *streamWriter, g *gen) error                 // an event with broken JSON
	// body is the whole non-streaming response for text and ids.
	body(g *gen, text []byte, ids []int) []byte
}

// appendJSONString appends s as a JSON string, escaping as pydantic and
// orjson do (quotes, backslash and control characters; UTF-8 kept as is).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendUsage(b []byte, prompt, completion int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	return append(b, '}')
}

// drawTokens appends k token texts to b and their ids to ids.
func drawTokens(g *gen, k int, b []byte, ids []int) ([]byte, []int) {
	for range k {
		t, id := nextToken(g.rng)
		b = append(b, t...)
		if g.text != nil {
			g.text = append(g.text, t...)
		}
		if ids != nil {
			ids = append(ids, id)
		}
	}
	return b, ids
}

// vLLM's streamed error object, written by json.dumps (hence the spaces).
const vllmStreamError = `data: {"error": {"message": "simulated engine failure", "type": "InternalServerError", "param": null, "code": 500}}` + "\n\n"

// openAIHead is `{"id":"<prefix><id>","object":"<object>","created":<c>,"model":"<m>",`.
func openAIHead(prefix, object string, g *gen) []byte {
	b := append([]byte(nil), `{"id":`...)
	b = appendJSONString(b, prefix+g.id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, g.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, g.model)
	return append(b, ',')
}

// completionsEmitter is vLLM's /v1/completions stream (also truss's).
// Chunks are serialised with exclude_unset=False, so every field appears.
type completionsEmitter struct{ head []byte }

func newCompletionsEmitter(g *gen) *completionsEmitter {
	return &completionsEmitter{head: openAIHead("cmpl-", "text_completion", g)}
}

func (e *completionsEmitter) begin(*streamWriter, *gen) error { return nil }

func (e *completionsEmitter) tokens(sw *streamWriter, g *gen, k int, final bool) error {
	b := append(sw.buf, "data: "...)
	b = append(b, e.head...)
	b = append(b, `"choices":[{"index":0,"text":"`...)
	b, _ = drawTokens(g, k, b, nil)
	if final {
		b = append(b, `","logprobs":null,"finish_reason":"`...)
		b = append(b, g.finishReason()...)
		b = append(b, `","stop_reason":null}],"usage":null}`+"\n\n"...)
	} else {
		b = append(b, `","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`+"\n\n"...)
	}
	sw.buf = b
	return sw.commit(ChunkToken, k)
}

func (e *completionsEmitter) usage(sw *streamWriter, g *gen) error {
	b := append(sw.buf, "data: "...)
	b = append(b, e.head...)
	b = append(b, `"choices":[],"usage":`...)
	b = appendUsage(b, g.promptTokens, g.emitted)
	b = g.appendMetrics(b)
	sw.buf = append(b, "}\n\n"...)
	return sw.commit(ChunkUsage, 0)
}

func (e *completionsEmitter) done(sw *streamWriter) error {
	sw.buf = append(sw.buf, "data: [DONE]\n\n"...)
	return sw.commit(ChunkDone, 0)
}

func (e *completionsEmitter) errorEvent(sw *streamWriter) error {
	sw.buf = append(sw.buf, vllmStreamError...)
	if err := sw.commit(ChunkError, 0); err != nil {
		return err
	}
	return e.done(sw)
}

func (e *completionsEmitter) malformed(sw *streamWriter, _ *gen) error {
	b := append(sw.buf, "data: "...)
	b = append(b, e.head...)
	sw.buf = append(b, `"choices":[{"index":0,"text":`+"\n\n"...)
	return sw.commit(ChunkMalformed, 0)
}

func (e *completionsEmitter) body(g *gen, text []byte, _ []int) []byte {
	b := append([]byte(nil), e.head...)
	b = append(b, `"choices":[{"index":0,"text":"`...)
	b = append(b, text...)
	b = append(b, `","logprobs":null,"finish_reason":"`...)
	b = append(b, g.finishReason()...)
	b = append(b, `","stop_reason":null,"prompt_logprobs":null}],"usage":`...)
	b = appendUsage(b, g.promptTokens, g.n)
	b = b[:len(b)-1]
	return append(b, `,"prompt_tokens_details":null}}`...)
}

// chatEmitter is vLLM's /v1/chat/completions stream. Chunks are serialised
// with exclude_unset=True: the role chunk has role and empty content, content
// chunks only content, and stop_reason appears only on the finishing chunk.
type chatEmitter struct{ head []byte }

func newChatEmitter(g *gen) *chatEmitter {
	return &chatEmitter{head: openAIHead("chatcmpl-", "chat.completion.chunk", g)}
}

func (e *chatEmitter) begin(sw *streamWriter, _ *gen) error {
	b := append(sw.buf, "data: "...)
	b = append(b, e.head...)
	sw.buf = append(b, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	return sw.commit(ChunkRole, 0)
}

func (e *chatEmitter) tokens(sw *streamWriter, g *gen, k int, final bool) error {
	b := append(sw.buf, "data: "...)
	b = append(b, e.head...)
	if g.tool != nil {
		b = appendToolFragments(b, g, k)
	} else {
		b = append(b, `"choices":[{"index":0,"delta":{"content":"`...)
		b, _ = drawTokens(g, k, b, nil)
		b = append(b, '"')
	}
	if final {
		b = append(b, `},"logprobs":null,"finish_reason":"`...)
		b = append(b, g.finishReason()...)
		b = append(b, `","stop_reason":null}]}`+"\n\n"...)
	} else {
		b = append(b, `},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	sw.buf = b
	return sw.commit(ChunkToken, k)
}

// appendToolFragments opens a chat chunk's choice with a delta carrying
// the tool call's next k fragments (as vLLM streams one call, index 0);
// the caller closes the delta.
func appendToolFragments(b []byte, g *gen, k int) []byte {
	b = append(b, `"choices":[{"index":0,"delta":{"tool_calls":[`...)
	for i := 0; i < k; i++ {
		if j := g.emitted + i; j < len(g.tool.frags) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, g.tool.frags[j]...)
		}
	}
	return append(b, ']') // the server counts the k tokens emitted after the chunk
}

func (e *chatEmitter) usage(sw *streamWriter, g *gen) error {
	b := append(sw.buf, "data: "...)
	b = append(b, e.head...)
	b = append(b, `"choices":[],"usage":`...)
	b = appendUsage(b, g.promptTokens, g.emitted)
	b = g.appendMetrics(b)
	sw.buf = append(b, "}\n\n"...)
	return sw.commit(ChunkUsage, 0)
}

func (e *chatEmitter) done(sw *streamWriter) error {
	sw.buf = append(sw.buf, "data: [DONE]\n\n"...)
	return sw.commit(ChunkDone, 0)
}

func (e *chatEmitter) errorEvent(sw *streamWriter) error {
	sw.buf = append(sw.buf, vllmStreamError...)
	if err := sw.commit(ChunkError, 0); err != nil {
		return err
	}
	return e.done(sw)
}

func (e *chatEmitter) malformed(sw *streamWriter, _ *gen) error {
	b := append(sw.buf, "data: "...)
	b = append(b, e.head...)
	sw.buf = append(b, `"choices":[{"index":0,"delta":{"content":`+"\n\n"...)
	return sw.commit(ChunkMalformed, 0)
}

func (e *chatEmitter) body(g *gen, text []byte, _ []int) []byte {
	b := append([]byte(nil), `{"id":`...)
	b = appendJSONString(b, "chatcmpl-"+g.id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, g.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, g.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","reasoning_content":null,"content":"`...)
	b = append(b, text...)
	b = append(b, `","tool_calls":[]},"logprobs":null,"finish_reason":"`...)
	b = append(b, g.finishReason()...)
	b = append(b, `","stop_reason":null}],"usage":`...)
	b = appendUsage(b, g.promptTokens, g.n)
	b = b[:len(b)-1]
	return append(b, `,"prompt_tokens_details":null},"prompt_logprobs":null}`...)
}

// generateEmitter is sglang's /generate stream: every event carries the
// cumulative text and output ids, and meta_info with cumulative counts.
type generateEmitter struct {
	text []byte
	ids  []byte // the comma-separated ids so far
	rid  []byte // the JSON-quoted id
}

func newGenerateEmitter(g *gen) *generateEmitter {
	return &generateEmitter{
		text: make([]byte, 0, g.n*7),
		ids:  make([]byte, 0, g.n*6),
		rid:  appendJSONString(nil, g.id),
	}
}

func (e *generateEmitter) begin(*streamWriter, *gen) error { return nil }

func (e *generateEmitter) grow(g *gen, k int) {
	for range k {
		t, id := nextToken(g.rng)
		e.text = append(e.text, t...)
		if len(e.ids) > 0 {
			e.ids = append(e.ids, ',')
		}
		e.ids = strconv.AppendInt(e.ids, int64(id), 10)
	}
}

func (e *generateEmitter) appendEvent(b []byte, g *gen, completion int, final bool) []byte {
	b = append(b, `{"text":"`...)
	b = append(b, e.text...)
	b = append(b, `","output_ids":[`...)
	b = append(b, e.ids...)
	b = append(b, `],"meta_info":{"id":`...)
	b = append(b, e.rid...)
	b = append(b, `,"finish_reason":`...)
	switch {
	case !final:
		b = append(b, "null"...)
	case g.aborted:
		// sglang's FINISH_ABORT, streamed as the last chunk with the status
		// the server would have answered (tokenizer_manager).
		b = append(b, `{"type":"abort","message":"simulated abort","status_code":503,"err_type":null}`...)
	case g.eos:
		b = append(b, `{"type":"stop","matched":`...)
		b = strconv.AppendInt(b, eosTokenID, 10)
		b = append(b, '}')
	default:
		b = append(b, `{"type":"length","length":`...)
		b = strconv.AppendInt(b, int64(completion), 10)
		b = append(b, '}')
	}
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(g.promptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"cached_tokens":0`...)
	if final {
		b = append(b, `,"e2e_latency":`...)
		b = strconv.AppendFloat(b, time.Since(g.arrived).Seconds(), 'f', -1, 64)
	}
	return append(b, "}}"...)
}

func (e *generateEmitter) tokens(sw *streamWriter, g *gen, k int, final bool) error {
	e.grow(g, k)
	b := append(sw.buf, "data: "...)
	b = e.appendEvent(b, g, g.emitted+k, final)
	sw.buf = append(b, "\n\n"...)
	return sw.commit(ChunkToken, k)
}

func (e *generateEmitter) usage(*streamWriter, *gen) error { return nil }

func (e *generateEmitter) done(sw *streamWriter) error {
	sw.buf = append(sw.buf, "data: [DONE]\n\n"...)
	return sw.commit(ChunkDone, 0)
}

func (e *generateEmitter) errorEvent(sw *streamWriter) error {
	sw.buf = append(sw.buf, `data: {"error":{"message":"simulated engine failure"}}`+"\n\n"...)
	if err := sw.commit(ChunkError, 0); err != nil {
		return err
	}
	return e.done(sw)
}

func (e *generateEmitter) malformed(sw *streamWriter, _ *gen) error {
	b := append(sw.buf, `data: {"text":"`...)
	b = append(b, e.text...)
	sw.buf = append(b, "\n\n"...)
	return sw.commit(ChunkMalformed, 0)
}

func (e *generateEmitter) body(g *gen, text []byte, ids []int) []byte {
	e.text = append(e.text[:0], text...)
	e.ids = e.ids[:0]
	for i, id := range ids {
		if i > 0 {
			e.ids = append(e.ids, ',')
		}
		e.ids = strconv.AppendInt(e.ids, int64(id), 10)
	}
	return e.appendEvent(nil, g, g.n, true)
}

// trtEmitter is Triton's generate_stream for a TensorRT-LLM ensemble: one
// event per chunk with the new text, no usage and no terminator.
type trtEmitter struct{ head []byte }

func newTRTEmitter(model string) *trtEmitter {
	b := append([]byte(nil), `{"model_name":`...)
	b = appendJSONString(b, model)
	b = append(b, `,"model_version":"1","sequence_end":false,"sequence_id":0,"sequence_start":false,"text_output":"`...)
	return &trtEmitter{head: b}
}

func (e *trtEmitter) begin(*streamWriter, *gen) error { return nil }

func (e *trtEmitter) tokens(sw *streamWriter, g *gen, k int, _ bool) error {
	b := append(sw.buf, "data: "...)
	b = append(b, e.head...)
	b, _ = drawTokens(g, k, b, nil)
	sw.buf = append(b, "\"}\n\n"...)
	return sw.commit(ChunkToken, k)
}

func (e *trtEmitter) usage(*streamWriter, *gen) error { return nil }
func (e *trtEmitter) done(*streamWriter) error        { return nil }

func (e *trtEmitter) errorEvent(sw *streamWriter) error {
	sw.buf = append(sw.buf, `data: {"error":"simulated engine failure"}`+"\n\n"...)
	return sw.commit(ChunkError, 0)
}

func (e *trtEmitter) malformed(sw *streamWriter, _ *gen) error {
	b := append(sw.buf, "data: "...)
	sw.buf = append(b, e.head[:len(e.head)/2]...)
	sw.buf = append(sw.buf, "\n\n"...)
	return sw.commit(ChunkMalformed, 0)
}

func (e *trtEmitter) body(_ *gen, text []byte, _ []int) []byte {
	b := append([]byte(nil), e.head...)
	b = append(b, text...)
	return append(b, `"}`...)
}
