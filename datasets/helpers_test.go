package datasets_test

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
)

var (
	qwenOnce sync.Once
	qwenTok  *tokenizer.Tokenizer
	qwenErr  error
)

// qwen3 is the real Qwen3 tokenizer from the tokenizer package's testdata.
func qwen3(tb testing.TB) *tokenizer.Tokenizer {
	tb.Helper()
	qwenOnce.Do(func() { qwenTok, qwenErr = tokenizer.Load("../tokenizer/testdata/qwen3") })
	if qwenErr != nil {
		tb.Fatalf("load Qwen3 tokenizer: %v", qwenErr)
	}
	return qwenTok
}

// bosTok is Qwen3 with a BOS added by Encode(text, true), like Llama's
// tokenizers, to exercise the special-token subtraction.
type bosTok struct{ *tokenizer.Tokenizer }

const fakeBOS = 151643 // <|endoftext|>

func (t bosTok) Encode(text string, add bool) ([]int, error) {
	ids, err := t.Tokenizer.Encode(text, false)
	if add {
		ids = append([]int{fakeBOS}, ids...)
	}
	return ids, err
}
func (t bosTok) NumSpecialTokensToAdd() int { return 1 }

// tokenizers are the two tokenizer setups every length test runs with.
func tokenizers(t *testing.T) map[string]datasets.Tokenizer {
	q := qwen3(t)
	return map[string]datasets.Tokenizer{"qwen3": q, "qwen3+bos": bosTok{q}}
}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func mustNew(t testing.TB, name string, o datasets.Options, tok datasets.Tokenizer) datasets.Dataset {
	t.Helper()
	d, err := datasets.New(name, o, tok)
	if err != nil {
		t.Fatalf("New(%q) error: %v", name, err)
	}
	return d
}

func generate(t testing.TB, d datasets.Dataset, n int, seed uint64) []datasets.Prompt {
	t.Helper()
	ps, err := d.Generate(n, seeded(seed))
	if err != nil {
		t.Fatalf("Generate(%d) error: %v", n, err)
	}
	return ps
}

func count(t testing.TB, tok datasets.Tokenizer, text string, special bool) int {
	t.Helper()
	ids, err := tok.Encode(text, special)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return len(ids)
}

// fakeTemplate renders a ChatML-like template without Jinja.
type fakeTemplate struct{}

func (fakeTemplate) ApplyChatTemplate(msgs []datasets.Message, gen bool) (string, error) {
	var b strings.Builder
	b.WriteString("<BOS>")
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	if gen {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}
