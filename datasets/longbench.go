package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// longBenchV2DefaultOutputLen is sglang's output length for LongBench-v2
// when --sharegpt-output-len is unset: the answer letter and a short
// explanation.
const longBenchV2DefaultOutputLen = 10

// longBenchV2 is "longbench-v2" (sglang's longbench_v2): THUDM/LongBench-v2
// rows ({context, question, choice_A..choice_D}) from a local JSON-lines
// file, each turned into a multiple-choice prompt. sglang downloads the
// set from the hub when --dataset-path is empty and also reads parquet;
// here the path is required and JSON lines are read (export the parquet
// with pandas' to_json(orient="records", lines=True)).
type longBenchV2 struct {
	opts     Options
	tok      Tokenizer
	examples []longBenchRow
}

type longBenchRow struct {
	Context  string `json:"context"`
	Question string `json:"question"`
	ChoiceA  string `json:"choice_A"`
	ChoiceB  string `json:"choice_B"`
	ChoiceC  string `json:"choice_C"`
	ChoiceD  string `json:"choice_D"`
}

func (e longBenchRow) prompt() string {
	return e.Context + "\n\nQuestion: " + e.Question +
		"\nA. " + e.ChoiceA + "\nB. " + e.ChoiceB + "\nC. " + e.ChoiceC + "\nD. " + e.ChoiceD + "\nAnswer:"
}

func newLongBenchV2(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("longbench-v2: a dataset path is required (the hub download is not supported; pass the LongBench-v2 rows as JSON lines)")
	}
	if strings.HasSuffix(opts.DatasetPath, ".parquet") {
		return nil, fmt.Errorf("longbench-v2 %s: parquet is not read here; convert it to JSON lines", opts.DatasetPath)
	}
	d := &longBenchV2{opts: opts, tok: tok}
	err := readJSONL("longbench-v2", opts.DatasetPath, func(line []byte) error {
		var e longBenchRow
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		d.examples = append(d.examples, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Generate shuffles the examples and keeps the first n whose prompt plus
// output fit --sharegpt-context-len (when set), as sglang does; the
// prompt is counted as tokenizer(prompt) counts it, special tokens
// included. n <= 0 means every example.
func (d *longBenchV2) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	outLen := longBenchV2DefaultOutputLen
	if d.opts.SharegptOutputLen > 0 {
		outLen = d.opts.SharegptOutputLen
	}
	if n <= 0 {
		n = len(d.examples)
	}
	var out []Prompt
	for _, i := range r.Perm(len(d.examples)) {
		if len(out) >= n {
			break
		}
		text := d.examples[i].prompt()
		ids, err := d.tok.Encode(text, true)
		if err != nil {
			return nil, fmt.Errorf("longbench-v2: encode: %w", err)
		}
		if d.opts.SharegptContextLen > 0 && len(ids)+outLen > d.opts.SharegptContextLen {
			continue
		}
		out = append(out, Prompt{Text: text, PromptLen: len(ids), TextPromptLen: len(ids), OutputLen: outLen})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("longbench-v2 %s: every example was filtered out", d.opts.DatasetPath)
	}
	return out, nil
}
