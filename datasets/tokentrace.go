package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// tokenTraceRecord is one line of sglang's token-trace JSONL
// (python/sglang/benchmark/datasets/token_trace.py): the prompt's token
// ids, the output as ids or a count, and an optional timestamp.
type tokenTraceRecord struct {
	InputTokens     []int    `json:"input_tokens"`
	NumInputTokens  *int     `json:"num_input_tokens"`
	OutputTokens    []int    `json:"output_tokens"`
	NumOutputTokens *int     `json:"num_output_tokens"`
	TS              *float64 `json:"ts"` // milliseconds, as sglang's trace replay reads every timestamp
}

// tokenTraceDataset is sglang's "token-trace": each row's input_tokens
// are sent as they are (input_ids), in file order, unshuffled.
type tokenTraceDataset struct {
	prompts []Prompt
}

// newTokenTrace reads the trace as sglang's sample_token_trace_requests
// does: a row without input tokens, or whose input or output length is
// below 1, is skipped; the prompt length is num_input_tokens when given
// (else the ids' count); the output length is --sharegpt-output-len when
// set, else num_output_tokens, else the output ids' count. sglang skips
// a line that is not JSON; here it is an error naming the line, so that a
// damaged trace is not replayed short without a word.
func newTokenTrace(opts Options, _ Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("token-trace: a trace path is required (--dataset-path)")
	}
	if !(opts.MooncakeSlowdownFactor > 0) || math.IsInf(opts.MooncakeSlowdownFactor, 0) {
		return nil, fmt.Errorf("token-trace: slowdown factor must be a finite number > 0, got %v", opts.MooncakeSlowdownFactor)
	}
	d := &tokenTraceDataset{}
	var first *float64
	err := readJSONL("token-trace", opts.DatasetPath, func(line []byte) error {
		var rec tokenTraceRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		if len(rec.InputTokens) == 0 {
			return nil
		}
		promptLen := len(rec.InputTokens)
		if rec.NumInputTokens != nil {
			promptLen = *rec.NumInputTokens
		}
		outLen := len(rec.OutputTokens)
		switch {
		case opts.SharegptOutputLen > 0:
			outLen = opts.SharegptOutputLen
		case rec.NumOutputTokens != nil:
			outLen = *rec.NumOutputTokens
		}
		if promptLen < 1 || outLen < 1 {
			return nil
		}
		p := Prompt{IDs: rec.InputTokens, PromptLen: promptLen, TextPromptLen: promptLen, OutputLen: outLen}
		if rec.TS != nil {
			if math.IsNaN(*rec.TS) || math.IsInf(*rec.TS, 0) {
				return fmt.Errorf("ts %v is not a finite number", *rec.TS)
			}
			if first == nil {
				first = rec.TS
			}
			// The offset from the first row's time, stretched by the
			// slowdown factor as sglang's replay stretches it; rows are
			// sorted by it where the run replays the trace.
			ms := (*rec.TS - *first) * opts.MooncakeSlowdownFactor
			p.Timestamp = time.Duration(math.Round(ms * float64(time.Millisecond)))
		}
		d.prompts = append(d.prompts, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(d.prompts) == 0 {
		return nil, fmt.Errorf("token-trace %s: no row has input tokens and input and output lengths of at least 1", opts.DatasetPath)
	}
	return d, nil
}

// Generate returns the first n rows (all if n <= 0) in file order; r is
// not used.
func (d *tokenTraceDataset) Generate(n int, _ *rand.Rand) ([]Prompt, error) {
	ps := d.prompts
	if n > 0 && n < len(ps) {
		ps = ps[:n]
	}
	return append([]Prompt(nil), ps...), nil
}
