package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
)

// speedBench is "speed-bench": NVIDIA SPEED-Bench's prepared JSONL (rows
// of {"category": ..., "turns": [first user turn, ...]}), read as sglang
// does: rows of --speed-bench-category only if it is set, the first turn
// as the prompt, rendered with the chat template when there is one, and a
// fixed output length (--speed-bench-output-len).
type speedBench struct {
	rows []Prompt
}

type speedBenchRow struct {
	Category string   `json:"category"`
	Turns    []string `json:"turns"`
}

func newSpeedBench(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("speed-bench: --dataset-path must point to the SPEED-Bench JSONL file (prepare_speed_bench.sh writes it)")
	}
	if opts.SpeedBenchOutputLen < 1 {
		return nil, fmt.Errorf("speed-bench: output len must be at least 1, got %d", opts.SpeedBenchOutputLen)
	}
	d := &speedBench{}
	err := readJSONL("speed-bench", opts.DatasetPath, func(line []byte) error {
		var row speedBenchRow
		if err := json.Unmarshal(line, &row); err != nil {
			return err
		}
		if opts.SpeedBenchCategory != "" && row.Category != opts.SpeedBenchCategory {
			return nil
		}
		if len(row.Turns) == 0 {
			return nil
		}
		p, err := speedBenchPrompt(opts, tok, row.Turns[0])
		if err != nil {
			return err
		}
		d.rows = append(d.rows, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(d.rows) == 0 {
		msg := "speed-bench: no rows found in " + opts.DatasetPath
		if opts.SpeedBenchCategory != "" {
			msg += " for category=" + opts.SpeedBenchCategory
		}
		return nil, errors.New(msg)
	}
	return d, nil
}

// speedBenchPrompt renders the turn as sglang does: the chat template
// with a generation prompt, counted without added special tokens (HF's
// apply_chat_template(tokenize=True)); without a template, the raw turn
// counted with them (tokenizer.encode).
func speedBenchPrompt(opts Options, tok Tokenizer, turn string) (Prompt, error) {
	p := Prompt{Text: turn, OutputLen: opts.SpeedBenchOutputLen}
	special := true
	if opts.ChatTemplate != nil {
		s, err := opts.ChatTemplate.ApplyChatTemplate([]Message{{Role: "user", Content: turn}}, true)
		if err != nil {
			return p, fmt.Errorf("apply chat template: %w", err)
		}
		p.Text, special = s, false
	}
	ids, err := tok.Encode(p.Text, special)
	if err != nil {
		return p, fmt.Errorf("encode: %w", err)
	}
	p.PromptLen, p.TextPromptLen = len(ids), len(ids)
	return p, nil
}

// Generate samples n rows without replacement when there are enough (a
// random subset in random order, as random.sample), else repeats the rows
// in file order to n and shuffles them. n <= 0 means every row once.
func (d *speedBench) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	if n <= 0 {
		n = len(d.rows)
	}
	out := make([]Prompt, 0, n)
	if n <= len(d.rows) {
		for _, i := range r.Perm(len(d.rows))[:n] {
			out = append(out, d.rows[i])
		}
		return out, nil
	}
	for len(out) < n {
		out = append(out, d.rows[:min(len(d.rows), n-len(out))]...)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}
