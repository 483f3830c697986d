package prober

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/jsonscan"
)

// openAIChat is /v1/chat/completions (bench_serving's openai-chat backends): sglang-oai-chat,
// vllm-chat, lmdeploy-chat and plain openai-chat.
type openAIChat struct{}

var _ Backend = openAIChat{}

func (openAIChat) framing() Framing { return Framing{} } // server-sent events

type chatImageURL struct {
	URL string `json:"url"`
}

// chatInputAudio is an input_audio part's audio: base64 data and its
// format, as sglang's audio dataset sends it.
type chatInputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type chatPart struct {
	Type       string          `json:"type"`
	ImageURL   *chatImageURL   `json:"image_url,omitempty"`
	InputAudio *chatInputAudio `json:"input_audio,omitempty"`
	Text       *string         `json:"text,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // a string, or parts when there are images
}

// chatContent puts images first, then audio clips (base64 WAV), then the
// text, as bench_serving does. Audio that is set but empty still makes
// parts: sglang's audio dataset sends its text as a part with no clip.
func chatContent(text string, images, audio []string) any {
	if len(images) == 0 && audio == nil {
		return text
	}
	parts := make([]chatPart, 0, len(images)+len(audio)+1)
	for _, u := range images {
		parts = append(parts, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: u}})
	}
	for _, a := range audio {
		parts = append(parts, chatPart{Type: "input_audio", InputAudio: &chatInputAudio{Data: a, Format: "wav"}})
	}
	parts = append(parts, chatPart{Type: "text", Text: &text})
	return parts
}

// chatMessages sends Prompt.Messages (multi-turn) as they are, with any
// images attached to the last user turn; otherwise one user message.
func chatMessages(p datasets.Prompt) []chatMessage {
	if len(p.Messages) == 0 {
		return []chatMessage{{Role: "user", Content: chatContent(p.Text, p.Images, p.Audio)}}
	}
	last := -1
	for i, m := range p.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	out := make([]chatMessage, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = chatMessage{Role: m.Role, Content: m.Content}
		if i == last {
			out[i].Content = chatContent(m.Content, p.Images, p.Audio)
		}
	}
	return out
}

func (openAIChat) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	body := object{
		{"model", modelFor(o, p)},
		{"messages", chatMessages(p)},
		{"max_completion_tokens", p.OutputLen},
	}
	if !o.CompatChatLength {
		body = append(body, field{"max_tokens", p.OutputLen})
	}
	body = append(body,
		field{"stream", o.Stream},
		field{"temperature", floatOr(o.Temperature, 0)},
		field{"ignore_eos", o.IgnoreEOS},
	)
	if o.TopP != nil {
		body = append(body, field{"top_p", pyFloat(*o.TopP)})
	}
	if o.Stream && o.IncludeUsage {
		body = append(body, field{"stream_options", object{{"include_usage", true}}})
	}
	if p.LoRA != "" {
		body = append(body, field{"lora_path", p.LoRA})
	}
	body = append(body, openAIAnswerFields(o, true)...)
	return newJSONRequest(o, pathChat, body, p)
}

type chatDelta struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"` // vLLM's newer name
	ToolCalls        []struct {
		Index    *int   `json:"index"` // streamed deltas carry it; a whole message's calls need not
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// answer returns the delta's content and its tool-call fragments.
func (d *chatDelta) answer() (string, []ToolCallDelta) {
	if d == nil {
		return "", nil
	}
	var content string
	if d.Content != nil {
		content = *d.Content
	}
	var calls []ToolCallDelta
	for _, tc := range d.ToolCalls {
		i := -1
		if tc.Index != nil {
			i = *tc.Index
		}
		calls = append(calls, ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return content, calls
}

// reasoningOnly reports whether the delta carries reasoning and nothing
// of the answer (content or tool-call arguments).
func (d *chatDelta) reasoningOnly() bool {
	if d == nil {
		return false
	}
	for _, tc := range d.ToolCalls {
		if tc.Function.Arguments != "" {
			return false
		}
	}
	return (d.Content == nil || *d.Content == "") &&
		((d.ReasoningContent != nil && *d.ReasoningContent != "") || (d.Reasoning != nil && *d.Reasoning != ""))
}

func (d *chatDelta) text() string {
	if d == nil {
		return ""
	}
	var s string
	for _, p := range []*string{d.ReasoningContent, d.Reasoning, d.Content} {
		if p != nil {
			s += *p
		}
	}
	for _, tc := range d.ToolCalls {
		s += tc.Function.Arguments
	}
	return s
}

type chatChunk struct {
	errorField
	Choices []struct {
		Delta        *chatDelta `json:"delta"`
		Message      *chatDelta `json:"message"` // non-streaming responses
		FinishReason *string    `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usageJSON        `json:"usage"`
	SGLExt  *sglextJSON       `json:"sglext"`
	Metrics *vllmMetricsJSON  `json:"metrics"`
	Timings *llamaTimingsJSON `json:"timings"`
	NVExt   *dynamoNvextJSON  `json:"nvext"`
}

// Decode counts reasoning, tool-call arguments and content as output, as
// the newest bench_serving does: TTFT is the first generated token, not the
// first answer token.
func (b openAIChat) Decode(ev SSEEvent) (Delta, error) {
	var d Delta
	err := b.decodeMemo(ev, nil, &d)
	return d, err
}

func (openAIChat) decodeMemo(ev SSEEvent, m *scanMemo, d *Delta) (err error) {
	switch {
	case isDone(ev.Data):
		*d = Delta{Done: true}
	case !m.decode(ev.Data, scanChatText, d):
		*d, err = decodeChatJSON(ev.Data)
	}
	if err == nil {
		err = finishError(d)
	}
	return err
}

// decodeChatJSON is the reference decoder.
func decodeChatJSON(data []byte) (Delta, error) {
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return Delta{}, fmt.Errorf("decode chat chunk: %w", err)
	}
	if err := c.err(); err != nil {
		return Delta{}, err
	}
	d := Delta{Usage: c.Usage.usage(), CacheDetails: c.SGLExt.details(), Server: serverTimings(c.Metrics, c.Timings, c.NVExt)}
	if len(c.Choices) > 0 {
		ch := c.Choices[0]
		d.Text = []byte(ch.Delta.text() + ch.Message.text())
		d.Reasoning = (ch.Delta.reasoningOnly() || ch.Message.reasoningOnly()) &&
			!(ch.Delta.text() != "" && !ch.Delta.reasoningOnly()) && !(ch.Message.text() != "" && !ch.Message.reasoningOnly())
		if ch.FinishReason != nil {
			d.FinishReason = *ch.FinishReason
		}
		// An event that mixes parts says which is the answer (the fast
		// scanner reads only events of one part, where Reasoning says it).
		content, calls := ch.Delta.answer()
		mcontent, mcalls := ch.Message.answer()
		if d.ToolCalls = append(calls, mcalls...); len(d.ToolCalls) > 0 || (content+mcontent != string(d.Text) && !d.Reasoning) {
			d.Answer, d.AnswerSet = content+mcontent, true
		}
	}
	return d, nil
}

// scanChat is the allocation-free decoder of a chat chunk; false means
// fall back to decodeChatJSON (see scan.go).
func scanChat(data []byte) (Delta, bool) {
	d, _, ok := scanChatText(data)
	return d, ok
}

// scanChatText is scanChat, also returning for scanMemo the text part of
// the first choice that is set when every other part is empty (the Delta's
// text then depends on that part alone); otherwise an unset part.
func scanChatText(data []byte) (Delta, textPart, bool) {
	s := jsonscan.New(data)
	var (
		d     Delta
		parts [6]textPart // delta's reasoning_content, reasoning, content; then message's
		m     jsonscan.Seen
	)
	if s.Peek() != '{' || !s.Enter() {
		return Delta{}, textPart{}, false
	}
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return Delta{}, textPart{}, false
		}
		if end {
			break
		}
		switch string(k) {
		case "choices":
			ok = m.Once(0) && s.Array(func(i int) bool {
				var p [6]textPart
				var fr string
				if !chatChoice(&s, &p, &fr) {
					return false
				}
				if i == 0 {
					parts, d.FinishReason = p, fr
				}
				return true
			})
		case "usage":
			ok = m.Once(1) && usageField(&s, &d.Usage)
		case "nvext":
			ok = m.Once(2) && scanNvext(&s, &d.Server)
		case "sglext", "metrics", "timings":
			ok = s.Null() // an object: decodeChatJSON reads it
		case "id", "created", "model", "system_fingerprint":
			ok = s.Skip()
		default:
			var handled bool
			if handled, ok = errorFields(&s, k, &m); !handled && ok {
				ok = !jsonscan.Folds(k, "choices", "usage", "sglext", "metrics", "timings", "nvext") && s.Skip()
			}
		}
		if !ok {
			return Delta{}, textPart{}, false
		}
	}
	s.Leave()
	if !s.End() || !setText(&d, parts[:]...) {
		return Delta{}, textPart{}, false
	}
	// The part the text comes from says whether it is reasoning; the memo
	// keeps the flag with that part, so it must follow the part, not the
	// text (an empty reasoning_content memoised is reasoning when it fills).
	var memo textPart
	for i, p := range parts {
		switch {
		case len(p.Body) > 0:
			d.Reasoning = chatReasoningPart(i)
			return d, p, true // setText saw no other non-empty part
		case p.Set:
			memo, d.Reasoning = p, chatReasoningPart(i)
		}
	}
	return d, memo, true
}

// chatReasoningPart reports whether scanChatText's part i is a reasoning
// field (reasoning_content or reasoning, of the delta or the message).
func chatReasoningPart(i int) bool { return i%3 != 2 }

// chatChoice reads {"delta": {...}, "message": {...}, "finish_reason": ...}.
func chatChoice(s *jsonscan.Scanner, parts *[6]textPart, fr *string) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '{' || !s.Enter() {
		return false
	}
	var m jsonscan.Seen
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "delta":
			ok = m.Once(0) && chatDeltaParts(s, (*[3]textPart)(parts[0:3]))
		case "message":
			ok = m.Once(1) && chatDeltaParts(s, (*[3]textPart)(parts[3:6]))
		case "finish_reason":
			ok = m.Once(2) && finishField(s, fr)
		case "index", "logprobs", "stop_reason", "matched_stop":
			ok = s.Skip()
		default:
			ok = !jsonscan.Folds(k, "delta", "message", "finish_reason") && s.Skip()
		}
		if !ok {
			return false
		}
	}
	s.Leave()
	return true
}

// chatDeltaParts reads reasoning_content, reasoning and content; tool
// calls other than null or [] fall back.
func chatDeltaParts(s *jsonscan.Scanner, p *[3]textPart) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '{' || !s.Enter() {
		return false
	}
	var m jsonscan.Seen
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "reasoning_content":
			ok = m.Once(0) && s.Text(&p[0])
		case "reasoning":
			ok = m.Once(1) && s.Text(&p[1])
		case "content":
			ok = m.Once(2) && s.Text(&p[2])
		case "tool_calls":
			ok = m.Once(3) && s.EmptyArray()
		case "role":
			ok = s.Skip()
		default:
			ok = !jsonscan.Folds(k, "reasoning_content", "reasoning", "content", "tool_calls") && s.Skip()
		}
		if !ok {
			return false
		}
	}
	s.Leave()
	return true
}
