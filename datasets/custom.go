package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// customDefaultOutputLen is sglang's openai dataset default when a row has
// no max_tokens.
const customDefaultOutputLen = 256

// Keys of a messages row that are not passed through as extra body (as in
// sglang's openai dataset), plus our own keys.
var messagesRowKeys = map[string]bool{
	"messages": true, "max_tokens": true, "max_completion_tokens": true, "model": true,
	"output_len": true, "extra_body": true,
}

var promptRowKeys = map[string]bool{"prompt": true, "output_len": true, "max_tokens": true, "extra_body": true}

// customDataset is "custom" and "openai": JSONL rows of one of three shapes
// (see the package documentation), in file order.
type customDataset struct {
	rows []Prompt
}

func newCustom(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("custom: a dataset path is required")
	}
	if err := checkOutputLenOverride(opts.SharegptOutputLen); err != nil {
		return nil, err
	}
	if opts.TokenizePrompt {
		return nil, errors.New("custom does not support tokenize prompt")
	}
	d := &customDataset{}
	err := readJSONL("custom", opts.DatasetPath, func(line []byte) error {
		p, keep, err := parseCustomRow(opts, tok, line)
		if err != nil {
			return err
		}
		if keep {
			d.rows = append(d.rows, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(d.rows) == 0 {
		return nil, fmt.Errorf("custom %s: every row was filtered out", opts.DatasetPath)
	}
	return d, nil
}

// Generate returns the first n rows in file order (all rows if n <= 0 or n
// exceeds them). r is not used: rows are not shuffled.
func (d *customDataset) Generate(n int, _ *rand.Rand) ([]Prompt, error) {
	if n <= 0 || n > len(d.rows) {
		n = len(d.rows)
	}
	out := make([]Prompt, n)
	for i := range out {
		p := d.rows[i]
		p.ExtraBody = maps.Clone(p.ExtraBody) // callers may merge into it
		out[i] = p
	}
	return out, nil
}

type customTurn struct {
	Content *string `json:"content"`
	Value   *string `json:"value"`
}

func (t customTurn) text() string {
	if t.Content != nil {
		return *t.Content
	}
	if t.Value != nil {
		return *t.Value
	}
	return ""
}

// contentPart is one element of an OpenAI content array.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

type rawMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// parseCustomRow turns one JSONL row into a prompt. keep is false for a
// conversation row that fails sglang's length filters.
func parseCustomRow(opts Options, tok Tokenizer, line []byte) (p Prompt, keep bool, err error) {
	var row map[string]json.RawMessage
	if err := decodeStrict(line, &row); err != nil {
		return p, false, err
	}
	if row == nil {
		return p, false, errors.New("row is not a JSON object")
	}
	outLen, err := rowOutputLen(row)
	if err != nil {
		return p, false, err
	}
	if opts.SharegptOutputLen > 0 {
		outLen = opts.SharegptOutputLen
	}
	if eb, ok := row["extra_body"]; ok {
		if err := decodeStrict(eb, &p.ExtraBody); err != nil || p.ExtraBody == nil {
			return p, false, errors.New("extra_body must be a JSON object")
		}
	}
	switch {
	case row["prompt"] != nil:
		for k := range row {
			if !promptRowKeys[k] {
				return p, false, fmt.Errorf("unknown field %q in a prompt row (fields: prompt, output_len, max_tokens, extra_body)", k)
			}
		}
		var prompt string
		if err := json.Unmarshal(row["prompt"], &prompt); err != nil {
			return p, false, errors.New("prompt must be a string")
		}
		if p.Text, err = transformPrompt(opts, prompt); err != nil {
			return p, false, err
		}
		ids, err := tok.Encode(p.Text, true)
		if err != nil {
			return p, false, fmt.Errorf("encode: %w", err)
		}
		p.PromptLen = len(ids)
	case row["messages"] != nil:
		if err := parseMessages(row["messages"], &p); err != nil {
			return p, false, err
		}
		for k, v := range row {
			if messagesRowKeys[k] {
				continue
			}
			var x any
			if err := decodeStrict(v, &x); err != nil {
				return p, false, err
			}
			if p.ExtraBody == nil {
				p.ExtraBody = map[string]any{}
			}
			if _, set := p.ExtraBody[k]; !set { // an explicit extra_body wins
				p.ExtraBody[k] = x
			}
		}
		if p.PromptLen, p.Text, err = countMessages(opts, tok, p.Messages); err != nil {
			return p, false, err
		}
		if err := markConversation(opts, tok, &p); err != nil {
			return p, false, err
		}
		if tools, ok := p.ExtraBody["tools"]; ok {
			// Tools count toward the input, as sglang estimates them.
			b, _ := json.Marshal(tools)
			ids, err := tok.Encode(string(b), true)
			if err != nil {
				return p, false, fmt.Errorf("encode tools: %w", err)
			}
			p.PromptLen += len(ids)
		}
	case row["conversations"] != nil || row["conversation"] != nil:
		convKey := "conversations"
		if row[convKey] == nil {
			convKey = "conversation"
		}
		var turns []customTurn
		if err := json.Unmarshal(row[convKey], &turns); err != nil {
			return p, false, fmt.Errorf("%s must be a list of turns: %w", convKey, err)
		}
		if len(turns) < 2 {
			return p, false, nil
		}
		if p.Text, err = transformPrompt(opts, turns[0].text()); err != nil {
			return p, false, err
		}
		ids, err := tok.Encode(p.Text, true)
		if err != nil {
			return p, false, fmt.Errorf("encode: %w", err)
		}
		p.PromptLen = len(ids)
		if outLen == 0 {
			cids, err := tok.Encode(turns[1].text(), true)
			if err != nil {
				return p, false, fmt.Errorf("encode: %w", err)
			}
			outLen = len(cids)
		}
		if p.PromptLen < 2 || outLen < 2 || (opts.SharegptContextLen > 0 && p.PromptLen+outLen > opts.SharegptContextLen) {
			return p, false, nil
		}
	default:
		return p, false, errors.New(`row needs "prompt", "messages" or "conversations"`)
	}
	if outLen == 0 {
		outLen = customDefaultOutputLen
	}
	p.OutputLen = outLen
	p.TextPromptLen = p.PromptLen
	return p, true, nil
}

// rowOutputLen reads output_len, else max_tokens, else max_completion_tokens
// (0 when none is set).
func rowOutputLen(row map[string]json.RawMessage) (int, error) {
	for _, k := range []string{"output_len", "max_tokens", "max_completion_tokens"} {
		if v, ok := row[k]; ok {
			var n int
			if err := json.Unmarshal(v, &n); err != nil || n < 1 {
				return 0, fmt.Errorf("%s must be a positive integer, got %s", k, v)
			}
			return n, nil
		}
	}
	return 0, nil
}

// parseMessages accepts string content and OpenAI content arrays; text
// parts are joined and image_url parts go to Prompt.Images.
func parseMessages(raw json.RawMessage, p *Prompt) error {
	var msgs []rawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return fmt.Errorf("messages must be a list of {role, content}: %w", err)
	}
	if len(msgs) == 0 {
		return errors.New("messages is empty")
	}
	for i, m := range msgs {
		if m.Role == "" {
			return fmt.Errorf("messages[%d]: role is missing", i)
		}
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			var parts []contentPart
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				return fmt.Errorf("messages[%d]: content must be a string or a list of parts", i)
			}
			var texts []string
			for j, part := range parts {
				switch part.Type {
				case "text":
					texts = append(texts, part.Text)
				case "image_url":
					if part.ImageURL == nil || part.ImageURL.URL == "" {
						return fmt.Errorf("messages[%d].content[%d]: image_url.url is missing", i, j)
					}
					p.Images = append(p.Images, part.ImageURL.URL)
				default:
					return fmt.Errorf("messages[%d].content[%d]: unsupported part type %q", i, j, part.Type)
				}
			}
			s = strings.Join(texts, "\n")
		}
		p.Messages = append(p.Messages, Message{Role: m.Role, Content: s})
	}
	return nil
}

// countMessages renders messages with the chat template (counted without
// added special tokens, as HF's apply_chat_template(tokenize=True)), or
// without one joins "role: content" lines and counts them as a prompt.
func countMessages(opts Options, tok Tokenizer, msgs []Message) (int, string, error) {
	if opts.ChatTemplate != nil {
		s, err := opts.ChatTemplate.ApplyChatTemplate(slices.Clone(msgs), true)
		if err != nil {
			return 0, "", fmt.Errorf("apply chat template: %w", err)
		}
		ids, err := tok.Encode(s, false)
		if err != nil {
			return 0, "", fmt.Errorf("encode: %w", err)
		}
		return len(ids), s, nil
	}
	lines := make([]string, len(msgs))
	for i, m := range msgs {
		lines[i] = m.Role + ": " + m.Content
	}
	s := strings.Join(lines, "\n")
	ids, err := tok.Encode(s, true)
	if err != nil {
		return 0, "", fmt.Errorf("encode: %w", err)
	}
	return len(ids), s, nil
}

// markConversation makes a messages row with several user turns a
// conversation, replayed one round per user turn (Prompt.Round), and
// counts each round's new input.
func markConversation(opts Options, tok Tokenizer, p *Prompt) error {
	var users []int
	for i, m := range p.Messages {
		if m.Role == "user" {
			users = append(users, i)
		}
	}
	if len(users) < 2 {
		return nil
	}
	p.MultiTurn = true
	p.TurnLens = make([]int, len(users))
	n, _, err := countMessages(opts, tok, p.Messages[:users[0]+1])
	if err != nil {
		return err
	}
	p.TurnLens[0] = n
	for k, i := range users[1:] {
		ids, err := tok.Encode(p.Messages[i].Content, false)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		p.TurnLens[k+1] = len(ids)
	}
	return nil
}
