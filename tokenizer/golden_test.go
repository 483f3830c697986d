package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// goldenCase is one row written by testdata/gen/gen.mjs from HF's
// tokenizers.js.
type goldenCase struct {
	Text        string `json:"text"`
	IDs         []int  `json:"ids"`
	IDsSpecial  []int  `json:"ids_special"`
	Decoded     string `json:"decoded"`
	DecodedSkip string `json:"decoded_skip"`
}

func readGolden(t testing.TB, dir string) []goldenCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

var (
	qwenOnce sync.Once
	qwenTok  *Tokenizer
	qwenErr  error
)

// qwen3 loads the Qwen3 tokenizer once per test binary: it is 11 MB.
func qwen3(t testing.TB) *Tokenizer {
	t.Helper()
	qwenOnce.Do(func() { qwenTok, qwenErr = Load(filepath.Join("testdata", "qwen3")) })
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	return qwenTok
}

func TestGolden(t *testing.T) {
	for _, dir := range []string{"qwen3", "metaspace-legacy", "metaspace-first"} {
		t.Run(dir, func(t *testing.T) {
			var tok *Tokenizer
			if dir == "qwen3" {
				tok = qwen3(t)
			} else {
				var err error
				if tok, err = Load(filepath.Join("testdata", dir)); err != nil {
					t.Fatal(err)
				}
			}
			cases := readGolden(t, dir)
			if dir == "qwen3" && len(cases) < 400 {
				t.Fatalf("golden has %d strings, want >= 400", len(cases))
			}
			failed := 0
			for i, c := range cases {
				got, err := tok.Encode(c.Text, false)
				if err != nil {
					t.Fatalf("Encode(%q): %v", c.Text, err)
				}
				if diff := cmp.Diff(c.IDs, got, cmpNilEmpty); diff != "" {
					failed++
					t.Errorf("case %d: Encode(%q, false) mismatch (-want +got):\n%s", i, c.Text, diff)
				}
				got, _ = tok.Encode(c.Text, true)
				if diff := cmp.Diff(c.IDsSpecial, got, cmpNilEmpty); diff != "" {
					t.Errorf("case %d: Encode(%q, true) mismatch (-want +got):\n%s", i, c.Text, diff)
				}
				dec, err := tok.Decode(c.IDsSpecial, false)
				if err != nil {
					t.Fatalf("Decode(%v): %v", c.IDsSpecial, err)
				}
				if dec != c.Decoded {
					t.Errorf("case %d: Decode(%v, false) = %q, want %q", i, c.IDsSpecial, dec, c.Decoded)
				}
				dec, _ = tok.Decode(c.IDsSpecial, true)
				if dec != c.DecodedSkip {
					t.Errorf("case %d: Decode(%v, true) = %q, want %q", i, c.IDsSpecial, dec, c.DecodedSkip)
				}
				if failed > 20 {
					t.Fatal("too many failures")
				}
			}
		})
	}
}

var cmpNilEmpty = cmp.Comparer(func(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
})

// llamaGolden is one row written by testdata/gen/gen.mjs for Llama 3: the
// goldenCase fields, and ids_bos, the encoding with special tokens under
// the post-processor of Meta's later revision (a BOS first).
type llamaGolden struct {
	goldenCase
	IDsBOS []int `json:"ids_bos"`
}

var (
	llamaOnce            sync.Once
	llamaTok, llamaBOS   *Tokenizer
	llamaErr             error
	llamaTokenizerJSON   []byte
	llamaTokenizerConfig []byte
)

// llama3 loads Meta's Llama 3 tokenizer (fetched by make deps, never
// committed; see llmtest.Llama3Tokenizer) as packaged, whose
// post-processor adds nothing, and with the post-processor of Meta's later
// revision, which puts <|begin_of_text|> first.
func llama3(t testing.TB) (plain, bos *Tokenizer) {
	t.Helper()
	dir := llmtest.Llama3Tokenizer(t)
	llamaOnce.Do(func() {
		if llamaTokenizerJSON, llamaErr = os.ReadFile(filepath.Join(dir, TokenizerFile)); llamaErr != nil {
			return
		}
		if llamaTokenizerConfig, llamaErr = os.ReadFile(filepath.Join(dir, TokenizerConfigFile)); llamaErr != nil {
			return
		}
		if llamaTok, llamaErr = New(llamaTokenizerJSON, llamaTokenizerConfig); llamaErr != nil {
			return
		}
		var withBOS []byte
		if withBOS, llamaErr = llmtest.Llama3WithBOS(llamaTokenizerJSON); llamaErr == nil {
			llamaBOS, llamaErr = New(withBOS, llamaTokenizerConfig)
		}
	})
	if llamaErr != nil {
		t.Fatalf("load Llama 3 tokenizer from %s: %v", dir, llamaErr)
	}
	return llamaTok, llamaBOS
}

// TestLlama3IsMetas: the fetched file is Llama 3's tokenizer: 128,000 BPE
// ids and 256 special tokens (128,256), Llama 3's pre-tokenizer regex,
// ignore_merges, and its special tokens at their ids.
func TestLlama3IsMetas(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	tok, bos := llama3(t)
	if tok.VocabSize() != 128000 || tok.Len() != 128256 || len(tok.SpecialIDs()) != 256 {
		t.Errorf("VocabSize %d, Len %d, %d special ids; want 128000, 128256, 256", tok.VocabSize(), tok.Len(), len(tok.SpecialIDs()))
	}
	const regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	var raw struct {
		PreTokenizer struct {
			Pretokenizers []struct {
				Pattern struct{ Regex string }
			}
		} `json:"pre_tokenizer"`
		Model struct {
			IgnoreMerges bool `json:"ignore_merges"`
		}
	}
	if err := json.Unmarshal(llamaTokenizerJSON, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.PreTokenizer.Pretokenizers) == 0 || raw.PreTokenizer.Pretokenizers[0].Pattern.Regex != regex || !raw.Model.IgnoreMerges {
		t.Errorf("pre-tokenizer %+v, ignore_merges %v; want Llama 3's regex and true", raw.PreTokenizer, raw.Model.IgnoreMerges)
	}
	for name, want := range map[string]int{"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001,
		"<|start_header_id|>": 128006, "<|end_header_id|>": 128007, "<|eot_id|>": 128009} {
		if id, ok := tok.TokenToID(name); !ok || id != want {
			t.Errorf("TokenToID(%q) = %d, %v; want %d", name, id, ok, want)
		}
	}
	if id, ok := bos.BOS(); !ok || id != 128000 || tok.NumSpecialTokensToAdd() != 0 || bos.NumSpecialTokensToAdd() != 1 {
		t.Errorf("BOS %d %v, special tokens added %d (as packaged) and %d (later revision); want 128000, 0, 1",
			id, ok, tok.NumSpecialTokensToAdd(), bos.NumSpecialTokensToAdd())
	}
}

// TestGoldenLlama3: Llama 3's encodings, with and without special tokens,
// and decodings, against HF's tokenizers.js (testdata/llama3/golden.json
// holds only ids of the generator's own strings).
func TestGoldenLlama3(t *testing.T) {
	tok, bos := llama3(t)
	data, err := os.ReadFile(filepath.Join("testdata", "llama3", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []llamaGolden
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 400 {
		t.Fatalf("golden has %d strings, want >= 400", len(cases))
	}
	failed := 0
	for i, c := range cases {
		for _, enc := range []struct {
			tok     *Tokenizer
			special bool
			want    []int
		}{{tok, false, c.IDs}, {tok, true, c.IDsSpecial}, {bos, true, c.IDsBOS}, {bos, false, c.IDs}} {
			got, err := enc.tok.Encode(c.Text, enc.special)
			if err != nil {
				t.Fatalf("Encode(%q): %v", c.Text, err)
			}
			if diff := cmp.Diff(enc.want, got, cmpNilEmpty); diff != "" {
				failed++
				t.Errorf("case %d: Encode(%q, %v) (BOS revision %v) mismatch (-want +got):\n%s", i, c.Text, enc.special, enc.tok == bos, diff)
			}
		}
		for skip, want := range map[bool]string{false: c.Decoded, true: c.DecodedSkip} {
			dec, err := tok.Decode(c.IDsSpecial, skip)
			if err != nil {
				t.Fatalf("Decode(%v): %v", c.IDsSpecial, err)
			}
			if dec != want {
				failed++
				t.Errorf("case %d: Decode(%v, %v) = %q, want %q", i, c.IDsSpecial, skip, dec, want)
			}
		}
		if failed > 20 {
			t.Fatal("too many failures")
		}
	}
}
