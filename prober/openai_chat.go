package prober

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
)

// openAIChat is /v1/chat/completions (bench_serving §1.3): sglang-oai-chat,
// vllm-chat, lmdeploy-chat and plain openai-chat.
type openAIChat struct{}

var _ Backend = openAIChat{}

type chatImageURL struct {
	URL string `json:"url"`
}

type chatPart struct {
	Type     string        `json:"type"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
	Text     *string       `json:"text,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // a string, or parts when there are images
}

// chatContent puts images first, then the text, as bench_serving does.
func chatContent(text string, images []string) any {
	if len(images) == 0 {
		return text
	}
	parts := make([]chatPart, 0, len(images)+1)
	for _, u := range images {
		parts = append(parts, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: u}})
	}
	parts = append(parts, chatPart{Type: "text", Text: &text})
	return parts
}

// chatMessages sends Prompt.Messages (multi-turn) as they are, with any
// images attached to the last user turn; otherwise one user message.
func chatMessages(p datasets.Prompt) []chatMessage {
	if len(p.Messages) == 0 {
		return []chatMessage{{Role: "user", Content: chatContent(p.Text, p.Images)}}
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
			out[i].Content = chatContent(m.Content, p.Images)
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
	return newJSONRequest(o, pathChat, body, p)
}

type chatDelta struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"` // vLLM's newer name
	ToolCalls        []struct {
		Function struct {
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
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
	Usage *usageJSON `json:"usage"`
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
	d := Delta{Usage: c.Usage.usage()}
	if len(c.Choices) > 0 {
		ch := c.Choices[0]
		d.Text = []byte(ch.Delta.text() + ch.Message.text())
		if ch.FinishReason != nil {
			d.FinishReason = *ch.FinishReason
		}
	}
	return d, nil
}
