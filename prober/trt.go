package prober

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/jsonscan"
)

// trtGenerateStream is Triton's generate_stream for the TensorRT-LLM
// ensemble (bench_serving's trt backend). Each event is one decoding step, and the
// stream has no terminal marker: a clean EOF ends it.
type trtGenerateStream struct{}

var _ Backend = trtGenerateStream{}

// trtEndID is an impossible end id: with min_length it forces exactly N
// tokens, since TensorRT-LLM has no ignore_eos.
const trtEndID = 1048576

func (trtGenerateStream) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	body := object{
		{"accumulate_tokens", true},
		{"text_input", p.Text},
		{"temperature", floatOr(o.Temperature, 0.000001)},
		{"top_p", floatOr(o.TopP, 1)},
		{"max_tokens", p.OutputLen},
		{"stream", true}, // the endpoint only streams
	}
	if o.IgnoreEOS {
		body = append(body, field{"min_length", p.OutputLen}, field{"end_id", trtEndID})
	}
	return newJSONRequest(o, pathTRT, body, p)
}

type trtChunk struct {
	errorField
	TextOutput     *string         `json:"text_output"`
	OutputLogProbs json.RawMessage `json:"output_log_probs"`
}

// Decode appends text_output as bench_serving does. A response holds one
// token, the generate_stream contract, except under speculative decoding
// (draft model, Medusa, EAGLE, lookahead), where one step accepts several:
// output_log_probs then has one entry per token of the response (shape
// [beam_width, tokens], flattened for one beam), and its length is the
// count. Without it, or with a scalar, the count is one.
func (b trtGenerateStream) Decode(ev SSEEvent) (Delta, error) {
	var d Delta
	err := b.decodeMemo(ev, nil, &d)
	return d, err
}

func (trtGenerateStream) decodeMemo(ev SSEEvent, m *scanMemo, d *Delta) (err error) {
	switch {
	case isDone(ev.Data):
		*d = Delta{Done: true}
	case !m.decode(ev.Data, scanTRTText, d):
		*d, err = decodeTRTJSON(ev.Data)
	}
	return err
}

// decodeTRTJSON is the reference decoder.
func decodeTRTJSON(data []byte) (Delta, error) {
	var c trtChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return Delta{}, fmt.Errorf("decode generate_stream event: %w", err)
	}
	if err := c.err(); err != nil {
		return Delta{}, err
	}
	if c.TextOutput == nil {
		return Delta{}, nil
	}
	return Delta{Text: []byte(*c.TextOutput), Tokens: trtTokens(c.OutputLogProbs)}, nil
}

// trtTokens is the number of tokens output_log_probs accounts for: its
// length, or the length of its first row when it holds one row per beam;
// one when it is absent, empty or a scalar.
func trtTokens(raw json.RawMessage) int {
	var rows []json.RawMessage
	if json.Unmarshal(raw, &rows) != nil || len(rows) == 0 {
		return 1
	}
	var beam []json.RawMessage
	if bytes.HasPrefix(rows[0], []byte("[")) && json.Unmarshal(rows[0], &beam) == nil {
		return max(len(beam), 1)
	}
	return len(rows)
}

// framing: generate_stream has no terminal marker.
func (trtGenerateStream) framing() Framing { return Framing{EOFEnds: true} }

// scanTRT is the allocation-free decoder of a generate_stream event;
// false means fall back to decodeTRTJSON (see scan.go).
func scanTRT(data []byte) (Delta, bool) {
	d, _, ok := scanTRTText(data)
	return d, ok
}

// scanTRTText is scanTRT, also returning text_output for scanMemo.
func scanTRTText(data []byte) (Delta, textPart, bool) {
	s := jsonscan.New(data)
	var (
		text   textPart
		m      jsonscan.Seen
		tokens int
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
		case "text_output":
			ok = m.Once(0) && s.Text(&text)
		case "output_log_probs":
			ok = m.Once(1) && logProbCount(&s, &tokens)
		case "model_name", "model_version", "sequence_end", "sequence_id", "sequence_start":
			ok = s.Skip()
		default:
			var handled bool
			if handled, ok = errorFields(&s, k, &m); !handled && ok {
				ok = !jsonscan.Folds(k, "text_output", "output_log_probs") && s.Skip()
			}
		}
		if !ok {
			return Delta{}, textPart{}, false
		}
	}
	s.Leave()
	if !s.End() {
		return Delta{}, textPart{}, false
	}
	if !text.Set {
		return Delta{}, text, true
	}
	return Delta{Text: text.Body, TextRaw: !text.Plain, Tokens: max(tokens, 1)}, text, true
}

// logProbCount counts the entries of a flat output_log_probs array into n;
// a scalar or null leaves n alone, and a nested array (one row per beam)
// falls back.
func logProbCount(s *jsonscan.Scanner, n *int) bool {
	if s.Peek() != '[' {
		return s.Skip()
	}
	if !s.Enter() {
		return false
	}
	for first := true; ; first = false {
		end, ok := s.Elem(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		if c := s.Peek(); c == '[' || c == '{' || !s.Skip() {
			return false
		}
		*n++
	}
	s.Leave()
	return true
}
