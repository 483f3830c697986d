package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"

	"github.com/servingprobe/servingprobe/internal/chatmsg"
)

// ErrNoChatTemplate is returned by ApplyChatTemplate when
// tokenizer_config.json has no chat_template.
var ErrNoChatTemplate = errors.New("tokenizer has no chat_template")

// ChatTemplate is a compiled HF chat template. Rendering follows
// transformers' apply_chat_template: Jinja with trim_blocks and
// lstrip_blocks, the variables messages, add_generation_prompt, bos_token
// and eos_token, and the helpers raise_exception and strftime_now.
type ChatTemplate struct {
	tpl      *exec.Template
	bos, eos string
	now      func() time.Time
}

// NewChatTemplate compiles source. bos and eos fill bos_token and eos_token.
func NewChatTemplate(source, bos, eos string) (*ChatTemplate, error) {
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	env := &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
		Filters:           builtins.Filters,
		Tests:             builtins.Tests,
		ControlStructures: builtins.ControlStructures,
		Methods:           builtins.Methods,
	}
	sum := sha256.Sum256([]byte(source))
	id := "chat-" + hex.EncodeToString(sum[:8])
	fsLoader, err := loaders.NewFileSystemLoader("")
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	loader, err := loaders.NewShiftedLoader(id, bytes.NewReader([]byte(source)), fsLoader)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	tpl, err := exec.NewTemplate(id, cfg, loader, env)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return &ChatTemplate{tpl: tpl, bos: bos, eos: eos, now: time.Now}, nil
}

// errRaised carries a template's raise_exception message.
type errRaised struct{ msg string }

func (e errRaised) Error() string { return "chat template raised: " + e.msg }

// Render renders messages. extra adds or overrides template variables (for
// example enable_thinking for Qwen3).
func (c *ChatTemplate) Render(messages []chatmsg.Message, addGenerationPrompt bool, extra map[string]any) (string, error) {
	msgs := make([]map[string]any, len(messages))
	for i, m := range messages {
		msgs[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	var raised *errRaised
	vars := map[string]any{
		"messages":              msgs,
		"add_generation_prompt": addGenerationPrompt,
		"bos_token":             c.bos,
		"eos_token":             c.eos,
		"raise_exception": func(msg string) (string, error) {
			raised = &errRaised{msg: msg}
			return "", *raised
		},
		"strftime_now": func(format string) string {
			return strftime(c.now(), format)
		},
	}
	for k, v := range extra {
		vars[k] = v
	}
	out, err := c.tpl.ExecuteToString(exec.NewContext(vars))
	if raised != nil {
		return "", *raised
	}
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return out, nil
}

// ApplyChatTemplate renders messages with the tokenizer's default chat
// template, as transformers' apply_chat_template(tokenize=False).
func (t *Tokenizer) ApplyChatTemplate(messages []chatmsg.Message, addGenerationPrompt bool) (string, error) {
	t.chatOnce.Do(func() {
		if t.config.ChatTemplate == "" {
			t.chatErr = ErrNoChatTemplate
			return
		}
		t.chat, t.chatErr = NewChatTemplate(t.config.ChatTemplate, t.config.BOSToken, t.config.EOSToken)
	})
	if t.chatErr != nil {
		return "", t.chatErr
	}
	return t.chat.Render(messages, addGenerationPrompt, nil)
}

// strftime supports the directives chat templates use (Llama 3.1+ renders
// "%d %b %Y").
func strftime(t time.Time, format string) string {
	var b []byte
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b = append(b, format[i])
			continue
		}
		i++
		switch format[i] {
		case 'd':
			b = fmt.Appendf(b, "%02d", t.Day())
		case 'm':
			b = fmt.Appendf(b, "%02d", int(t.Month()))
		case 'Y':
			b = fmt.Appendf(b, "%d", t.Year())
		case 'y':
			b = fmt.Appendf(b, "%02d", t.Year()%100)
		case 'b':
			b = append(b, t.Month().String()[:3]...)
		case 'B':
			b = append(b, t.Month().String()...)
		case 'a':
			b = append(b, t.Weekday().String()[:3]...)
		case 'A':
			b = append(b, t.Weekday().String()...)
		case 'H':
			b = fmt.Appendf(b, "%02d", t.Hour())
		case 'M':
			b = fmt.Appendf(b, "%02d", t.Minute())
		case 'S':
			b = fmt.Appendf(b, "%02d", t.Second())
		case 'j':
			b = fmt.Appendf(b, "%03d", t.YearDay())
		case '%':
			b = append(b, '%')
		default:
			b = append(b, '%', format[i])
		}
	}
	return string(b)
}
