package datasets_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestVLLMDatasets generates each of vLLM's datasets and checks the
// shape vLLM's source gives it (vllm/benchmarks/datasets): sonnet's
// shared first lines and length bound, prefix_repetition's groups,
// random's shared --random-prefix-len prefix, random-mm's images per
// request from the bucket sizes, spec_bench's category filter and hf's
// columns from a local file.
func TestVLLMDatasets(t *testing.T) {
	tok := qwen3(t)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "question.jsonl")
	if err := os.WriteFile(specPath, []byte(`{"question_id": 1, "category": "math", "turns": ["What is 2+2?"]}
{"question_id": 2, "category": "writing", "turns": ["Write a haiku."]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	hfPath := filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(hfPath, []byte(`{"instruction": "Fix the bug", "input": "x = 1 +", "output": "x = 1 + 1"}
{"conversations": [{"from": "human", "value": "Hello there"}, {"from": "gpt", "value": "Hi! How can I help you today?"}]}
{"problem": "Find x."}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dataset string
		opts          func(o *datasets.Options)
		n             int
		check         func(t *testing.T, ps []datasets.Prompt)
	}{
		{"sonnet", "sonnet", func(o *datasets.Options) { o.ChatTemplate = fakeTemplate{} }, 8, func(t *testing.T, ps []datasets.Prompt) {
			for _, p := range ps {
				if !strings.HasPrefix(p.Text, "Pick as many lines as you can from these poem lines:\nFROM fairest creatures") {
					t.Errorf("prompt does not start with the base prompt and the shared first lines: %.80q", p.Text)
				}
				if p.PromptLen > 550 || p.PromptLen < 400 || p.OutputLen != 150 {
					t.Errorf("prompt len %d (want at most 550, near it), output %d (want 150)", p.PromptLen, p.OutputLen)
				}
			}
		}},
		{"sonnet formatted", "sonnet", func(o *datasets.Options) { o.ChatTemplate, o.ApplyChatTemplate = fakeTemplate{}, true }, 2, func(t *testing.T, ps []datasets.Prompt) {
			if !strings.HasPrefix(ps[0].Text, "<BOS><|im_start|>user\nPick") {
				t.Errorf("completions prompt is not the templated text: %.60q", ps[0].Text)
			}
		}},
		{"prefix_repetition", "prefix_repetition", func(o *datasets.Options) {
			o.PrefixRepetitionPrefixLen, o.PrefixRepetitionSuffixLen, o.PrefixRepetitionNumPrefixes, o.PrefixRepetitionOutputLen = 32, 16, 3, 7
		}, 10, func(t *testing.T, ps []datasets.Prompt) {
			if len(ps) != 9 {
				t.Fatalf("%d prompts, want 9 (10 // 3 per prefix, times 3)", len(ps))
			}
			prefixes := map[string]int{}
			for _, p := range ps {
				prefixes[p.Text[:40]]++
				if p.OutputLen != 7 || p.PromptLen < 46 || p.PromptLen > 50 {
					t.Errorf("prompt len %d (want 48 ± 2), output %d (want 7)", p.PromptLen, p.OutputLen)
				}
			}
			if len(prefixes) != 3 {
				t.Errorf("%d distinct prefixes, want 3: %v", len(prefixes), prefixes)
			}
		}},
		{"random prefix", "random", func(o *datasets.Options) {
			o.RandomPrefixLen, o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = 20, 10, 5, 1
		}, 4, func(t *testing.T, ps []datasets.Prompt) {
			for _, p := range ps {
				if p.Text[:30] != ps[0].Text[:30] || p.PromptLen != 30 {
					t.Errorf("prompt %.40q len %d: want the shared prefix and 20+10 tokens", p.Text, p.PromptLen)
				}
			}
		}},
		{"random-mm", "random-mm", func(o *datasets.Options) {
			o.RandomInputLen, o.RandomOutputLen, o.RandomMMBaseItemsPerRequest, o.RandomMMNumMMItemsRangeRatio = 16, 4, 2, 0.5
			o.RandomMMBucketConfig = "{(64, 64, 1): 1.0, (720, 1280, 16): 0.0}"
		}, 20, func(t *testing.T, ps []datasets.Prompt) {
			for _, p := range ps {
				if p.LazyImages == nil || len(p.LazyImages.Sizes) < 1 || len(p.LazyImages.Sizes) > 3 {
					t.Fatalf("images %v: want 1 to 3 per request", p.LazyImages)
				}
				for _, s := range p.LazyImages.Sizes {
					if s != [2]int{64, 64} {
						t.Errorf("image size %v, want the bucket's 64x64", s)
					}
				}
				if p.VisionPromptLen == 0 || p.PromptLen != p.TextPromptLen+p.VisionPromptLen {
					t.Errorf("lens text %d vision %d total %d", p.TextPromptLen, p.VisionPromptLen, p.PromptLen)
				}
			}
		}},
		{"spec_bench", "spec_bench", func(o *datasets.Options) { o.DatasetPath, o.SpecBenchCategory = specPath, "math" }, 3, func(t *testing.T, ps []datasets.Prompt) {
			for _, p := range ps {
				if p.Text != "What is 2+2?" || p.OutputLen != 256 {
					t.Errorf("prompt %q output %d, want the math row and 256", p.Text, p.OutputLen)
				}
			}
		}},
		{"hf", "hf", func(o *datasets.Options) { o.DatasetPath = hfPath }, 3, func(t *testing.T, ps []datasets.Prompt) {
			got := map[string]int{}
			for _, p := range ps {
				got[p.Text] = p.OutputLen
			}
			want := map[string]int{"Fix the bug\nx = 1 +": count(t, tok, "x = 1 + 1", false), "Hello there": count(t, tok, "Hi! How can I help you today?", false), "Find x.": 256}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("hf prompt %q: output len %d, want %d (all: %v)", k, got[k], v, got)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := datasets.DefaultOptions()
			tc.opts(&o)
			tc.check(t, generate(t, mustNew(t, tc.dataset, o, tok), tc.n, 1))
		})
	}
}

// TestVLLMDatasetErrors: bad input is refused with a message naming it.
func TestVLLMDatasetErrors(t *testing.T) {
	tok := qwen3(t)
	for _, tc := range []struct {
		dataset string
		opts    func(o *datasets.Options)
		want    string
	}{
		{"sonnet", func(o *datasets.Options) { o.SonnetInputLen = 5 }, "higher than the base prompt length"},
		{"prefix_repetition", func(o *datasets.Options) { o.PrefixRepetitionNumPrefixes = 0 }, "num prefixes must be at least 1"},
		{"random-mm", func(o *datasets.Options) { o.RandomMMBucketConfig = "{(720, 1280, 16): 1.0}" }, "video bucket"},
		{"spec_bench", func(o *datasets.Options) {}, "--dataset-path"},
		{"hf", func(o *datasets.Options) {}, "hub downloads are not supported"},
	} {
		t.Run(tc.dataset, func(t *testing.T) {
			o := datasets.DefaultOptions()
			tc.opts(&o)
			_, err := datasets.New(tc.dataset, o, tok)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	o := datasets.DefaultOptions()
	o.PrefixRepetitionNumPrefixes = 10
	d := mustNew(t, "prefix_repetition", o, tok)
	if _, err := d.Generate(5, seeded(1)); err == nil || !strings.Contains(err.Error(), "fewer than the 10 prefixes") {
		t.Errorf("5 prompts over 10 prefixes: error %v", err)
	}
}
