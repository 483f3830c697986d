package prober

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober/internal/jsonscan"
)

// sglangGenerate is sglang's native /generate (bench_serving's sglang backend). Its
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
		// CachedTokensDetails is the cache tiers' split, which sglang
		// sends when its hierarchical cache is on.
		CachedTokensDetails *cacheDetailsJSON `json:"cached_tokens_details"`
		// The timing fields (sglangTimes).
		E2ELatency          *float64 `json:"e2e_latency"`
		QueueTime           *float64 `json:"queue_time"`
		ForwardEntryTime    *float64 `json:"forward_entry_time"`
		PrefillFinishedTime *float64 `json:"prefill_finished_time"`
		RequestReceivedTS   *float64 `json:"request_received_ts"`
	} `json:"meta_info"`
}

// orNaN is *v, NaN when v is nil (sglangTimes' "not stated").
func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func (sglangGenerate) Decode(ev SSEEvent) (Delta, error) {
	if isDone(ev.Data) {
		return Delta{Done: true}, nil
	}
	d, ok := scanSGLang(ev.Data)
	if !ok {
		var err error
		if d, err = decodeSGLangJSON(ev.Data); err != nil {
			return Delta{}, err
		}
	}
	if err := finishError(&d); err != nil {
		return Delta{}, err
	}
	return d, nil
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
		fr, err := sglangFinishReason(m.FinishReason)
		if err != nil {
			return Delta{}, err
		}
		d.FinishReason = fr
		d.SpecAcceptLength = m.SpecAcceptLength
		d.CacheDetails = m.CachedTokensDetails.details(false)
		d.Server = sglangTimes{orNaN(m.E2ELatency), orNaN(m.QueueTime), orNaN(m.ForwardEntryTime),
			orNaN(m.PrefillFinishedTime), orNaN(m.RequestReceivedTS)}.server()
	}
	return d, nil
}

// sglangFinishReason reads null, "stop" or {"type":"length",...}. An abort
// ({"type":"abort","message":...,"status_code":503}) is the server's
// report that the request failed: sglang streams it as the last chunk,
// with the status it would have answered had the headers not been sent.
func sglangFinishReason(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var o struct {
		Type       string          `json:"type"`
		Message    string          `json:"message"`
		StatusCode json.RawMessage `json:"status_code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", nil
	}
	if o.Type == "abort" {
		msg := o.Message
		if msg == "" {
			msg = `finish_reason "abort"`
		}
		return "", &ServerError{Message: TruncateUTF8(msg, maxErrText), Status: statedStatus(o.StatusCode)}
	}
	return o.Type, nil
}

// scanSGLang is the allocation-free decoder of a /generate chunk; false
// means fall back to decodeSGLangJSON (see scan.go).
func scanSGLang(data []byte) (Delta, bool) {
	s := jsonscan.New(data)
	var (
		d    = Delta{Cumulative: true}
		text textPart
		m    jsonscan.Seen
	)
	if s.Peek() != '{' || !s.Enter() {
		return Delta{}, false
	}
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return Delta{}, false
		}
		if end {
			break
		}
		switch string(k) {
		case "text":
			ok = m.Once(0) && s.Text(&text)
		case "meta_info":
			ok = m.Once(1) && metaInfo(&s, &d)
		default:
			var handled bool
			if handled, ok = errorFields(&s, k, &m); !handled && ok {
				ok = !jsonscan.Folds(k, "text", "meta_info") && s.Skip()
			}
		}
		if !ok {
			return Delta{}, false
		}
	}
	s.Leave()
	if !s.End() || !setText(&d, text) {
		return Delta{}, false
	}
	return d, true
}

// metaInfo reads sglang's meta_info; finish_reason other than null or a
// plain string falls back.
func metaInfo(s *jsonscan.Scanner, d *Delta) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '{' || !s.Enter() {
		return false
	}
	var m jsonscan.Seen
	u := Usage{Source: TokenSourceMetaInfo}
	t := noSGLangTimes()
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "finish_reason":
			ok = m.Once(0) && finishField(s, &d.FinishReason)
		case "prompt_tokens":
			ok = m.Once(1) && s.Int(&u.PromptTokens)
		case "completion_tokens":
			ok = m.Once(2) && s.Int(&u.CompletionTokens)
		case "cached_tokens":
			ok = m.Once(3) && s.Int(&u.CachedTokens)
		case "spec_accept_length":
			ok = m.Once(4) && s.Float(&d.SpecAcceptLength)
		case "cached_tokens_details":
			ok = s.Null() // an object: decodeSGLangJSON reads it
		case "e2e_latency":
			ok = m.Once(5) && optFloat(s, &t.E2E)
		case "queue_time":
			ok = m.Once(6) && optFloat(s, &t.Queue)
		case "forward_entry_time":
			ok = m.Once(7) && optFloat(s, &t.ForwardEntry)
		case "prefill_finished_time":
			ok = m.Once(8) && optFloat(s, &t.PrefillFinished)
		case "request_received_ts":
			ok = m.Once(9) && optFloat(s, &t.Received)
		case "id", "weight_version":
			ok = s.Skip()
		default:
			ok = !jsonscan.Folds(k, "finish_reason", "prompt_tokens", "completion_tokens", "cached_tokens", "spec_accept_length",
				"cached_tokens_details", "e2e_latency", "queue_time", "forward_entry_time", "prefill_finished_time", "request_received_ts") && s.Skip()
		}
		if !ok {
			return false
		}
	}
	s.Leave()
	d.Usage = u
	d.Server = t.server()
	return true
}

// optFloat reads a number field that may be null: null leaves dst (as
// encoding/json leaves a nil *float64), a number sets it.
func optFloat(s *jsonscan.Scanner, dst *float64) bool {
	if s.Null() {
		return true
	}
	return s.Float(dst)
}
