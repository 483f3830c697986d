package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/internal/chatmsg"
)

// The expected strings come from @huggingface/jinja rendering the same
// template (testdata/gen/gen.mjs).
func TestChatTemplateQwen3(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "qwen3", "chat_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name                string            `json:"name"`
		Messages            []chatmsg.Message `json:"messages"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
		Want                string            `json:"want"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	tok := qwen3(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := tok.ApplyChatTemplate(c.Messages, c.AddGenerationPrompt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.Want, got); diff != "" {
				t.Errorf("ApplyChatTemplate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatTemplateHelpers(t *testing.T) {
	for _, tc := range []struct {
		name, src, want, wantErr string
	}{
		{"bos eos", "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}", "<s>hi</s>", ""},
		{"generation prompt", "{% if add_generation_prompt %}GEN{% endif %}", "GEN", ""},
		{"raise", "{{ raise_exception('bad role') }}", "", "chat template raised: bad role"},
		{"strftime", "{{ strftime_now('%d %b %Y') }}", "02 Jan 2026", ""},
		{"trim blocks", "{% for m in messages %}\n  {{ m.role }}\n{% endfor %}", "  user\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, err := NewChatTemplate(tc.src, "<s>", "</s>")
			if err != nil {
				t.Fatal(err)
			}
			ct.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
			got, err := ct.Render([]chatmsg.Message{{Role: "user", Content: "hi"}}, true, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Render() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Render() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNoChatTemplate(t *testing.T) {
	tok, err := New(minimal(`{"type":"BPE","vocab":{},"merges":[]}`, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tok.ApplyChatTemplate(nil, true); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("ApplyChatTemplate() error = %v, want ErrNoChatTemplate", err)
	}
}
