package prober

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/jsonscan"
)

// sglangGenerate is sglang's native /generate (bench_serving's sglang backend). Its
// stream carries the CUMULATIVE text and meta_info with cumulative token
// counts on every chunk, so per-event token counts are exact.
type sglangGenerate struct{}

var _ Backend = sglangGenerate{}

func (sglangGenerate) framing() Framing { return Framing{} } // server-sent events

func (b sglangGenerate) decodeMemo(ev SSEEvent, _ *scanMemo, d *Delta) error {
	return d.set(b.Decode(ev))
}

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
	if js := sglangJSONSchema(o.ResponseFormat); js != "" {
		sp = append(sp, field{"json_schema", js})
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
		// The timing fields (sglangTimes), kept as written: they are
		// read only on the chunk with the finish reason (sglangRawTimes).
		E2ELatency          timingNumber `json:"e2e_latency"`
		QueueTime           timingNumber `json:"queue_time"`
		ForwardEntryTime    timingNumber `json:"forward_entry_time"`
		PrefillFinishedTime timingNumber `json:"prefill_finished_time"`
		RequestReceivedTS   timingNumber `json:"request_received_ts"`
	} `json:"meta_info"`
}

// sglangRawTimes are sglangTimes' fields as the chunk wrote them (nil: null
// or absent), in sglangTimes' order. sglang repeats its scheduler's
// timing on every chunk and adds the rest on the last one, the one with
// the finish reason: only that chunk's are converted, so that the chunks
// before it cost no number parsing. A number that does not fit a float64
// is not a timing (left unstated).
type sglangRawTimes [5][]byte

func (r *sglangRawTimes) times() sglangTimes {
	var f [5]float64
	for i, b := range r {
		f[i] = math.NaN()
		if b != nil {
			if v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64); err == nil {
				f[i] = v
			}
		}
	}
	return sglangTimes{f[0], f[1], f[2], f[3], f[4]}
}

// timingNumber is a timing field as written, nil for null, absent or
// anything but a number: a timing is only displayed and exported, so a
// server that writes "n/a" there loses that timing, not its request.
type timingNumber []byte

func (n *timingNumber) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
		*n = append((*n)[:0], b...) // b is not ours to keep
	}
	return nil
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
		if fr != "" {
			raw := sglangRawTimes{m.E2ELatency, m.QueueTime, m.ForwardEntryTime, m.PrefillFinishedTime, m.RequestReceivedTS}
			d.Server = raw.times().server()
		}
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
	var raw sglangRawTimes
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
			ok = m.Once(5) && rawNumber(s, &raw[0])
		case "queue_time":
			ok = m.Once(6) && rawNumber(s, &raw[1])
		case "forward_entry_time":
			ok = m.Once(7) && rawNumber(s, &raw[2])
		case "prefill_finished_time":
			ok = m.Once(8) && rawNumber(s, &raw[3])
		case "request_received_ts":
			ok = m.Once(9) && rawNumber(s, &raw[4])
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
	if d.FinishReason != "" {
		d.Server = raw.times().server()
	}
	return true
}

// rawNumber reads a number field that may be null, as written: null leaves
// dst (as encoding/json leaves a json.Number ""); anything else but a
// number falls back.
func rawNumber(s *jsonscan.Scanner, dst *[]byte) bool {
	if s.Null() {
		return true
	}
	if c := s.Peek(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	b, _, ok := s.Num()
	*dst = b
	return ok
}
