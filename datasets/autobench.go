package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// autobenchDefaultOutputLen is sglang's autobench output length when
// neither --sharegpt-output-len nor the row sets one.
const autobenchDefaultOutputLen = 256

// autobenchReserved are the keys of an autobench row that are not passed
// through to the request body (sglang's AUTOBENCH_RESERVED_FIELDS).
var autobenchReserved = map[string]bool{
	"prompt": true, "messages": true, "prompt_origin": true, "output_len": true, "max_tokens": true,
	"max_completion_tokens": true, "completion_tokens": true, "prompt_len": true, "text_prompt_len": true,
	"vision_prompt_len": true, "image_data": true, "timestamp": true, "routing_key": true, "metadata": true,
	"extra_request_body": true, "param_send": true,
}

// autobench is "autobench": sglang's auto-benchmark JSONL, in file order.
// A row's prompt is, in sglang's order of preference: "messages" (a list,
// or a JSON string of one), "prompt" (messages, a list of user turns or of
// per-round message lists, token ids, or text), "prompt_origin"
// (messages), or the legacy "system" plus "content" turns. Its length is
// "prompt_len" when the row states one; its output length is
// --sharegpt-output-len, else output_len, max_tokens,
// max_completion_tokens or completion_tokens, else 256. Every key sglang
// does not reserve goes into the request body, with "param_send" below
// them and "extra_request_body" above.
type autobench struct {
	rows []Prompt
}

func newAutobench(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("autobench: a dataset path is required")
	}
	d := &autobench{}
	err := readJSONL("autobench", opts.DatasetPath, func(line []byte) error {
		p, err := parseAutobenchRow(opts, tok, line)
		if err != nil {
			return err
		}
		d.rows = append(d.rows, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Generate returns the first n rows (all if n <= 0 or n exceeds them).
func (d *autobench) Generate(n int, _ *rand.Rand) ([]Prompt, error) {
	if n <= 0 || n > len(d.rows) {
		n = len(d.rows)
	}
	out := make([]Prompt, n)
	for i := range out {
		out[i] = d.rows[i]
		out[i].ExtraBody = maps.Clone(d.rows[i].ExtraBody)
	}
	return out, nil
}

// loadJSONIfNeeded is sglang's _load_json_if_needed: a string that starts
// with [ or { and parses is the value it encodes.
func loadJSONIfNeeded(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw
	}
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '[' && t[0] != '{') || !json.Valid([]byte(t)) {
		return raw
	}
	return json.RawMessage(t)
}

// autobenchMessages reads a non-empty list of {role, content} objects
// with non-null content; ok is false for anything else.
func autobenchMessages(raw json.RawMessage) (msgs json.RawMessage, ok bool) {
	raw = loadJSONIfNeeded(raw)
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, false
	}
	for _, m := range list {
		if _, has := m["role"]; !has {
			return nil, false
		}
		if c, has := m["content"]; !has || bytes.Equal(c, []byte("null")) {
			return nil, false
		}
	}
	return raw, true
}

func parseAutobenchRow(opts Options, tok Tokenizer, line []byte) (Prompt, error) {
	var p Prompt
	var row map[string]json.RawMessage
	if err := decodeStrict(line, &row); err != nil {
		return p, err
	}
	if row == nil {
		return p, errors.New("row is not a JSON object")
	}
	kind, err := autobenchPrompt(tok, row, &p)
	if err != nil {
		return p, err
	}
	if err := autobenchLens(opts, tok, row, kind, &p); err != nil {
		return p, err
	}
	p.OutputLen = opts.SharegptOutputLen
	for _, k := range []string{"output_len", "max_tokens", "max_completion_tokens", "completion_tokens"} {
		if p.OutputLen > 0 {
			break
		}
		if v, ok := row[k]; ok {
			var f float64
			if json.Unmarshal(v, &f) == nil {
				p.OutputLen = int(f)
			}
		}
	}
	if p.OutputLen <= 0 {
		p.OutputLen = autobenchDefaultOutputLen
	}
	if v, ok := row["image_data"]; ok {
		var one string
		var many []string
		switch {
		case json.Unmarshal(v, &one) == nil && one != "":
			p.Images = []string{one}
		case json.Unmarshal(v, &many) == nil:
			p.Images = many
		}
	}
	if v, ok := row["timestamp"]; ok {
		var ms float64
		if json.Unmarshal(v, &ms) == nil {
			// Milliseconds, as mooncake's trace timestamps.
			p.Timestamp = time.Duration(math.Round(ms * float64(time.Millisecond)))
		}
	}
	if v, ok := row["routing_key"]; ok {
		_ = json.Unmarshal(v, &p.RoutingKey)
	}
	p.ExtraBody, err = autobenchExtra(row)
	return p, err
}

// autobenchPrompt fills p's prompt from the row and says which kind it is.
func autobenchPrompt(tok Tokenizer, row map[string]json.RawMessage, p *Prompt) (string, error) {
	if v, ok := row["messages"]; ok {
		if msgs, ok := autobenchMessages(v); ok {
			return "messages", parseMessages(msgs, p)
		}
	}
	if v, ok := row["prompt"]; ok && !bytes.Equal(v, []byte("null")) {
		v = loadJSONIfNeeded(v)
		if msgs, ok := autobenchMessages(v); ok {
			return "messages", parseMessages(msgs, p)
		}
		var turns []string
		if json.Unmarshal(v, &turns) == nil && len(turns) > 0 {
			// A list of user turns: one round each.
			for _, t := range turns {
				p.RoundStarts = append(p.RoundStarts, len(p.Messages))
				p.Messages = append(p.Messages, Message{Role: "user", Content: t})
			}
			p.MultiTurn = true
			return "multi_turn", nil
		}
		var groups []json.RawMessage
		if json.Unmarshal(v, &groups) == nil && len(groups) > 0 && allMessageLists(groups) {
			// Several messages per round (tool observations, say).
			for _, g := range groups {
				var q Prompt
				if err := parseMessages(g, &q); err != nil {
					return "", err
				}
				p.RoundStarts = append(p.RoundStarts, len(p.Messages))
				p.Messages = append(p.Messages, q.Messages...)
				p.Images = append(p.Images, q.Images...)
			}
			p.MultiTurn = true
			return "multi_turn", nil
		}
		var ids []int
		if json.Unmarshal(v, &ids) == nil && len(ids) > 0 {
			p.IDs = ids
			text, err := tok.Decode(ids, false)
			if err != nil {
				return "", fmt.Errorf("decode: %w", err)
			}
			p.Text = text
			return "token_ids", nil
		}
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			p.Text = s
			return "prompt", nil
		}
	}
	if v, ok := row["prompt_origin"]; ok {
		if msgs, ok := autobenchMessages(v); ok {
			return "messages", parseMessages(msgs, p)
		}
	}
	if _, ok := row["system"]; ok {
		if c, ok := row["content"]; ok {
			var items []json.RawMessage
			if json.Unmarshal(c, &items) == nil && len(items) > 0 {
				turns := make([]string, len(items))
				for i, it := range items {
					turns[i] = pyStr(it)
				}
				// An even count ends with the assistant's reply, dropped.
				if len(turns)%2 == 0 {
					turns = turns[:len(turns)-1]
				}
				if sys := pyStr(row["system"]); sys != "" && sys != "None" && sys != "False" && sys != "0" {
					p.Messages = append(p.Messages, Message{Role: "system", Content: sys})
				}
				for i, t := range turns {
					role := "user"
					if i%2 == 1 {
						role = "assistant"
					}
					p.Messages = append(p.Messages, Message{Role: role, Content: t})
				}
				return "messages", nil
			}
		}
	}
	return "", errors.New("unsupported auto benchmark row: missing prompt/messages")
}

func allMessageLists(groups []json.RawMessage) bool {
	for _, g := range groups {
		var list []map[string]json.RawMessage
		if json.Unmarshal(g, &list) != nil || len(list) == 0 {
			return false
		}
		for _, m := range list {
			_, r := m["role"]
			_, c := m["content"]
			if !r || !c {
				return false
			}
		}
	}
	return true
}

// pyStr is Python's str() of a JSON scalar, as sglang applies to legacy
// turns: strings as they are, other values as their JSON text.
func pyStr(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// autobenchLens sets the prompt's lengths: the row's prompt_len (with
// text_prompt_len and vision_prompt_len) when stated, else counted by
// kind as sglang does (a multi-turn prompt has no static length; its
// rounds are counted for the totals only).
func autobenchLens(opts Options, tok Tokenizer, row map[string]json.RawMessage, kind string, p *Prompt) error {
	if kind == "messages" {
		n, text, err := countMessages(opts, tok, p.Messages)
		if err != nil {
			return err
		}
		p.PromptLen, p.Text = n, text
		if opts.ChatTemplate == nil && len(p.Messages) > 0 {
			p.Text = p.Messages[len(p.Messages)-1].Content
		}
	}
	switch kind {
	case "prompt":
		ids, err := tok.Encode(p.Text, false)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		p.PromptLen = len(ids)
	case "token_ids":
		p.PromptLen = len(p.IDs)
	case "multi_turn":
		if err := countRounds(opts, tok, p); err != nil {
			return err
		}
	}
	p.TextPromptLen = p.PromptLen
	if v, ok := row["prompt_len"]; ok && !bytes.Equal(v, []byte("null")) {
		var n float64
		if err := json.Unmarshal(v, &n); err != nil {
			return fmt.Errorf("prompt_len must be a number, got %s", v)
		}
		p.PromptLen, p.TextPromptLen = int(n), int(n)
		if t, ok := row["text_prompt_len"]; ok && json.Unmarshal(t, &n) == nil {
			p.TextPromptLen = int(n)
		}
		if t, ok := row["vision_prompt_len"]; ok && json.Unmarshal(t, &n) == nil {
			p.VisionPromptLen = int(n)
		}
	}
	return nil
}

// autobenchExtra is sglang's _collect_extra_request_body: param_send (an
// object or its JSON string), then every unreserved key, then
// extra_request_body.
func autobenchExtra(row map[string]json.RawMessage) (map[string]any, error) {
	extra := map[string]any{}
	merge := func(raw json.RawMessage) {
		var m map[string]any
		if decodeStrict(loadJSONIfNeeded(raw), &m) == nil {
			maps.Copy(extra, m)
		}
	}
	if v, ok := row["param_send"]; ok {
		merge(v)
	}
	for k, v := range row {
		if autobenchReserved[k] {
			continue
		}
		var x any
		if err := decodeStrict(v, &x); err != nil {
			return nil, err
		}
		extra[k] = x
	}
	if v, ok := row["extra_request_body"]; ok {
		merge(v)
	}
	if len(extra) == 0 {
		return nil, nil
	}
	return extra, nil
}
