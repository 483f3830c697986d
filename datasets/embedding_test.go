package datasets_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

// embeddingFile is a small file in the format sglang's embedding dataset
// reads (python/sglang/benchmark/datasets/embedding.py): one object per
// line, "input" a string or a list of strings, any other key passed
// through to the request body. A blank line is skipped, as there.
const embeddingFile = `{"input": "The quick brown fox jumps over the lazy dog."}
{"input": ["first passage about tea", "second passage about coffee", "a third, shorter one"], "encoding_format": "float"}

{"input": ["only one in a list"], "dimensions": 256, "user": "u-1"}
{"input": "Embeddings map text to vectors.", "model": "other-model"}
`

// writeEmbedding writes body as an embedding JSONL file and returns its path.
func writeEmbedding(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "embed.jsonl")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEmbeddingGolden checks the prompts the embedding dataset makes of
// its small file against testdata/golden (rewritten with
// go test ./datasets -run TestEmbeddingGolden -update): every row, and the
// first two (rows in file order, never shuffled, so the seed changes
// nothing).
func TestEmbeddingGolden(t *testing.T) {
	tok := qwen3(t)
	o := datasets.DefaultOptions()
	o.DatasetPath = writeEmbedding(t, embeddingFile)
	for _, tc := range []struct {
		name string
		n    int
	}{{"embedding", 0}, {"embedding-first-two", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			ps := generate(t, mustNew(t, "embedding", o, tok), tc.n, 7)
			comparePromptsGolden(t, tc.name, ps, "TestEmbeddingGolden")
		})
	}
}

// TestEmbeddingRows: a list row is one prompt carrying the list, its
// length the inputs' token counts added up, each counted as
// tokenizer.encode counts it (with the special tokens: the BOS tokenizer
// adds one per input); a string row is a text; the other keys are the
// row's extra body; rows come in file order, the count capped at the
// file's rows; and a seed changes nothing.
func TestEmbeddingRows(t *testing.T) {
	path := writeEmbedding(t, embeddingFile)
	for name, tok := range map[string]datasets.Tokenizer{"qwen3": qwen3(t), "qwen3+bos": bosTok{qwen3(t)}} {
		t.Run(name, func(t *testing.T) {
			o := datasets.DefaultOptions()
			o.DatasetPath = path
			d := mustNew(t, "embedding", o, tok)
			ps := generate(t, d, 10, 1) // more than the file's 4 rows
			if len(ps) != 4 {
				t.Fatalf("Generate(10) on 4 rows = %d prompts, want 4", len(ps))
			}
			list := []string{"first passage about tea", "second passage about coffee", "a third, shorter one"}
			want := 0
			for _, s := range list {
				want += count(t, tok, s, true)
			}
			p := ps[1]
			if d := cmp.Diff(list, p.Inputs); d != "" || p.Text != "" {
				t.Errorf("row 2: Inputs (-want +got):\n%s Text %q, want the list and no text", d, p.Text)
			}
			if p.PromptLen != want || p.TextPromptLen != want || p.OutputLen != 0 {
				t.Errorf("row 2: PromptLen %d, TextPromptLen %d, OutputLen %d; want %d, %d, 0", p.PromptLen, p.TextPromptLen, p.OutputLen, want, want)
			}
			if d := cmp.Diff(map[string]any{"encoding_format": "float"}, p.ExtraBody); d != "" {
				t.Errorf("row 2: ExtraBody (-want +got):\n%s", d)
			}
			first := "The quick brown fox jumps over the lazy dog."
			if ps[0].Text != first || ps[0].Inputs != nil || ps[0].PromptLen != count(t, tok, first, true) || ps[0].ExtraBody != nil {
				t.Errorf("row 1 = %+v, want the text alone, counted with special tokens", ps[0])
			}
			if got := ps[2].Inputs; len(got) != 1 || got[0] != "only one in a list" {
				t.Errorf("row 3: Inputs = %q, want the one-item list kept a list", got)
			}
			if d := cmp.Diff(map[string]any{"dimensions": json.Number("256"), "user": "u-1"}, ps[2].ExtraBody); d != "" {
				t.Errorf("row 3: ExtraBody (-want +got):\n%s", d)
			}
			if got := ps[3].ExtraBody["model"]; got != "other-model" {
				t.Errorf("row 4: ExtraBody[model] = %v, want other-model", got)
			}
			again := generate(t, d, 2, 99)
			if d := cmp.Diff(ps[:2], again); d != "" {
				t.Errorf("Generate(2) with another seed differs from the first two rows (-want +got):\n%s", d)
			}
			// A caller merging into one prompt's extra body changes no other.
			again[1].ExtraBody["encoding_format"] = "base64"
			if ps[1].ExtraBody["encoding_format"] != "float" {
				t.Error("a prompt's ExtraBody is shared with another Generate's")
			}
		})
	}
}

// TestEmbeddingBadRows: where sglang silently skips a row, the file is
// refused with its path, the line and the field.
func TestEmbeddingBadRows(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"not json", `{"input": "a"`, ":2: "},
		{"not an object", `["a", "b"]`, ":2: "},
		{"null row", `null`, ":2: row is not a JSON object"},
		{"no input", `{"text": "a"}`, `:2: no "input" key`},
		{"blank string", `{"input": "  "}`, ":2: input: blank string"},
		{"empty list", `{"input": []}`, ":2: input: empty list"},
		{"blank item", `{"input": ["a", "\t"]}`, ":2: input[1]: blank string"},
		{"token ids", `{"input": [1, 2, 3]}`, ":2: input[0]: want a string, got a number"},
		{"number", `{"input": 7}`, ":2: input: want a string or a list of strings, got a number"},
		{"trailing data", `{"input": "a"} {"input": "b"}`, ":2: data after the JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeEmbedding(t, `{"input": "fine"}`+"\n"+tc.line+"\n")
			o := datasets.DefaultOptions()
			o.DatasetPath = path
			_, err := datasets.New("embedding", o, qwen3(t))
			if err == nil || !strings.Contains(err.Error(), "embedding "+path+tc.want) {
				t.Errorf("New(embedding, %s) error = %v, want one containing %q", tc.line, err, "embedding "+path+tc.want)
			}
		})
	}
	o := datasets.DefaultOptions()
	if _, err := datasets.New("embedding", o, qwen3(t)); err == nil || !strings.Contains(err.Error(), "--dataset-path") {
		t.Errorf("New(embedding) without a path: error = %v, want one naming --dataset-path", err)
	}
	o.DatasetPath = writeEmbedding(t, "\n\n")
	if _, err := datasets.New("embedding", o, qwen3(t)); err == nil || !strings.Contains(err.Error(), "no rows") {
		t.Errorf("New(embedding) on a blank file: error = %v, want no rows", err)
	}
}
