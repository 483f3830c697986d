package prober

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/jsonscan"
)

// openAICompletions is /v1/completions (bench_serving's OpenAI completions backends): sglang-oai,
// vllm, lmdeploy and plain openai.
type openAICompletions struct {
	path string
}

var _ Backend = openAICompletions{}

func (openAICompletions) framing() Framing { return Framing{} } // server-sent events

// completionsBody is shared with truss, which sends the same body.
func completionsBody(o RequestOptions, p datasets.Prompt) object {
	body := object{
		{"model", modelFor(o, p)},
		{"prompt", p.Text},
		{"best_of", 1},
		{"max_tokens", p.OutputLen},
		{"stream", o.Stream},
		{"temperature", floatOr(o.Temperature, 0)},
		{"ignore_eos", o.IgnoreEOS},
	}
	if o.TopP != nil {
		body = append(body, field{"top_p", pyFloat(*o.TopP)})
	}
	if o.Stream && o.IncludeUsage {
		body = append(body, field{"stream_options", object{{"include_usage", true}}})
	}
	if p.LoRA != "" {
		body = append(body, field{"lora_path", p.LoRA})
	}
	if len(p.Images) > 0 {
		body = append(body, field{"image_data", p.Images}) // an sglang extension
	}
	return body
}

func (b openAICompletions) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	return newJSONRequest(o, b.path, append(completionsBody(o, p), openAIAnswerFields(o, false)...), p)
}

type completionsChunk struct {
	errorField
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usageJSON        `json:"usage"`
	SGLExt  *sglextJSON       `json:"sglext"`
	Metrics *vllmMetricsJSON  `json:"metrics"`
	Timings *llamaTimingsJSON `json:"timings"`
	NVExt   *dynamoNvextJSON  `json:"nvext"`
}

func (openAICompletions) Decode(ev SSEEvent) (Delta, error) {
	var d Delta
	err := decodeCompletions(ev, nil, &d)
	return d, err
}

func (openAICompletions) decodeMemo(ev SSEEvent, m *scanMemo, d *Delta) error {
	return decodeCompletions(ev, m, d)
}

// decodeCompletions takes the allocation-free scanner's answer when it has
// one, and encoding/json's otherwise (see jsonscan.go); m may be nil.
func decodeCompletions(ev SSEEvent, m *scanMemo, d *Delta) (err error) {
	switch {
	case isDone(ev.Data):
		*d = Delta{Done: true}
	case !m.decode(ev.Data, scanCompletionsText, d):
		*d, err = decodeCompletionsJSON(ev.Data)
	}
	if err == nil {
		err = finishError(d)
	}
	return err
}

// decodeCompletionsJSON is the reference decoder.
func decodeCompletionsJSON(data []byte) (Delta, error) {
	var c completionsChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return Delta{}, fmt.Errorf("decode completions chunk: %w", err)
	}
	if err := c.err(); err != nil {
		return Delta{}, err
	}
	// An empty choices list is a usage-only chunk, not an error
	// (sgl-project/sglang#5451).
	d := Delta{Usage: c.Usage.usage(), CacheDetails: c.SGLExt.details(), Server: serverTimings(c.Metrics, c.Timings, c.NVExt)}
	if len(c.Choices) > 0 {
		d.Text = []byte(c.Choices[0].Text)
		if fr := c.Choices[0].FinishReason; fr != nil {
			d.FinishReason = *fr
		}
	}
	return d, nil
}

// scanCompletions is the allocation-free decoder of a completions chunk
// (completions, truss); false means fall back to decodeCompletionsJSON
// (see scan.go).
func scanCompletions(data []byte) (Delta, bool) {
	d, _, ok := scanCompletionsText(data)
	return d, ok
}

// scanCompletionsText is scanCompletions, also returning the text part of
// the first choice for scanMemo. Its envelope loop is scanChatText's with
// another choice reader, written twice on purpose: shared through a
// function value (or a type parameter), the reader's call is indirect,
// the scanner escapes to the heap and every event allocates
// (TestDecodeZeroAllocs fails).
func scanCompletionsText(data []byte) (Delta, textPart, bool) {
	s := jsonscan.New(data)
	var (
		d    Delta
		text textPart
		m    jsonscan.Seen
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
				var t textPart
				var fr string
				if !completionChoice(&s, &t, &fr) {
					return false
				}
				if i == 0 {
					text, d.FinishReason = t, fr
				}
				return true
			})
		case "usage":
			ok = m.Once(1) && usageField(&s, &d.Usage)
		case "nvext":
			ok = m.Once(2) && scanNvext(&s, &d.Server)
		case "sglext", "metrics", "timings":
			ok = s.Null() // an object: decodeCompletionsJSON reads it
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
	if !s.End() || !setText(&d, text) {
		return Delta{}, textPart{}, false
	}
	return d, text, true
}

// completionChoice reads {"text": ..., "finish_reason": ...}; null is an
// empty choice.
func completionChoice(s *jsonscan.Scanner, text *textPart, fr *string) bool {
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
		case "text":
			// A string field: null leaves it empty.
			ok = m.Once(0) && s.Text(text)
		case "finish_reason":
			ok = m.Once(1) && finishField(s, fr)
		case "index", "logprobs", "stop_reason", "matched_stop":
			ok = s.Skip()
		default:
			ok = !jsonscan.Folds(k, "text", "finish_reason") && s.Skip()
		}
		if !ok {
			return false
		}
	}
	s.Leave()
	return true
}
