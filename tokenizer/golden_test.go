package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
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
