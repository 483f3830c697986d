package prober

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// A hand-rolled JSON field scanner for the steady-state events of the
// OpenAI, sglang and TensorRT-LLM streams.
//
// Subtleness ahead: it must never disagree with encoding/json, which stays
// the reference. So the scanner only answers when it is sure, and says
// "fall back" (ok == false) for anything unusual:
//   - invalid JSON, trailing data, nesting deeper than maxScanDepth;
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
// always encoding/json's; FuzzScanMatchesJSON checks that whenever the
// scanner answers, encoding/json gives the same Delta. Every value the
// scanner skips is still validated, so it accepts only valid JSON.
//
// Text is returned as the raw body of the JSON string (aliasing the event's
// bytes, no copy); Delta.AppendText unescapes it into the caller's buffer.

// maxScanDepth bounds the nesting the scanner follows before falling back
// (encoding/json allows 10000; real events nest four deep).
const maxScanDepth = 64

type scanner struct {
	b     []byte
	i     int
	depth int
}

// ws skips whitespace. Compact JSON has none, so the inlined check of one
// byte is the usual path.
func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	s.wsSlow()
}

//go:noinline (keeps ws inlinable)
func (s *scanner) wsSlow() {
	i, b := s.i, s.b
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return s.b[s.i]
	}
	s.wsSlow()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// strPlain marks the bytes a string body can hold without a closer look:
// anything but '"', '\\', control characters and non-ASCII.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// strKind is what str found.
type strKind uint8

const (
	strBad   strKind = iota // not a valid string
	strASCII                // no escapes, ASCII only: the body is the value
	strUTF8                 // no escapes, valid UTF-8: the body is the value
	strRaw                  // escapes or invalid UTF-8: decode with appendUnquoted
)

// plain reports whether the body is already the decoded value.
func (k strKind) plain() bool { return k == strASCII || k == strUTF8 }

// swar constants: one byte repeated over a word.
const (
	swar01 = 0x0101010101010101
	swar20 = 0x2020202020202020
	swar80 = 0x8080808080808080
	swarQ  = 0x2222222222222222 // '"'
	swarBS = 0x5c5c5c5c5c5c5c5c // '\\'
)

// str reads a string at s.i; body is what lies between the quotes.
//
// Most strings are short ASCII without escapes, so eight bytes at a time
// are checked for '"', '\\', control and non-ASCII bytes at once, with the
// usual SWAR tests for a zero byte and a byte below n. Their false
// positives lie only above a true one (borrows move up), so the lowest
// flagged byte is exactly the first special one. A string that stops at
// anything but its closing quote goes to strSlow.
func (s *scanner) str() (body []byte, kind strKind) {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '"' {
		return nil, strBad
	}
	i++
	start := i
	for {
		if i+8 > len(b) {
			for i < len(b) && strPlain[b[i]] {
				i++
			}
			break
		}
		v := binary.LittleEndian.Uint64(b[i:])
		q, bs := v^swarQ, v^swarBS
		if m := ((v-swar20)&^v | (q-swar01)&^q | (bs-swar01)&^bs | v) & swar80; m != 0 {
			i += bits.TrailingZeros64(m) >> 3
			break
		}
		i += 8
	}
	if i < len(b) && b[i] == '"' {
		s.i = i + 1
		return b[start:i], strASCII
	}
	return s.strSlow(start, i)
}

// strSlow finishes a string with escapes or non-ASCII bytes from i.
func (s *scanner) strSlow(start, i int) (body []byte, kind strKind) {
	b := s.b
	esc, high := false, false
	for i < len(b) {
		c := b[i]
		if strPlain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			body = b[start:i]
			s.i = i + 1
			switch {
			case esc:
				return body, strRaw
			case !high:
				return body, strASCII
			case utf8.Valid(body):
				return body, strUTF8
			}
			return body, strRaw
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return nil, strBad
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return nil, strBad
				}
				i += 6
			default:
				return nil, strBad
			}
		case c < 0x20:
			return nil, strBad
		default: // non-ASCII; validated by utf8.Valid at the end
			high = true
			i++
		}
	}
	return nil, strBad
}

// num reads a JSON number at s.i and returns its bytes; isInt means no
// fraction and no exponent.
func (s *scanner) num() (raw []byte, isInt, ok bool) {
	b, i := s.b, s.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return nil, false, false
	}
	isInt = true
	if i < len(b) && b[i] == '.' {
		isInt = false
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, false
		}
	}
	s.i = i
	return b[start:i], isInt, true
}

// lit reads true, false or null.
func (s *scanner) lit(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// null consumes a null if there is one.
func (s *scanner) null() bool {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	return false
}

// skip validates and skips any value.
func (s *scanner) skip() bool {
	switch s.peek() {
	case '"':
		_, k := s.str()
		return k != strBad
	case '{':
		if !s.enter() {
			return false
		}
		for first := true; ; first = false {
			_, end, ok := s.key(first)
			if !ok {
				return false
			}
			if end {
				break
			}
			if !s.skip() {
				return false
			}
		}
		s.depth--
		return true
	case '[':
		if !s.enter() {
			return false
		}
		for first := true; ; first = false {
			end, ok := s.elem(first)
			if !ok {
				return false
			}
			if end {
				break
			}
			if !s.skip() {
				return false
			}
		}
		s.depth--
		return true
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		_, _, ok := s.num()
		return ok
	}
}

// enter consumes '{' or '[' and counts the depth.
func (s *scanner) enter() bool {
	s.depth++
	if s.depth > maxScanDepth {
		return false
	}
	s.i++
	return true
}

// key reads the next key of an object whose '{' was consumed: it returns
// end at '}', else the key with s.i on its value. Keys with escapes or
// non-ASCII bytes are refused (ok false): encoding/json folds them in ways
// we do not reproduce.
func (s *scanner) key(first bool) (key []byte, end, ok bool) {
	c := s.peek()
	if c == '}' { // a trailing comma fails below, at the missing key
		s.i++
		return nil, true, true
	}
	if !first {
		if c != ',' {
			return nil, false, false
		}
		s.i++
		s.ws()
	}
	k, kind := s.str()
	if kind != strASCII {
		return nil, false, false
	}
	if s.peek() != ':' {
		return nil, false, false
	}
	s.i++
	s.ws()
	return k, false, true
}

// elem moves to the next element of an array whose '[' was consumed.
func (s *scanner) elem(first bool) (end, ok bool) {
	c := s.peek()
	if c == ']' { // a trailing comma fails at the missing value
		s.i++
		return true, true
	}
	if !first {
		if c != ',' {
			return false, false
		}
		s.i++
		s.ws()
	}
	return false, true
}

// folds reports whether key matches one of names only case-insensitively,
// which encoding/json would accept as that field.
//
// The keys servers send on every event and we ignore (id, model, index,
// logprobs...) are matched exactly before any folds call: key refuses
// non-ASCII, and two different lower-case ASCII names never fold together.
func folds(key []byte, names ...string) bool {
	for _, n := range names {
		if len(n) == len(key) && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// seen tracks the decoded fields of one object, to refuse duplicates.
type seen uint16

func (m *seen) once(bit uint) bool {
	if *m&(1<<bit) != 0 {
		return false
	}
	*m |= 1 << bit
	return true
}

// intField reads an int field: null leaves it, a plain integer sets it.
func (s *scanner) intField(dst *int) bool {
	if s.null() {
		return true
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	raw, isInt, ok := s.num()
	if !ok || !isInt || len(raw) > 18 {
		return false
	}
	n, neg := 0, raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	for _, c := range raw {
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

// floatField reads a float64 field as encoding/json does.
func (s *scanner) floatField(dst *float64) bool {
	if s.null() {
		return true
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	raw, _, ok := s.num()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}

// textField reads a *string text field: null leaves it, a string sets it
// (raw body; plain tells whether it needs unescaping).
func (s *scanner) textField(t *textPart) bool {
	if s.null() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	start := s.i + 1
	b, k := s.str()
	if k == strBad {
		return false
	}
	*t = textPart{body: b, start: start, plain: k.plain(), set: true}
	return true
}

// finishField reads an OpenAI finish_reason (null or a string).
func (s *scanner) finishField(dst *string) bool {
	if s.null() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	b, k := s.str()
	if !k.plain() {
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

// errorFields handles the errorField keys at the top level: it returns
// handled when key is one of them, and ok false when the event may be an
// error (the fallback reports it).
func (s *scanner) errorFields(key []byte, m *seen) (handled, ok bool) {
	switch string(key) {
	case "error":
		return true, m.once(13) && s.null()
	case "object":
		if !m.once(14) {
			return true, false
		}
		if s.null() {
			return true, true
		}
		if s.peek() != '"' {
			return true, false
		}
		b, k := s.str()
		return true, k.plain() && string(b) != "error"
	case "message":
		if !m.once(15) {
			return true, false
		}
		if s.null() {
			return true, true
		}
		if s.peek() != '"' {
			return true, false
		}
		_, k := s.str()
		return true, k != strBad
	}
	return false, !folds(key, "error", "object", "message")
}

// usageField reads an OpenAI usage block into u (Source set when present).
func (s *scanner) usageField(u *Usage) bool {
	if s.null() {
		return true
	}
	if s.peek() != '{' || !s.enter() {
		return false
	}
	var m seen
	out := Usage{Source: TokenSourceUsage}
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "prompt_tokens":
			ok = m.once(0) && s.intField(&out.PromptTokens)
		case "completion_tokens":
			ok = m.once(1) && s.intField(&out.CompletionTokens)
		case "prompt_tokens_details":
			ok = m.once(2) && s.detailsField(&out.CachedTokens)
		case "total_tokens", "completion_tokens_details":
			ok = s.skip()
		default:
			ok = !folds(k, "prompt_tokens", "completion_tokens", "prompt_tokens_details") && s.skip()
		}
		if !ok {
			return false
		}
	}
	s.depth--
	*u = out
	return true
}

// detailsField reads prompt_tokens_details.cached_tokens.
func (s *scanner) detailsField(cached *int) bool {
	if s.null() {
		return true
	}
	if s.peek() != '{' || !s.enter() {
		return false
	}
	var m seen
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "cached_tokens":
			ok = m.once(0) && s.intField(cached)
		default:
			ok = !folds(k, "cached_tokens") && s.skip()
		}
		if !ok {
			return false
		}
	}
	s.depth--
	return true
}

// textPart is one piece of event text, raw.
type textPart struct {
	body  []byte
	start int // where body starts in the event
	plain bool
	set   bool
}

// setText puts the single non-empty part into d; more than one non-empty
// part falls back (encoding/json concatenates them).
func setText(d *Delta, parts ...textPart) bool {
	n := 0
	for _, p := range parts {
		if len(p.body) == 0 {
			continue
		}
		n++
		d.Text, d.TextRaw = p.body, !p.plain
	}
	return n <= 1
}

// scanCompletions decodes an OpenAI completions chunk (completions, truss).
func scanCompletions(data []byte) (Delta, bool) {
	d, _, ok := scanCompletionsText(data)
	return d, ok
}

// scanCompletionsText is scanCompletions, also returning the text part of
// the first choice for scanMemo.
func scanCompletionsText(data []byte) (Delta, textPart, bool) {
	s := scanner{b: data}
	var (
		d    Delta
		text textPart
		m    seen
	)
	if s.peek() != '{' || !s.enter() {
		return Delta{}, textPart{}, false
	}
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return Delta{}, textPart{}, false
		}
		if end {
			break
		}
		switch string(k) {
		case "choices":
			ok = m.once(0) && s.choices(func(i int) bool {
				var t textPart
				var fr string
				if !s.completionChoice(&t, &fr) {
					return false
				}
				if i == 0 {
					text, d.FinishReason = t, fr
				}
				return true
			})
		case "usage":
			ok = m.once(1) && s.usageField(&d.Usage)
		case "id", "created", "model", "system_fingerprint":
			ok = s.skip()
		default:
			var handled bool
			if handled, ok = s.errorFields(k, &m); !handled && ok {
				ok = !folds(k, "choices", "usage") && s.skip()
			}
		}
		if !ok {
			return Delta{}, textPart{}, false
		}
	}
	s.depth--
	if !s.end() || !setText(&d, text) {
		return Delta{}, textPart{}, false
	}
	return d, text, true
}

// choices walks a choices array (null leaves it empty), calling each for
// every element with s on the element.
func (s *scanner) choices(each func(i int) bool) bool {
	if s.null() {
		return true
	}
	if s.peek() != '[' || !s.enter() {
		return false
	}
	for i := 0; ; i++ {
		end, ok := s.elem(i == 0)
		if !ok {
			return false
		}
		if end {
			break
		}
		if !each(i) {
			return false
		}
	}
	s.depth--
	return true
}

// completionChoice reads {"text": ..., "finish_reason": ...}; null is an
// empty choice.
func (s *scanner) completionChoice(text *textPart, fr *string) bool {
	if s.null() {
		return true
	}
	if s.peek() != '{' || !s.enter() {
		return false
	}
	var m seen
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "text":
			// A string field: null leaves it empty.
			ok = m.once(0) && s.textField(text)
		case "finish_reason":
			ok = m.once(1) && s.finishField(fr)
		case "index", "logprobs", "stop_reason", "matched_stop":
			ok = s.skip()
		default:
			ok = !folds(k, "text", "finish_reason") && s.skip()
		}
		if !ok {
			return false
		}
	}
	s.depth--
	return true
}

// scanChat decodes an OpenAI chat chunk.
func scanChat(data []byte) (Delta, bool) {
	d, _, ok := scanChatText(data)
	return d, ok
}

// scanChatText is scanChat, also returning for scanMemo the text part of
// the first choice that is set when every other part is empty (the Delta's
// text then depends on that part alone); otherwise an unset part.
func scanChatText(data []byte) (Delta, textPart, bool) {
	s := scanner{b: data}
	var (
		d     Delta
		parts [6]textPart // delta's reasoning_content, reasoning, content; then message's
		m     seen
	)
	if s.peek() != '{' || !s.enter() {
		return Delta{}, textPart{}, false
	}
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return Delta{}, textPart{}, false
		}
		if end {
			break
		}
		switch string(k) {
		case "choices":
			ok = m.once(0) && s.choices(func(i int) bool {
				var p [6]textPart
				var fr string
				if !s.chatChoice(&p, &fr) {
					return false
				}
				if i == 0 {
					parts, d.FinishReason = p, fr
				}
				return true
			})
		case "usage":
			ok = m.once(1) && s.usageField(&d.Usage)
		case "id", "created", "model", "system_fingerprint":
			ok = s.skip()
		default:
			var handled bool
			if handled, ok = s.errorFields(k, &m); !handled && ok {
				ok = !folds(k, "choices", "usage") && s.skip()
			}
		}
		if !ok {
			return Delta{}, textPart{}, false
		}
	}
	s.depth--
	if !s.end() || !setText(&d, parts[:]...) {
		return Delta{}, textPart{}, false
	}
	var memo textPart
	for _, p := range parts {
		switch {
		case len(p.body) > 0:
			return d, p, true // setText saw no other non-empty part
		case p.set:
			memo = p
		}
	}
	return d, memo, true
}

// chatChoice reads {"delta": {...}, "message": {...}, "finish_reason": ...}.
func (s *scanner) chatChoice(parts *[6]textPart, fr *string) bool {
	if s.null() {
		return true
	}
	if s.peek() != '{' || !s.enter() {
		return false
	}
	var m seen
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "delta":
			ok = m.once(0) && s.chatDelta((*[3]textPart)(parts[0:3]))
		case "message":
			ok = m.once(1) && s.chatDelta((*[3]textPart)(parts[3:6]))
		case "finish_reason":
			ok = m.once(2) && s.finishField(fr)
		case "index", "logprobs", "stop_reason", "matched_stop":
			ok = s.skip()
		default:
			ok = !folds(k, "delta", "message", "finish_reason") && s.skip()
		}
		if !ok {
			return false
		}
	}
	s.depth--
	return true
}

// chatDelta reads reasoning_content, reasoning and content; tool calls
// other than null or [] fall back.
func (s *scanner) chatDelta(p *[3]textPart) bool {
	if s.null() {
		return true
	}
	if s.peek() != '{' || !s.enter() {
		return false
	}
	var m seen
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "reasoning_content":
			ok = m.once(0) && s.textField(&p[0])
		case "reasoning":
			ok = m.once(1) && s.textField(&p[1])
		case "content":
			ok = m.once(2) && s.textField(&p[2])
		case "tool_calls":
			ok = m.once(3) && s.emptyArray()
		case "role":
			ok = s.skip()
		default:
			ok = !folds(k, "reasoning_content", "reasoning", "content", "tool_calls") && s.skip()
		}
		if !ok {
			return false
		}
	}
	s.depth--
	return true
}

// emptyArray accepts null or [].
func (s *scanner) emptyArray() bool {
	if s.null() {
		return true
	}
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() != ']' {
		return false
	}
	s.i++
	return true
}

// scanSGLang decodes an sglang /generate chunk.
func scanSGLang(data []byte) (Delta, bool) {
	s := scanner{b: data}
	var (
		d    = Delta{Cumulative: true}
		text textPart
		m    seen
	)
	if s.peek() != '{' || !s.enter() {
		return Delta{}, false
	}
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return Delta{}, false
		}
		if end {
			break
		}
		switch string(k) {
		case "text":
			ok = m.once(0) && s.textField(&text)
		case "meta_info":
			ok = m.once(1) && s.metaInfo(&d)
		default:
			var handled bool
			if handled, ok = s.errorFields(k, &m); !handled && ok {
				ok = !folds(k, "text", "meta_info") && s.skip()
			}
		}
		if !ok {
			return Delta{}, false
		}
	}
	s.depth--
	if !s.end() || !setText(&d, text) {
		return Delta{}, false
	}
	return d, true
}

// metaInfo reads sglang's meta_info; finish_reason other than null or a
// plain string falls back.
func (s *scanner) metaInfo(d *Delta) bool {
	if s.null() {
		return true
	}
	if s.peek() != '{' || !s.enter() {
		return false
	}
	var m seen
	u := Usage{Source: TokenSourceMetaInfo}
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "finish_reason":
			ok = m.once(0) && s.finishField(&d.FinishReason)
		case "prompt_tokens":
			ok = m.once(1) && s.intField(&u.PromptTokens)
		case "completion_tokens":
			ok = m.once(2) && s.intField(&u.CompletionTokens)
		case "cached_tokens":
			ok = m.once(3) && s.intField(&u.CachedTokens)
		case "spec_accept_length":
			ok = m.once(4) && s.floatField(&d.SpecAcceptLength)
		case "id", "weight_version", "e2e_latency":
			ok = s.skip()
		default:
			ok = !folds(k, "finish_reason", "prompt_tokens", "completion_tokens", "cached_tokens", "spec_accept_length") && s.skip()
		}
		if !ok {
			return false
		}
	}
	s.depth--
	d.Usage = u
	return true
}

// scanTRT decodes a generate_stream event.
func scanTRT(data []byte) (Delta, bool) {
	d, _, ok := scanTRTText(data)
	return d, ok
}

// scanTRTText is scanTRT, also returning text_output for scanMemo.
func scanTRTText(data []byte) (Delta, textPart, bool) {
	s := scanner{b: data}
	var (
		text   textPart
		m      seen
		tokens int
	)
	if s.peek() != '{' || !s.enter() {
		return Delta{}, textPart{}, false
	}
	for first := true; ; first = false {
		k, end, ok := s.key(first)
		if !ok {
			return Delta{}, textPart{}, false
		}
		if end {
			break
		}
		switch string(k) {
		case "text_output":
			ok = m.once(0) && s.textField(&text)
		case "output_log_probs":
			ok = m.once(1) && s.logProbCount(&tokens)
		case "model_name", "model_version", "sequence_end", "sequence_id", "sequence_start":
			ok = s.skip()
		default:
			var handled bool
			if handled, ok = s.errorFields(k, &m); !handled && ok {
				ok = !folds(k, "text_output", "output_log_probs") && s.skip()
			}
		}
		if !ok {
			return Delta{}, textPart{}, false
		}
	}
	s.depth--
	if !s.end() {
		return Delta{}, textPart{}, false
	}
	if !text.set {
		return Delta{}, text, true
	}
	return Delta{Text: text.body, TextRaw: !text.plain, Tokens: max(tokens, 1)}, text, true
}

// logProbCount counts the entries of a flat output_log_probs array into n;
// a scalar or null leaves n alone, and a nested array (one row per beam)
// falls back.
func (s *scanner) logProbCount(n *int) bool {
	if s.peek() != '[' {
		return s.skip()
	}
	if !s.enter() {
		return false
	}
	for first := true; ; first = false {
		end, ok := s.elem(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		if c := s.peek(); c == '[' || c == '{' || !s.skip() {
			return false
		}
		*n++
	}
	s.depth--
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
	if m != nil && t.set {
		end := t.start + len(t.body) + 1 // after the closing quote
		m.prefix = append(m.prefix[:0], data[:t.start]...)
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
	s := scanner{b: data[:q], i: p - 1} // on the opening quote
	body, kind := s.str()
	if kind == strBad || s.i != q {
		return false
	}
	*d = m.delta
	if len(body) > 0 {
		d.Text, d.TextRaw = body, !kind.plain()
	}
	return true
}

// appendUnquoted appends the decoded value of a JSON string body (already
// validated) to dst, exactly as encoding/json decodes it: invalid UTF-8 and
// unpaired surrogates become U+FFFD.
func appendUnquoted(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return dst
			}
			switch s[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := getu4(s[i:])
				if rr < 0 {
					return dst
				}
				i += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[i:])); dec != unicode.ReplacementChar {
						i += 6
						dst = utf8.AppendRune(dst, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, rr)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, s[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(s) && s[j] < utf8.RuneSelf && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(s[i:])
			i += size
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
