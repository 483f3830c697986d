package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

// longBenchV2DefaultOutputLen is sglang's output length for LongBench-v2
// when --sharegpt-output-len is unset: the answer letter and a short
// explanation.
const longBenchV2DefaultOutputLen = 10

// LongBenchV2Repo and LongBenchV2File are what sglang loads when
// --dataset-path is unset: load_dataset("THUDM/LongBench-v2",
// split="train") reads the dataset repository's data file, data.json, a
// JSON array of rows. This package does not download; the bench runner
// fetches the file through the hub cache and passes its path.
const (
	LongBenchV2Repo = "THUDM/LongBench-v2"
	LongBenchV2File = "data.json"
)

// longBenchFields are the row fields the prompt uses, in its order. A row's
// other fields (_id, domain, answer, ...) are ignored, as sglang ignores
// them.
var longBenchFields = [...]string{"context", "question", "choice_A", "choice_B", "choice_C", "choice_D"}

// longBenchV2 is "longbench-v2" (sglang's longbench_v2): THUDM/LongBench-v2
// rows, each turned into a multiple-choice prompt. The file is what sglang
// reads: a .parquet file (pandas.read_parquet in sglang), else JSON lines;
// a file whose first non-blank byte is '[' is read as the hub's data.json,
// the JSON array load_dataset reads when no path is given.
type longBenchV2 struct {
	opts     Options
	tok      Tokenizer
	examples []longBenchRow
}

// longBenchRow holds longBenchFields' values in their order.
type longBenchRow [len(longBenchFields)]string

func (e *longBenchRow) prompt() string {
	return e[0] + "\n\nQuestion: " + e[1] +
		"\nA. " + e[2] + "\nB. " + e[3] + "\nC. " + e[4] + "\nD. " + e[5] + "\nAnswer:"
}

func newLongBenchV2(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, fmt.Errorf("longbench-v2: a dataset path is required (this package does not download; bench fetches %s's %s from the hub when --dataset-path is unset)", LongBenchV2Repo, LongBenchV2File)
	}
	rows, err := readLongBench(opts.DatasetPath)
	if err != nil {
		return nil, err
	}
	return &longBenchV2{opts: opts, tok: tok, examples: rows}, nil
}

// readLongBench reads the rows in the file's format: parquet by the name,
// as sglang decides; else a JSON array by its first byte, where sglang,
// reading JSON lines, would fail on data.json's first line; else JSON
// lines.
func readLongBench(path string) ([]longBenchRow, error) {
	if strings.HasSuffix(path, ".parquet") {
		return readLongBenchParquet(path)
	}
	array, err := startsWithArray(path)
	if err != nil {
		return nil, err
	}
	if array {
		return readLongBenchArray(path)
	}
	return readLongBenchLines(path)
}

// startsWithArray reports whether the file's first non-blank byte is '['.
func startsWithArray(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("longbench-v2: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		b, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			return false, nil // readJSONL says the file has no rows
		}
		if err != nil {
			return false, fmt.Errorf("longbench-v2 %s: %w", path, err)
		}
		if !isJSONSpace(b) {
			return b == '[', nil
		}
	}
}

func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// readLongBenchLines reads JSON lines, one row per non-blank line, as
// sglang does for a local file that is not parquet.
func readLongBenchLines(path string) ([]longBenchRow, error) {
	var rows []longBenchRow
	err := readJSONL("longbench-v2", path, func(line []byte) error {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			return objectErr(err)
		}
		row, err := longBenchFromJSON(obj)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		return nil
	})
	return rows, err
}

// readLongBenchArray reads a JSON array of rows (the hub's data.json). It
// streams the array, so that the file (hundreds of MB) is never held
// twice. Errors name the entry, counted from 0 as Python indexes the list,
// and the line it starts on.
func readLongBenchArray(path string) ([]longBenchRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("longbench-v2: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	if _, err := dec.Token(); err != nil { // the '[' startsWithArray saw
		return nil, fmt.Errorf("longbench-v2 %s: %w", path, err)
	}
	var rows []longBenchRow
	for i := 0; dec.More(); i++ {
		before := dec.InputOffset()
		var obj map[string]json.RawMessage
		err := objectErr(dec.Decode(&obj))
		if err == nil {
			var row longBenchRow
			if row, err = longBenchFromJSON(obj); err == nil {
				rows = append(rows, row)
				continue
			}
		}
		return nil, fmt.Errorf("longbench-v2 %s: entry %d (line %d): %w", path, i, entryLine(path, before), err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != nil { // the closing ']'
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("the array is not closed (a truncated file?): %w", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("longbench-v2 %s: entry %d (line %d): %w", path, len(rows), entryLine(path, end), err)
	}
	end = dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("longbench-v2 %s: line %d: content after the array's closing ']'", path, entryLine(path, end))
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("longbench-v2 %s: no rows", path)
	}
	return rows, nil
}

// entryLine is the 1-based line of the first byte at or after off that is
// neither blank nor a comma: where the entry after off starts. It re-reads
// the file, on the error path only; 0 means the file could not be read.
func entryLine(path string, off int64) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	br := bufio.NewReader(f)
	line := 1
	for i := int64(0); ; i++ {
		b, err := br.ReadByte()
		if err != nil {
			return line
		}
		if i >= off && !isJSONSpace(b) && b != ',' {
			return line
		}
		if b == '\n' {
			line++
		}
	}
}

// objectErr says "not a JSON object" for a row that decoded to another
// type (the map's values are raw, so a type error is the row's own).
func objectErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return errors.New("not a JSON object")
	}
	return err
}

// longBenchFromJSON takes the prompt's fields from one decoded row. A field
// that is absent, null or not a string is an error naming it: sglang
// would stop on the missing key, and print null as "None" in the prompt.
func longBenchFromJSON(obj map[string]json.RawMessage) (longBenchRow, error) {
	var row longBenchRow
	if obj == nil {
		return row, errors.New("not a JSON object")
	}
	for i, name := range longBenchFields {
		raw, ok := obj[name]
		if !ok {
			return row, fmt.Errorf("missing field %q", name)
		}
		if err := json.Unmarshal(raw, &row[i]); err != nil || bytes.Equal(raw, []byte("null")) {
			var v any
			_ = json.Unmarshal(raw, &v) // valid JSON: the row decoded
			return row, fmt.Errorf("field %q is %s, want a string", name, jsonKind(v))
		}
	}
	return row, nil
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
