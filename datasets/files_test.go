package datasets_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

func TestShareGPT(t *testing.T) {
	tok := qwen3(t)
	base := datasets.DefaultOptions()
	base.DatasetPath = sharegptFile
	cases := []struct {
		name     string
		mod      func(o *datasets.Options)
		wantN    int
		checkOut func(p datasets.Prompt) bool
	}{
		// 6 entries have two turns; "Hi" (1 token) and "ok" (1 token) fail
		// the < 2 filters.
		{"filters", func(*datasets.Options) {}, 4, nil},
		{"output len override", func(o *datasets.Options) { o.SharegptOutputLen = 7 }, 5, func(p datasets.Prompt) bool { return p.OutputLen == 7 }},
		// Only the long heist-film entry has prompt + output over 60 tokens.
		{"context len", func(o *datasets.Options) { o.SharegptContextLen = 60 }, 3, func(p datasets.Prompt) bool { return p.PromptLen+p.OutputLen <= 60 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.mod(&o)
			ps := generate(t, mustNew(t, "sharegpt", o, tok), 100, 1)
			if len(ps) != tc.wantN {
				t.Fatalf("got %d prompts, want %d", len(ps), tc.wantN)
			}
			for i, p := range ps {
				if got := count(t, tok, p.Text, true); got != p.PromptLen {
					t.Errorf("prompt %d: PromptLen %d, Encode gives %d", i, p.PromptLen, got)
				}
				if tc.checkOut != nil && !tc.checkOut(p) {
					t.Errorf("prompt %d: %+v fails the case's check", i, p)
				}
			}
		})
	}
	t.Run("suffix and chat template", func(t *testing.T) {
		o := base
		o.PromptSuffix, o.ApplyChatTemplate, o.ChatTemplate, o.BOSToken = " Be brief.", true, fakeTemplate{}, "<BOS>"
		ps := generate(t, mustNew(t, "sharegpt", o, tok), 100, 1)
		for _, p := range ps {
			if strings.Contains(p.Text, "<BOS>") || !strings.HasSuffix(p.Text, " Be brief.Assistant:<|im_end|>\n<|im_start|>assistant\n") {
				t.Errorf("templated prompt %q: want the BOS removed and the suffix rule applied", p.Text)
			}
			if strings.Contains(p.Text, "Assistant: Be brief") {
				t.Errorf("trailing Assistant: was not stripped before the suffix: %q", p.Text)
			}
		}
	})
	t.Run("limit", func(t *testing.T) {
		if ps := generate(t, mustNew(t, "sharegpt", base, tok), 2, 1); len(ps) != 2 {
			t.Errorf("Generate(2) gave %d prompts", len(ps))
		}
	})
}

func TestFileErrors(t *testing.T) {
	tok := qwen3(t)
	dir := t.TempDir()
	write := func(name, body string) string { return writeTestFile(t, dir, name, body) }
	notJSON := write("bad.json", `[{"conversations": [}`)
	notArray := write("obj.json", `{"a": 1}`)
	badLine := write("bad.jsonl", "{\"prompt\": \"ok\"}\n\n{\"prompt\": 3}\n")
	unknown := write("unknown.jsonl", `{"prompt": "x", "ouput_len": 3}`)
	badTrace := write("trace.jsonl", "{\"timestamp\": 0, \"hash_ids\": [1]}\nnot json\n")
	badMMMU := write("mmmu.jsonl", `{"question": "q", "image_1": "@@@"}`)
	cases := []struct {
		dataset, path string
		mod           func(*datasets.Options)
		want          []string // substrings of the error
	}{
		{"sharegpt", "testdata/nope.json", nil, []string{"testdata/nope.json", "no such file"}},
		{"sharegpt", "", nil, []string{"path is required"}},
		{"sharegpt", notJSON, nil, []string{notJSON, "entry 0"}},
		{"sharegpt", notArray, nil, []string{notArray, "not a JSON array"}},
		{"sharegpt", sharegptFile, func(o *datasets.Options) { o.SharegptOutputLen = 3 }, []string{"at least 4"}},
		{"random", notJSON, nil, []string{notJSON}},
		{"custom", badLine, nil, []string{badLine + ":3", "prompt must be a string"}},
		{"custom", unknown, nil, []string{unknown + ":1", `unknown field "ouput_len"`}},
		{"custom", "testdata/nope.jsonl", nil, []string{"testdata/nope.jsonl"}},
		{"openai", write("empty.jsonl", "\n\n"), nil, []string{"no rows"}},
		{"mooncake", badTrace, nil, []string{badTrace + ":2"}},
		{"mooncake", "", nil, []string{"trace path is required"}},
		{"mmmu", badMMMU, nil, []string{badMMMU + ":1", "image_1"}},
		{"mmmu", "", nil, []string{"Python-only"}},
	}
	for _, tc := range cases {
		t.Run(tc.dataset+"/"+filepath.Base(tc.path), func(t *testing.T) {
			o := datasets.DefaultOptions()
			o.DatasetPath = tc.path
			if tc.mod != nil {
				tc.mod(&o)
			}
			_, err := datasets.New(tc.dataset, o, tok)
			if err == nil {
				t.Fatalf("New(%s, %s) succeeded, want an error", tc.dataset, tc.path)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New(%s, %s) error %q does not contain %q", tc.dataset, tc.path, err, w)
				}
			}
		})
	}
}

func TestMooncake(t *testing.T) {
	tok := qwen3(t)
	o := datasets.DefaultOptions()
	o.DatasetPath, o.MooncakeSlowdownFactor, o.MooncakeNumRounds = "testdata/mooncake.jsonl", 2, 2
	ps := generate(t, mustNew(t, "mooncake", o, tok), 3, 1)
	if len(ps) != 6 {
		t.Fatalf("got %d prompts, want 3 records × 2 rounds", len(ps))
	}
	// The first three lines have timestamps 1000, 0, 1500: sorted, offsets
	// from the first, scaled by 2.
	wantTS := []time.Duration{0, 0, 2 * time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
	for i, p := range ps {
		if p.Timestamp != wantTS[i] {
			t.Errorf("prompt %d: Timestamp %v, want %v", i, p.Timestamp, wantTS[i])
		}
		if got := count(t, tok, p.Text, true); got != p.PromptLen {
			t.Errorf("prompt %d: PromptLen %d, Encode gives %d", i, p.PromptLen, got)
		}
	}
	hi := strings.TrimSpace(strings.Repeat("hi ", 128))
	first := "Round 1: 7" + hi + "8" + hi + "Tell me a story based on this context."
	wantMsgs := []datasets.Message{
		{Role: "user", Content: first},
		{Role: "assistant", Content: "story story story"},
		{Role: "user", Content: "Round 2: 7" + hi + "8" + hi + "Tell me a story based on this context."},
	}
	if diff := cmp.Diff(wantMsgs, ps[1].Messages); diff != "" {
		t.Errorf("second round messages (-want +got):\n%s", diff)
	}
	if ps[0].Text != "user: "+first || ps[0].OutputLen != 3 {
		t.Errorf("first prompt = %q (output %d), want the role-joined fallback and output 3", ps[0].Text, ps[0].OutputLen)
	}
	if ps[4].OutputLen != 256 {
		t.Errorf("record without output_length: OutputLen %d, want 256", ps[4].OutputLen)
	}
	o.ChatTemplate = fakeTemplate{}
	ps = generate(t, mustNew(t, "mooncake", o, tok), 1, 1)
	if !strings.HasPrefix(ps[0].Text, "<BOS><|im_start|>user\nRound 1: ") {
		t.Errorf("templated mooncake prompt = %q", trunc(ps[0].Text))
	}
}

func TestCustom(t *testing.T) {
	tok := qwen3(t)
	o := datasets.DefaultOptions()
	o.DatasetPath = "testdata/custom.jsonl"
	ps := generate(t, mustNew(t, "custom", o, tok), 0, 1)
	type row struct {
		Text      string
		Messages  []datasets.Message
		Images    []string
		OutputLen int
		ExtraBody map[string]any
	}
	var got []row
	for _, p := range ps {
		got = append(got, row{p.Text, p.Messages, p.Images, p.OutputLen, p.ExtraBody})
		if p.PromptLen < 2 {
			t.Errorf("PromptLen %d for %q", p.PromptLen, p.Text)
		}
	}
	want := []row{
		{Text: "Write a haiku about load balancers.", OutputLen: 64},
		{Text: "Translate to French: good morning", OutputLen: 256, ExtraBody: map[string]any{"temperature": json.Number("0.7")}},
		{
			Text:      "system: You are terse.\nuser: Name three primes.",
			Messages:  []datasets.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Name three primes."}},
			OutputLen: 32, ExtraBody: map[string]any{"top_p": json.Number("0.9")},
		},
		{
			Text:      "user: What is in this picture?",
			Messages:  []datasets.Message{{Role: "user", Content: "What is in this picture?"}},
			Images:    []string{"data:image/png;base64,AAAA"},
			OutputLen: 256, ExtraBody: map[string]any{"tools": []any{map[string]any{"type": "function"}}},
		},
		{Text: "Tell me about the moon.", OutputLen: count(t, tok, "It is far away and rather dusty.", true)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("custom rows (-want +got):\n%s", diff)
	}
	if ps := generate(t, mustNew(t, "custom", o, tok), 2, 1); len(ps) != 2 {
		t.Errorf("Generate(2) gave %d rows", len(ps))
	}
}

func TestMMMU(t *testing.T) {
	tok := qwen3(t)
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 56, 84))); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(buf.Bytes())
	lines := []string{
		`{"question": "What is 2+2?", "image_1": "data:image/png;base64,` + b64 + `"}`,
		`{"question": "Which shape?", "image_1": {"bytes": "` + b64 + `", "path": null}}`,
		`{"question": "Bare?", "image_1": "` + b64 + `"}`,
	}
	path := filepath.Join(dir, "mmmu.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	o := datasets.DefaultOptions()
	o.DatasetPath, o.RandomOutputLen = path, 9
	d := mustNew(t, "mmmu", o, tok)
	ps := generate(t, d, 0, 1)
	if len(ps) != 3 {
		t.Fatalf("got %d prompts, want 3", len(ps))
	}
	for i, p := range ps {
		if !strings.HasPrefix(p.Text, "Question: ") || !strings.HasSuffix(p.Text, "\n\nAnswer: ") {
			t.Errorf("prompt %d text %q", i, p.Text)
		}
		if len(p.Images) != 1 || p.Images[0] != "data:image/png;base64,"+b64 {
			t.Errorf("prompt %d images %v", i, p.Images)
		}
		// Qwen3's tokenizer has Qwen's vision tokens: 84×56 → 3×2 patches + 2.
		if p.VisionPromptLen != 8 || p.PromptLen != p.TextPromptLen+8 || p.OutputLen != 9 {
			t.Errorf("prompt %d lengths %d = %d + %d, output %d", i, p.PromptLen, p.TextPromptLen, p.VisionPromptLen, p.OutputLen)
		}
	}
	if ps := generate(t, d, 2, 1); len(ps) != 2 || ps[0].Text == ps[1].Text {
		t.Errorf("Generate(2) did not sample two distinct rows: %d", len(ps))
	}
}

func TestFixed(t *testing.T) {
	tok := qwen3(t)
	o := datasets.DefaultOptions()
	o.FixedPrompt, o.FixedOutputLen = "Say hello.", 8
	ps := generate(t, mustNew(t, "fixed", o, tok), 64, 1)
	want := datasets.Prompt{Text: "Say hello.", PromptLen: 3, TextPromptLen: 3, OutputLen: 8}
	if len(ps) != 64 || !cmp.Equal(ps[63], want) {
		t.Errorf("fixed = %d × %+v, want 64 × %+v", len(ps), ps[63], want)
	}
	o.FixedPrompt = ""
	if _, err := datasets.New("fixed", o, tok); err == nil {
		t.Error("empty fixed prompt accepted")
	}
}

// writeTestFile writes body to dir/name and returns the path.
func writeTestFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
