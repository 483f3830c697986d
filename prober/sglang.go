package prober

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
)

// sglangGenerate is sglang's native /generate (bench_serving §1.1). Its
// stream carries the CUMULATIVE text and meta_info with cumulative token
// counts on every chunk, so per-event token counts are exact.
type sglangGenerate struct{}

var _ Backend = sglangGenerate{}

func (sglangGenerate) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	var body object
	if len(p.IDs) > 0 {
		body = append(body, field{"input_ids", p.IDs})
	} else {
		body = append(body, field{"text", p.Text})
	}
	sp := object{
		{"temperature", floatOr(o.Temperature, 0)},
		{"max_new_tokens", p.OutputLen},
		{"ignore_eos", o.IgnoreEOS},
	}
	if o.TopP != nil && *o.TopP < 1 {
		sp = append(sp, field{"top_p", pyFloat(*o.TopP)})
	}
	var lora any // null, as bench_serving sends it
	if p.LoRA != "" {
		lora = p.LoRA
	}
	body = append(body,
		field{"sampling_params", sp},
		field{"stream", o.Stream},
		field{"lora_path", lora},
		field{"return_logprob", false},
		field{"logprob_start_len", -1},
	)
	if len(p.Images) > 0 {
		body = append(body, field{"image_data", p.Images})
	}
	return newJSONRequest(o, pathGenerate, body, p)
}

type sglangChunk struct {
	errorField
	Text     *string `json:"text"`
	MetaInfo *struct {
		FinishReason     json.RawMessage `json:"finish_reason"`
		PromptTokens     int             `json:"prompt_tokens"`
		CompletionTokens int             `json:"completion_tokens"`
		CachedTokens     int             `json:"cached_tokens"`
		SpecAcceptLength float64         `json:"spec_accept_length"`
	} `json:"meta_info"`
}

func (sglangGenerate) Decode(ev SSEEvent) (Delta, error) {
	if isDone(ev.Data) {
		return Delta{Done: true}, nil
	}
	if d, ok := scanSGLang(ev.Data); ok {
		return d, nil
	}
	return decodeSGLangJSON(ev.Data)
}

// decodeSGLangJSON is the reference decoder.
func decodeSGLangJSON(data []byte) (Delta, error) {
	var c sglangChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return Delta{}, fmt.Errorf("decode /generate chunk: %w", err)
	}
	if err := c.err(); err != nil {
		return Delta{}, err
	}
	d := Delta{Cumulative: true}
	if c.Text != nil {
		d.Text = []byte(*c.Text)
	}
	if m := c.MetaInfo; m != nil {
		d.Usage = Usage{
			PromptTokens:     m.PromptTokens,
			CompletionTokens: m.CompletionTokens,
			CachedTokens:     m.CachedTokens,
			Source:           TokenSourceMetaInfo,
		}
		d.FinishReason = sglangFinishReason(m.FinishReason)
		d.SpecAcceptLength = m.SpecAcceptLength
	}
	return d, nil
}

// sglangFinishReason reads null, "stop" or {"type":"length",...}.
func sglangFinishReason(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Type
	}
	return ""
}
