package prober

import (
	"bytes"

	"github.com/servingprobe/servingprobe/internal/jsonscan"
)

// The fast path of the JSON decoders: each protocol's scanner (scanChat in
// openai_chat.go, scanCompletions in openai_completions.go, scanSGLang in
// sglang.go, scanTRT in trt.go) walks a steady-state event with a
// jsonscan.Scanner, without allocating. This file holds what they share:
// the error fields every protocol may carry, OpenAI's usage block, finish
// reasons, text parts, and the per-stream memo.
//
// Subtleness ahead: a scanner must never disagree with encoding/json,
// which stays the reference. So it only answers when it is sure, and says
// "fall back" (ok == false) for anything unusual:
//   - invalid JSON, trailing data, nesting deeper than jsonscan.MaxDepth;
//   - a key with an escape or a non-ASCII byte, or an ASCII key that
//     matches one of the struct's field names only case-insensitively
//     (encoding/json would match it);
//   - a field we decode seen twice (encoding/json merges duplicates);
//   - a field of the wrong JSON type (encoding/json reports an error), a
//     number that is not a plain integer where an int is expected;
//   - error objects, finish reasons in object form, tool calls, several
//     non-empty text parts in one chat delta, escaped finish reasons.
//
// The fallback decodes the same bytes with encoding/json, so the answer is
// always encoding/json's; FuzzScanMatchesJSON checks that whenever a
// scanner answers, encoding/json gives the same Delta. Every value a
// scanner skips is still validated, so it accepts only valid JSON.
//
// Text is returned as the raw body of the JSON string (aliasing the event's
// bytes, no copy); Delta.AppendText unescapes it into the caller's buffer.

// textPart is one piece of event text, raw.
type textPart = jsonscan.Text

// setText puts the single non-empty part into d; more than one non-empty
// part falls back (encoding/json concatenates them).
func setText(d *Delta, parts ...textPart) bool {
	n := 0
	for _, p := range parts {
		if len(p.Body) == 0 {
			continue
		}
		n++
		d.Text, d.TextRaw = p.Body, !p.Plain
	}
	return n <= 1
}

// finishField reads a finish reason (null or a string; an escaped string
// falls back).
func finishField(s *jsonscan.Scanner, dst *string) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '"' {
		return false
	}
	b, k := s.Str()
	if !k.Plain() {
		return false
	}
	*dst = internFinish(b)
	return true
}

// internFinish returns the usual finish reasons without allocating.
func internFinish(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "abort":
		return "abort"
	case "content_filter":
		return "content_filter"
	case "eos":
		return "eos"
	case "":
		return ""
	}
	return string(b)
}

// errorFields handles the errorField keys at the top level of an event: it
// returns handled when key is one of them, and ok false when the event may
// be an error (the fallback reports it). It uses bits 13 to 15 of m.
func errorFields(s *jsonscan.Scanner, key []byte, m *jsonscan.Seen) (handled, ok bool) {
	switch string(key) {
	case "error":
		return true, m.Once(13) && s.Null()
	case "object":
		if !m.Once(14) {
			return true, false
		}
		if s.Null() {
			return true, true
		}
		if s.Peek() != '"' {
			return true, false
		}
		b, k := s.Str()
		return true, k.Plain() && string(b) != "error"
	case "message":
		if !m.Once(15) {
			return true, false
		}
		if s.Null() {
			return true, true
		}
		if s.Peek() != '"' {
			return true, false
		}
		_, k := s.Str()
		return true, k != jsonscan.Bad
	}
	return false, !jsonscan.Folds(key, "error", "object", "message")
}

// usageField reads an OpenAI usage block (completions and chat) into u,
// Source set when present.
func usageField(s *jsonscan.Scanner, u *Usage) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '{' || !s.Enter() {
		return false
	}
	var m jsonscan.Seen
	var top int
	out := Usage{Source: TokenSourceUsage}
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "prompt_tokens":
			ok = m.Once(0) && s.Int(&out.PromptTokens)
		case "completion_tokens":
			ok = m.Once(1) && s.Int(&out.CompletionTokens)
		case "prompt_tokens_details":
			ok = m.Once(2) && detailsField(s, "cached_tokens", &out.CachedTokens)
		case "completion_tokens_details":
			ok = m.Once(3) && detailsField(s, "reasoning_tokens", &out.ReasoningTokens)
		case "reasoning_tokens":
			ok = m.Once(4) && s.Int(&top)
		case "total_tokens":
			ok = s.Skip()
		default:
			ok = !jsonscan.Folds(k, "prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details", "reasoning_tokens") && s.Skip()
		}
		if !ok {
			return false
		}
	}
	s.Leave()
	out.ReasoningTokens = reasoningTokens(out.ReasoningTokens, top)
	*u = out
	return true
}

// reasoningTokens is the reasoning count of a usage block: vLLM and OpenAI
// state it in completion_tokens_details, sglang at the top of usage
// (UsageInfo.reasoning_tokens in its entrypoints/openai/protocol.py, 0 by
// default, so 0 says nothing there).
func reasoningTokens(details, top int) int {
	if details > 0 {
		return details
	}
	return max(top, 0)
}

// detailsField reads one count of a details object:
// prompt_tokens_details.cached_tokens or
// completion_tokens_details.reasoning_tokens.
func detailsField(s *jsonscan.Scanner, key string, dst *int) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '{' || !s.Enter() {
		return false
	}
	var m jsonscan.Seen
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		if string(k) == key {
			ok = m.Once(0) && s.Int(dst)
		} else {
			ok = !jsonscan.Folds(k, key) && s.Skip()
		}
		if !ok {
			return false
		}
	}
	s.Leave()
	return true
}

// scanMemo makes a stream's steady state cheap. Each event of a request
// usually repeats the previous one byte for byte but for its text: same
// id, created and model, index 0, null finish_reason, null usage. The memo
// keeps the last event the scanner answered, split around its text string,
// and that event's Delta without the text.
//
// Subtleness ahead: the scanner reads left to right, and what it does at a
// byte depends only on the bytes before it; what it does after a string
// depends on the string only through the text part it returns, and the
// Delta's text is that part alone (the scan*Text functions return a part
// only then). So an event that is the remembered prefix, then a valid
// string ending exactly where the remembered suffix starts, then that
// suffix, is answered with the remembered Delta and the new text: what the
// scanner would answer, found by comparing bytes (memequal) instead of
// scanning them. FuzzScanMemo checks this against the scanner and
// encoding/json. A memo is per stream and per decoder.
type scanMemo struct {
	prefix []byte // the event up to its text's opening quote, included
	suffix []byte // the event after its text's closing quote
	delta  Delta  // the event's Delta, without its text
	ok     bool
}

// decode answers for data exactly as scan does, into *d (untouched when
// the answer is no); m may be nil. The Delta goes through a pointer
// because it is large and this is the per-token path.
func (m *scanMemo) decode(data []byte, scan func([]byte) (Delta, textPart, bool), d *Delta) bool {
	if m != nil && m.ok && m.hit(data, d) {
		return true
	}
	dd, t, ok := scan(data)
	if !ok {
		return false
	}
	*d = dd
	if m != nil && t.Set {
		end := t.Start + len(t.Body) + 1 // after the closing quote
		m.prefix = append(m.prefix[:0], data[:t.Start]...)
		m.suffix = append(m.suffix[:0], data[end:]...)
		m.delta, m.ok = dd, true
		m.delta.Text, m.delta.TextRaw = nil, false
	}
	return true
}

// hit answers for data from the memo into *d, if data is its prefix, a
// string and its suffix.
func (m *scanMemo) hit(data []byte, d *Delta) bool {
	p, q := len(m.prefix), len(data)-len(m.suffix)
	if q <= p || !bytes.Equal(data[:p], m.prefix) || !bytes.Equal(data[q:], m.suffix) {
		return false
	}
	s := jsonscan.At(data[:q], p-1) // on the opening quote
	body, kind := s.Str()
	if kind == jsonscan.Bad || s.Pos() != q {
		return false
	}
	*d = m.delta
	if len(body) > 0 {
		d.Text, d.TextRaw = body, !kind.Plain()
	}
	return true
}
