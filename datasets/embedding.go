package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
)

// embedding is "embedding": OpenAI-style embedding requests from a local
// JSONL file, one request per row, read as sglang's EmbeddingDataset
// (python/sglang/benchmark/datasets/embedding.py, sample_embedding_requests):
//
//   - a row is a JSON object whose "input" is a non-blank string or a
//     non-empty list of non-blank strings; a list is one request that
//     carries the whole batch, sent as the list (Prompt.Inputs);
//   - every other key of the row goes into the request body as is
//     (Prompt.ExtraBody: encoding_format, dimensions, even model), over
//     --extra-request-body's, as bench_serving merges a row's extra body;
//   - the prompt length is the inputs' token counts added up, each input
//     counted as tokenizer.encode counts it (special tokens included);
//   - rows are taken in file order, never shuffled, up to --num-prompts;
//     a file with fewer rows gives fewer requests (the run logs the count).
//
// Where sglang silently skips a row it cannot use (a line that is not
// JSON, not an object, or whose input is missing, blank or not strings),
// this reader refuses the file and names the line, so that a typo never
// changes which rows run.
type embedding struct {
	rows []Prompt
}

type embeddingRow struct {
	text   string   // a single-string input
	inputs []string // a list input, sent as a list even with one item
	extra  map[string]any
}

func newEmbedding(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("embedding: --dataset-path must point to a JSONL file of embedding requests ({\"input\": \"text\"} or {\"input\": [\"text\", ...]} per line)")
	}
	d := &embedding{}
	err := readJSONL("embedding", opts.DatasetPath, func(line []byte) error {
		row, err := parseEmbeddingRow(line)
		if err != nil {
			return err
		}
		p, err := row.prompt(tok)
		if err != nil {
			return err
		}
		d.rows = append(d.rows, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// parseEmbeddingRow reads one line. Numbers in the extra keys stay as
// written (json.Number), so that the body carries them unchanged.
func parseEmbeddingRow(line []byte) (embeddingRow, error) {
	var row embeddingRow
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return row, err
	}
	if dec.More() {
		return row, errors.New("data after the JSON object")
	}
	if obj == nil {
		return row, errors.New("row is not a JSON object")
	}
	raw, ok := obj["input"]
	if !ok {
		return row, errors.New(`no "input" key`)
	}
	var input any
	if err := json.Unmarshal(raw, &input); err != nil {
		return row, fmt.Errorf("input: %w", err)
	}
	switch v := input.(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			return row, errors.New("input: blank string")
		}
		row.text = v
	case []any:
		if len(v) == 0 {
			return row, errors.New("input: empty list")
		}
		row.inputs = make([]string, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return row, fmt.Errorf("input[%d]: want a string, got %s (token-id inputs are not read, as in sglang's embedding dataset)", i, jsonKind(x))
			}
			if strings.TrimSpace(s) == "" {
				return row, fmt.Errorf("input[%d]: blank string", i)
			}
			row.inputs[i] = s
		}
	default:
		return row, fmt.Errorf("input: want a string or a list of strings, got %s", jsonKind(input))
	}
	for k, v := range obj {
		if k == "input" {
			continue
		}
		var x any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			return row, fmt.Errorf("%s: %w", k, err)
		}
		if row.extra == nil {
			row.extra = map[string]any{}
		}
		row.extra[k] = x
	}
	return row, nil
}

// jsonKind names a decoded JSON value's type for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	default:
		return "an object"
	}
}

// Generate returns the first n rows in file order (every row when n <= 0
// or the file has fewer), as sglang stops reading at --num-prompts. r is
// not used: sglang does not shuffle this dataset.
func (d *embedding) Generate(n int, _ *rand.Rand) ([]Prompt, error) {
	if n <= 0 || n > len(d.rows) {
		n = len(d.rows)
	}
	out := make([]Prompt, n)
	for i, p := range d.rows[:n] {
		p.ExtraBody = maps.Clone(p.ExtraBody) // callers may merge into it
		out[i] = p
	}
	return out, nil
}

// prompt is the row's request. Its length is the sum of the inputs' token
// counts, each with the special tokens tokenizer.encode adds.
func (row embeddingRow) prompt(tok Tokenizer) (Prompt, error) {
	p := Prompt{Text: row.text, Inputs: row.inputs, ExtraBody: row.extra}
	texts := row.inputs
	if texts == nil {
		texts = []string{row.text}
	}
	for _, t := range texts {
		ids, err := tok.Encode(t, true)
		if err != nil {
			return p, fmt.Errorf("encode: %w", err)
		}
		p.PromptLen += len(ids)
	}
	p.TextPromptLen = p.PromptLen
	return p, nil
}
