package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// What may leave the process. Everything a server sends (error bodies,
// stream errors, generated text, model ids, /server_info) passes one
// function of a Redactor before it is stored, shown, logged or used as a
// label: Sanitize for text (Redact is Sanitize without a cut), RedactJSON
// for a JSON document, Label for a label value. The order is fixed:
//
//  1. JSON escapes are decoded (decodeEscapes), so that "\u0073k-..." and
//     "sk\/..." are read as the "sk-..." and "sk/..." they spell;
//  2. every configured secret, and every run of runLen or more bytes of
//     one, becomes <secret>: a server that echoes a token minus a few
//     characters, or text that a cut has split, still shows none of it;
//  3. the text is cut to its bound, after redaction, so a cut never leaves
//     the part of a secret that redaction would have recognised whole;
//  4. a label value must then have a closed shape (Label).

// runLen is the shortest part of a secret that is redacted on its own.
// Eight bytes of a random token are about 48 bits of it: enough that a
// match is not chance in ordinary text, short enough that whatever is left
// of a token is too little to use. Secrets shorter than runLen (down to
// minSecretLen) are redacted only whole.
const runLen = 8

// Placeholder is what a secret, or a run of one, becomes.
const Placeholder = "<secret>"

// matcher finds the secrets of a Redactor, and the runs of runLen bytes or
// more of the long ones, in one pass over the text. Every runLen-byte
// window of every long secret is indexed by its bytes read as a uint64; the
// text's windows are looked up in turn, and a hit is extended for as long as
// text and secret agree. A bit set over a hash of the windows answers most
// misses before the map is consulted.
type matcher struct {
	long   []string // secrets of runLen bytes or more
	short  []string // shorter secrets and secrets with a space, matched whole
	grams  map[uint64][]gramAt
	filter [1 << 10]uint64 // 65536 bits
}

type gramAt struct{ sec, off int32 }

// spaces end a run. A header value ("Bearer sk-...") is a secret whole,
// but its scheme and the space after it are public words: a run through
// them would redact "Bearer s" of any other token, or the space before
// a credential. Secrets with a space are also matched whole, and their
// runs come from the parts between spaces (the credential, the lines of a
// PEM key).
const spaces = " \t\r\n"

func gramHash(w uint64) uint32 { return uint32((w * 0x9E3779B97F4A7C15) >> 48) }

func newMatcher(secrets []string) *matcher {
	m := &matcher{grams: map[uint64][]gramAt{}}
	for _, s := range secrets {
		if len(s) < runLen || strings.ContainsAny(s, spaces) {
			m.short = append(m.short, s)
		}
		if len(s) < runLen {
			continue
		}
		m.long = append(m.long, s)
		i := int32(len(m.long) - 1)
		for off := 0; off+runLen <= len(s); off++ {
			if strings.ContainsAny(s[off:off+runLen], spaces) {
				continue
			}
			w := window(s, off)
			m.grams[w] = append(m.grams[w], gramAt{i, int32(off)})
			h := gramHash(w)
			m.filter[h>>6] |= 1 << (h & 63)
		}
	}
	return m
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// window reads s[i:i+runLen] as a little-endian uint64.
func window(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

type span struct{ lo, hi int }

// spans returns the byte ranges of s that hold a secret or a run of one,
// sorted and merged; nil when there are none.
func (m *matcher) spans(s string) []span {
	// Extending a match stops at a space, as runs do (see spaces); whole
	// secrets with spaces are found by the second loop.
	var out []span
	add := func(lo, hi int) {
		if n := len(out); n > 0 && lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, hi)
			return
		}
		out = append(out, span{lo, hi})
	}
	if len(m.long) > 0 && len(s) >= runLen {
		w := window(s, 0)
		for i := 0; ; i++ {
			if h := gramHash(w); m.filter[h>>6]&(1<<(h&63)) != 0 {
				if n := m.longest(s, i, w); n > 0 {
					add(i, i+n)
				}
			}
			j := i + runLen
			if j >= len(s) {
				break
			}
			w = w>>8 | uint64(s[j])<<56
		}
	}
	if len(m.short) > 0 {
		var short []span
		for _, sec := range m.short {
			for from := 0; ; {
				j := strings.Index(s[from:], sec)
				if j < 0 {
					break
				}
				short = append(short, span{from + j, from + j + len(sec)})
				from += j + 1
			}
		}
		if len(short) > 0 {
			all := append(out, short...)
			slices.SortFunc(all, func(a, b span) int { return a.lo - b.lo })
			out = nil
			for _, sp := range all {
				add(sp.lo, sp.hi)
			}
		}
	}
	return out
}

// longest returns the length of the longest run of a long secret at s[i:],
// whose first runLen bytes are w; 0 if there is none.
func (m *matcher) longest(s string, i int, w uint64) int {
	best := 0
	for _, g := range m.grams[w] {
		sec, off := m.long[g.sec], int(g.off)
		n := runLen
		for i+n < len(s) && off+n < len(sec) && s[i+n] == sec[off+n] && !isSpace(s[i+n]) {
			n++
		}
		best = max(best, n)
	}
	return best
}

// redact replaces every span of s with Placeholder.
func (m *matcher) redact(s string) string {
	sp := m.spans(s)
	if len(sp) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, x := range sp {
		b.WriteString(s[at:x.lo])
		b.WriteString(Placeholder)
		at = x.hi
	}
	b.WriteString(s[at:])
	return b.String()
}

// decodeEscapes rewrites the JSON escapes of s into one canonical
// spelling: an escape of a printable character becomes that character
// (\u0073 is "s", \/ is "/", a surrogate pair is its character); a quote,
// a backslash and a control character keep an escape, the shortest one
// (\", \\, \n, \r, \t, else \u00xx), which is the spelling quoteJSON
// writes. A JSON document stays a valid JSON document with the same
// meaning, and text that is not JSON changes only where it held such an
// escape. Whatever spelling a server chose, a secret then reads as itself
// (or, holding a quote, a backslash or a control character, as its
// canonical escaped spelling, which newRedactor adds).
func decodeEscapes(s string) string {
	var b strings.Builder // used from the first escape that changes
	done := 0             // s[:done] is in b
	for i := strings.IndexByte(s, '\\'); i >= 0; {
		n, repl := escapeAt(s[i:])
		if repl != s[i:i+n] {
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[done:i])
			b.WriteString(repl)
			done = i + n
		}
		i += n
		j := strings.IndexByte(s[i:], '\\')
		if j < 0 {
			break
		}
		i += j
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// escapeAt reads the escape at the start of s (s[0] is a backslash): it
// returns how many bytes it spans and their canonical spelling.
func escapeAt(s string) (int, string) {
	if len(s) < 2 {
		return len(s), s
	}
	switch s[1] {
	case '/':
		return 2, "/"
	case 'b':
		return 2, `\u0008`
	case 'f':
		return 2, `\u000c`
	case 'u':
		r, ok := hex4(s[2:])
		if !ok {
			return 2, s[:2]
		}
		n := 6
		if utf16.IsSurrogate(r) {
			if !strings.HasPrefix(s[6:], `\u`) {
				return 6, s[:6]
			}
			lo, ok := hex4(s[8:])
			if !ok {
				return 6, s[:6]
			}
			if r = utf16.DecodeRune(r, lo); r == utf8.RuneError {
				return 6, s[:6]
			}
			n = 12
		}
		return n, string(appendQuoted(nil, string(r)))
	}
	return 2, s[:2] // \\, \", \n, \r, \t as they are; a backslash never escapes what follows
}

// appendQuoted appends s to b in the canonical escaped spelling (see
// decodeEscapes), without the surrounding quotes. s is valid UTF-8.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:4], 16, 16)
	return rune(v), err == nil
}

// Sanitize is the one gate for text that came from a server (or from
// anything else not known to be safe) on its way to a log, a file, an
// answer or a page: JSON escapes are decoded, every secret and every run
// of runLen bytes of one becomes <secret>, then the text is cut to at most
// maxBytes bytes on a rune boundary (TruncateUTF8; maxBytes <= 0 does not
// cut). Invalid UTF-8 becomes U+FFFD. A nil Redactor still decodes and cuts.
func (r *Redactor) Sanitize(s string, maxBytes int) string {
	s = decodeEscapes(s)
	if r != nil && r.m != nil {
		s = r.m.redact(s)
	}
	if maxBytes > 0 {
		return TruncateUTF8(s, maxBytes)
	}
	return s
}

// TruncateUTF8 cuts s to at most n bytes on a rune boundary, marking the
// cut with an ellipsis, and replaces invalid UTF-8, so that text from a
// server or an HTTP caller is printable and bounded wherever it is shown
// (errors, logs, API messages). Text that may hold a secret goes through
// Sanitize, which redacts before it cuts.
func TruncateUTF8(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// MaxLabelBytes bounds a label value taken from a server (a model id from
// GET /v1/models). Hugging Face ids ("org/name") are at most 96
// characters; a local path that vLLM or llama.cpp serves under its own
// name fits too.
const MaxLabelBytes = 128

// labelByte reports whether c may appear in a label value from a server:
// letters, digits and . _ - : / @ + (org/name, name:tag, paths, versions).
// No space, no quote, no backslash, no '=' and no ',': an echoed header
// ("Authorization: Bearer ...", "key=value") fails, and so do markup and
// escapes.
func labelByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '.', '_', '-', ':', '/', '@', '+':
		return true
	}
	return false
}

// LabelPlaceholder is the label value that stands for one a server sent
// that Label refused: the empty value, as if the server had named none.
const LabelPlaceholder = ""

// Label checks s, sent by a server, for use as a label value (the model
// label of a target whose model is detected). It returns s when s passes
// Sanitize unchanged (no secret, no run of one, no escape) and then has
// the closed shape of a model id: at most MaxLabelBytes of labelByte.
// Otherwise it returns LabelPlaceholder and an error that never quotes s:
// s is not known to be safe to show. A nil Redactor checks the shape only.
func (r *Redactor) Label(s string) (string, error) {
	if s == "" {
		return LabelPlaceholder, fmt.Errorf("an empty model id")
	}
	if clean := r.Sanitize(s, 0); clean != s && strings.Contains(clean, Placeholder) {
		return LabelPlaceholder, fmt.Errorf("a model id that holds a configured credential or part of one (the server echoes request headers)")
	}
	if len(s) > MaxLabelBytes {
		return LabelPlaceholder, fmt.Errorf("a model id of %d bytes (at most %d)", len(s), MaxLabelBytes)
	}
	for i := 0; i < len(s); i++ {
		if !labelByte(s[i]) {
			return LabelPlaceholder, fmt.Errorf("a model id with byte %d not a letter, digit or one of . _ - : / @ +", i)
		}
	}
	return s, nil
}
