package jsonscan

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

// MaxDepth bounds the nesting a Scanner follows before it fails
// (encoding/json allows 10000; real events nest four deep).
const MaxDepth = 64

// Scanner reads one JSON document. The zero value is not useful; make one
// with New or At. It is a value type so that a decoder keeps it on its
// stack.
type Scanner struct {
	b     []byte
	i     int
	depth int
}

// New returns a scanner at the start of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// At returns a scanner on b at offset i, at depth 0 (to re-read one value,
// such as a string, in the middle of an event).
func At(b []byte, i int) Scanner { return Scanner{b: b, i: i} }

// Pos is the offset of the next unread byte.
func (s *Scanner) Pos() int { return s.i }

// WS skips whitespace. Compact JSON has none, so the inlined check of one
// byte is the usual path.
func (s *Scanner) WS() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	s.wsSlow()
}

//go:noinline (keeps WS inlinable)
func (s *Scanner) wsSlow() {
	i, b := s.i, s.b
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// Peek returns the next non-space byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return s.b[s.i]
	}
	s.wsSlow()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// End reports whether only whitespace is left.
func (s *Scanner) End() bool {
	s.WS()
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

// Kind is what Str found.
type Kind uint8

// The kinds of string literal.
const (
	Bad   Kind = iota // not a valid string
	ASCII             // no escapes, ASCII only: the body is the value
	UTF8              // no escapes, valid UTF-8: the body is the value
	Raw               // escapes or invalid UTF-8: decode with AppendUnquoted
)

// Plain reports whether the body is already the decoded value.
func (k Kind) Plain() bool { return k == ASCII || k == UTF8 }

// swar constants: one byte repeated over a word.
const (
	swar01 = 0x0101010101010101
	swar20 = 0x2020202020202020
	swar80 = 0x8080808080808080
	swarQ  = 0x2222222222222222 // '"'
	swarBS = 0x5c5c5c5c5c5c5c5c // '\\'
)

// Str reads a string at the current offset (no whitespace skipped); body
// is what lies between the quotes.
//
// Most strings are short ASCII without escapes, so eight bytes at a time
// are checked for '"', '\\', control and non-ASCII bytes at once, with the
// usual SWAR tests for a zero byte and a byte below n. Their false
// positives lie only above a true one (borrows move up), so the lowest
// flagged byte is exactly the first special one. A string that stops at
// anything but its closing quote goes to strSlow.
func (s *Scanner) Str() (body []byte, kind Kind) {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '"' {
		return nil, Bad
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
		return b[start:i], ASCII
	}
	return s.strSlow(start, i)
}

// strSlow finishes a string with escapes or non-ASCII bytes from i.
func (s *Scanner) strSlow(start, i int) (body []byte, kind Kind) {
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
				return body, Raw
			case !high:
				return body, ASCII
			case utf8.Valid(body):
				return body, UTF8
			}
			return body, Raw
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return nil, Bad
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return nil, Bad
				}
				i += 6
			default:
				return nil, Bad
			}
		case c < 0x20:
			return nil, Bad
		default: // non-ASCII; validated by utf8.Valid at the end
			high = true
			i++
		}
	}
	return nil, Bad
}

// Num reads a JSON number at the current offset and returns its bytes;
// isInt means no fraction and no exponent.
func (s *Scanner) Num() (raw []byte, isInt, ok bool) {
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

// Lit reads the literal word (true, false or null) at the current offset.
func (s *Scanner) Lit(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// Null consumes a null if there is one.
func (s *Scanner) Null() bool {
	if s.Peek() == 'n' {
		return s.Lit("null")
	}
	return false
}

// Skip validates and skips any value.
func (s *Scanner) Skip() bool {
	switch s.Peek() {
	case '"':
		_, k := s.Str()
		return k != Bad
	case '{':
		if !s.Enter() {
			return false
		}
		for first := true; ; first = false {
			_, _, end, ok := s.Member(first)
			if !ok {
				return false
			}
			if end {
				break
			}
			if !s.Skip() {
				return false
			}
		}
		s.Leave()
		return true
	case '[':
		if !s.Enter() {
			return false
		}
		for first := true; ; first = false {
			end, ok := s.Elem(first)
			if !ok {
				return false
			}
			if end {
				break
			}
			if !s.Skip() {
				return false
			}
		}
		s.Leave()
		return true
	case 't':
		return s.Lit("true")
	case 'f':
		return s.Lit("false")
	case 'n':
		return s.Lit("null")
	default:
		_, _, ok := s.Num()
		return ok
	}
}

// Span moves past one value without validating it: it finds where the
// value ends, for a reader that validates the bytes it keeps later (the
// tokenizer splits a tokenizer.json into members, then scans or decodes,
// and so validates, each one it uses). On valid JSON it stops where Skip
// would, several times faster on a large value: a string is a search for
// its closing quote. On invalid JSON it may stop anywhere or fail; what
// it passed over is not known to be JSON.
func (s *Scanner) Span() bool {
	switch s.Peek() {
	case '"':
		return s.spanStr()
	case '{', '[':
		for depth := 0; s.i < len(s.b); {
			switch s.b[s.i] {
			case '"':
				if !s.spanStr() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default: // a number or a literal word: up to the next delimiter
		start := s.i
		for s.i < len(s.b) && !spanEnd[s.b[s.i]] {
			s.i++
		}
		return s.i > start
	}
}

// spanEnd marks the bytes that end a number or a literal word.
var spanEnd = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\n': true, '\r': true}

// spanStr moves past the string whose opening quote is at the offset: to
// the first quote after it that no odd run of backslashes escapes.
func (s *Scanner) spanStr() bool {
	b, open := s.b, s.i
	for i := open + 1; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return false
		}
		i += j
		n := 0
		for k := i - 1; k > open && b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			s.i = i
			return true
		}
	}
}

// Enter consumes the '{' or '[' at the current offset and counts the
// depth; it fails past MaxDepth. The caller has checked the byte with
// Peek (`s.Peek() != '{' || !s.Enter()` is the usual guard: Peek is not
// inlinable, so a helper wrapping both would add a call per object).
func (s *Scanner) Enter() bool {
	s.depth++
	if s.depth > MaxDepth {
		return false
	}
	s.i++
	return true
}

// Leave counts the end of an object or array that Key or Elem consumed.
func (s *Scanner) Leave() { s.depth-- }

// Key reads the next key of an object whose '{' was consumed: it returns
// end at '}', else the key with the offset on its value. Keys with escapes
// or non-ASCII bytes are refused (ok false): encoding/json folds them in
// ways we do not reproduce.
func (s *Scanner) Key(first bool) (key []byte, end, ok bool) {
	c := s.Peek()
	if c == '}' { // a trailing comma fails below, at the missing key
		s.i++
		return nil, true, true
	}
	if !first {
		if c != ',' {
			return nil, false, false
		}
		s.i++
		s.WS()
	}
	k, kind := s.Str()
	if kind != ASCII {
		return nil, false, false
	}
	if s.Peek() != ':' {
		return nil, false, false
	}
	s.i++
	s.WS()
	return k, false, true
}

// Member reads the next key of an object whose '{' was consumed, as Key
// does, but takes any valid key: its body comes with its Kind (decode a
// Raw one with AppendUnquoted). Skip uses it, since a skipped value's keys
// are never matched; so do readers of objects keyed by data (a
// tokenizer's vocabulary), which match nothing by name.
func (s *Scanner) Member(first bool) (key []byte, kind Kind, end, ok bool) {
	c := s.Peek()
	if c == '}' { // a trailing comma fails below, at the missing key
		s.i++
		return nil, Bad, true, true
	}
	if !first {
		if c != ',' {
			return nil, Bad, false, false
		}
		s.i++
		s.WS()
	}
	k, kind := s.Str()
	if kind == Bad || s.Peek() != ':' {
		return nil, Bad, false, false
	}
	s.i++
	s.WS()
	return k, kind, false, true
}

// Elem moves to the next element of an array whose '[' was consumed: it
// returns end at ']'.
func (s *Scanner) Elem(first bool) (end, ok bool) {
	c := s.Peek()
	if c == ']' { // a trailing comma fails at the missing value
		s.i++
		return true, true
	}
	if !first {
		if c != ',' {
			return false, false
		}
		s.i++
		s.WS()
	}
	return false, true
}

// Array walks an array (null leaves it empty), calling each for every
// element with the scanner on the element; each must consume it.
func (s *Scanner) Array(each func(i int) bool) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '[' || !s.Enter() {
		return false
	}
	for i := 0; ; i++ {
		end, ok := s.Elem(i == 0)
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
	s.Leave()
	return true
}

// EmptyArray accepts null or [].
func (s *Scanner) EmptyArray() bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '[' {
		return false
	}
	s.i++
	if s.Peek() != ']' {
		return false
	}
	s.i++
	return true
}

// Folds reports whether key matches one of names only case-insensitively,
// which encoding/json would accept as that field.
//
// The keys servers send on every event and decoders ignore (id, model,
// index, logprobs...) are best matched exactly before any Folds call: Key
// refuses non-ASCII, and two different lower-case ASCII names never fold
// together.
func Folds(key []byte, names ...string) bool {
	for _, n := range names {
		if len(n) == len(key) && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// Seen tracks the decoded fields of one object, to refuse duplicates
// (encoding/json merges them).
type Seen uint16

// Once marks field bit as seen; it reports false if it already was.
func (m *Seen) Once(bit uint) bool {
	if *m&(1<<bit) != 0 {
		return false
	}
	*m |= 1 << bit
	return true
}

// Int reads an int field: null leaves dst, a plain integer of at most 18
// digits sets it; anything else fails.
func (s *Scanner) Int(dst *int) bool {
	if s.Null() {
		return true
	}
	if c := s.Peek(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	raw, isInt, ok := s.Num()
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

// Float reads a float64 field as encoding/json does: null leaves dst.
func (s *Scanner) Float(dst *float64) bool {
	if s.Null() {
		return true
	}
	if c := s.Peek(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	raw, _, ok := s.Num()
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

// Text is one string value, raw: the body of its literal.
type Text struct {
	Body  []byte
	Start int  // where Body starts in the scanned bytes
	Plain bool // Body is the value; else decode it with AppendUnquoted
	Set   bool // the field held a string (not null, not absent)
}

// Text reads a string field that may be null: null leaves t, a string sets
// it.
func (s *Scanner) Text(t *Text) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '"' {
		return false
	}
	start := s.i + 1
	b, k := s.Str()
	if k == Bad {
		return false
	}
	*t = Text{Body: b, Start: start, Plain: k.Plain(), Set: true}
	return true
}

// AppendUnquoted appends the decoded value of a JSON string body (already
// validated by Str) to dst, exactly as encoding/json decodes it: invalid
// UTF-8 and unpaired surrogates become U+FFFD.
func AppendUnquoted(dst, s []byte) []byte {
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
