package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// hfDefaultOutputLen is the output length of a row with no reply of its
// own when --hf-output-len is not given.
const hfDefaultOutputLen = 256

// newHF is vLLM's hf dataset read from a local file: nothing is
// downloaded, so --dataset-path is a JSONL file (or a JSON array) holding
// the rows of the hub dataset vLLM would fetch, or a directory holding
// <subset>/<split>.jsonl or <split>.jsonl (--hf-subset, --hf-split). A
// row's prompt is the first of the columns vLLM's hub datasets use:
// prompt, question, problem, instruction (with input), turns[0], or the
// first turn of conversations or messages. Its output length is
// --hf-output-len, else the tokens of the row's reply (the conversation's
// second turn, output, response, completion or answer), else 256.
func newHF(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("hf: --dataset-path must be a local file or directory with the dataset's rows (JSONL); hub downloads are not supported")
	}
	path := opts.DatasetPath
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		split := opts.HFSplit
		if split == "" {
			split = "train"
		}
		cands := []string{filepath.Join(path, opts.HFSubset, split+".jsonl"), filepath.Join(path, split+".jsonl")}
		path = ""
		for _, c := range cands {
			if _, err := os.Stat(c); err == nil {
				path = c
				break
			}
		}
		if path == "" {
			return nil, fmt.Errorf("hf: %s holds none of %s", opts.DatasetPath, strings.Join(cands, ", "))
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	var rows []map[string]any
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "[") {
		if err := json.Unmarshal(b, &rows); err != nil {
			return nil, fmt.Errorf("hf: %s: %w", path, err)
		}
	} else if err := readJSONL("hf", path, func(line []byte) error {
		var row map[string]any
		if err := json.Unmarshal(line, &row); err != nil {
			return err
		}
		rows = append(rows, row)
		return nil
	}); err != nil {
		return nil, err
	}
	d := &speedBench{}
	for i, row := range rows {
		prompt, reply := hfRowText(row)
		if prompt == "" {
			continue
		}
		ids, err := tok.Encode(prompt, true)
		if err != nil {
			return nil, fmt.Errorf("hf: row %d: %w", i, err)
		}
		p := Prompt{Text: prompt, PromptLen: len(ids), TextPromptLen: len(ids), OutputLen: opts.HFOutputLen}
		if p.OutputLen == 0 {
			p.OutputLen = hfDefaultOutputLen
			if reply != "" {
				rids, err := tok.Encode(reply, false)
				if err != nil {
					return nil, fmt.Errorf("hf: row %d: %w", i, err)
				}
				p.OutputLen = max(len(rids), 1)
			}
		}
		d.rows = append(d.rows, p)
	}
	if len(d.rows) == 0 {
		return nil, fmt.Errorf("hf: no row of %s has a prompt column (prompt, question, problem, instruction, turns, conversations or messages)", path)
	}
	return d, nil
}

// hfRowText is a row's prompt and reply ("" when it has none).
func hfRowText(row map[string]any) (prompt, reply string) {
	str := func(k string) string { s, _ := row[k].(string); return s }
	turn := func(v any) string {
		m, _ := v.(map[string]any)
		for _, k := range []string{"value", "content", "text"} {
			if s, ok := m[k].(string); ok {
				return s
			}
		}
		s, _ := v.(string)
		return s
	}
	for _, k := range []string{"output", "response", "completion", "answer"} {
		if reply = str(k); reply != "" {
			break
		}
	}
	for _, k := range []string{"prompt", "question", "problem"} {
		if s := str(k); s != "" {
			return s, reply
		}
	}
	if s := str("instruction"); s != "" {
		if in := str("input"); in != "" {
			s += "\n" + in
		}
		return s, reply
	}
	for _, k := range []string{"turns", "conversations", "messages"} {
		if l, ok := row[k].([]any); ok && len(l) > 0 {
			if len(l) > 1 && reply == "" {
				reply = turn(l[1])
			}
			return turn(l[0]), reply
		}
	}
	return "", reply
}
