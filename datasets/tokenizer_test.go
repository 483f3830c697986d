package datasets_test

import (
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// The tokenizer package declares what it returns (tokenizer.Any) instead
// of importing datasets; these hold its types to what datasets needs.
var (
	_ datasets.Tokenizer     = (*tokenizer.Tokenizer)(nil)
	_ datasets.Tokenizer     = (*tokenizer.Server)(nil)
	_ datasets.Tokenizer     = tokenizer.Any(nil)
	_ datasets.ChatTemplater = (*tokenizer.Tokenizer)(nil)
)

// TestTokenizerServesDatasets: what tokenizer.ResolveAny returns drives a
// dataset that needs a tokenizer (random's exact lengths), and the
// tokenizer's chat template renders a datasets chat history.
func TestTokenizerServesDatasets(t *testing.T) {
	tok, err := tokenizer.ResolveAny(t.Context(), "../tokenizer/testdata/qwen3", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := datasets.DefaultOptions()
	o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = 40, 8, 1
	for i, p := range generate(t, mustNew(t, "random", o, tok), 3, 1) {
		if p.PromptLen != 40 {
			t.Errorf("random prompt %d: PromptLen %d, want 40", i, p.PromptLen)
		}
		if n := count(t, tok, p.Text, false); n != 40 {
			t.Errorf("random prompt %d: %d tokens, want 40", i, n)
		}
	}

	var tmpl datasets.ChatTemplater = qwen3(t)
	got, err := tmpl.ApplyChatTemplate([]datasets.Message{{Role: "user", Content: "hello"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"; got != want {
		t.Errorf("ApplyChatTemplate() = %q, want %q", got, want)
	}
}
