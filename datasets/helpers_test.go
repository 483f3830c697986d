package datasets_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
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

var (
	llamaOnce          sync.Once
	llamaTok, llamaBOS *tokenizer.Tokenizer
	llamaErr           error
)

// llama3 is Meta's Llama 3 tokenizer (fetched by make deps, never
// committed; see llmtest.Llama3Tokenizer): as packaged, whose
// post-processor adds nothing, and with Meta's later post-processor, which
// adds <|begin_of_text|> first (a real BOS, counted by
// NumSpecialTokensToAdd).
func llama3(tb testing.TB) (plain, bos *tokenizer.Tokenizer) {
	tb.Helper()
	dir := llmtest.Llama3Tokenizer(tb)
	llamaOnce.Do(func() {
		var data, cfg, withBOS []byte
		if data, llamaErr = os.ReadFile(filepath.Join(dir, tokenizer.TokenizerFile)); llamaErr != nil {
			return
		}
		if cfg, llamaErr = os.ReadFile(filepath.Join(dir, tokenizer.TokenizerConfigFile)); llamaErr != nil {
			return
		}
		if llamaTok, llamaErr = tokenizer.New(data, cfg); llamaErr != nil {
			return
		}
		if withBOS, llamaErr = llmtest.Llama3WithBOS(data); llamaErr == nil {
			llamaBOS, llamaErr = tokenizer.New(withBOS, cfg)
		}
	})
	if llamaErr != nil {
		tb.Fatalf("load Llama 3 tokenizer from %s: %v", dir, llamaErr)
	}
	return llamaTok, llamaBOS
}

// tokenizers are the tokenizer setups every length test runs with: Qwen3
// (no special tokens added) and Qwen3 with a made-up BOS, and Llama 3 as
// packaged and with its real BOS.
func tokenizers(t *testing.T) map[string]datasets.Tokenizer {
	q := qwen3(t)
	l, lb := llama3(t)
	return map[string]datasets.Tokenizer{"qwen3": q, "qwen3+bos": bosTok{q}, "llama3": l, "llama3+bos": lb}
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
