package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// byteToRune is GPT-2's bytes_to_unicode: printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100 upwards in byte order, so every
// byte has a visible, non-space symbol.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := range 256 {
		if '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// decoder is HF's decode_chain: tokens in, tokens out.
type decoder func([]string) []string

func parseDecoder(raw json.RawMessage) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch t.Type {
	case "ByteLevel":
		return decodeByteLevel, nil
	case "ByteFallback":
		return decodeByteFallback, nil
	case "Fuse":
		return func(toks []string) []string { return []string{strings.Join(toks, "")} }, nil
	case "Metaspace":
		var m struct {
			Replacement    string  `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("decoder Metaspace: %w", err)
		}
		ms, err := newMetaspace(m.Replacement, m.PrependScheme, m.AddPrefixSpace)
		if err != nil {
			return nil, err
		}
		return ms.decode, nil
	case "Replace":
		var r struct {
			Pattern patternJSON `json:"pattern"`
			Content string      `json:"content"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decoder Replace: %w", err)
		}
		f, err := replacer(r.Pattern, r.Content)
		if err != nil {
			return nil, err
		}
		return func(toks []string) []string {
			for i, t := range toks {
				toks[i] = f(t)
			}
			return toks
		}, nil
	case "Strip":
		var s struct {
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("decoder Strip: %w", err)
		}
		return func(toks []string) []string {
			for i, t := range toks {
				for range s.Start {
					t2, ok := strings.CutPrefix(t, s.Content)
					if !ok {
						break
					}
					t = t2
				}
				for range s.Stop {
					t2, ok := strings.CutSuffix(t, s.Content)
					if !ok {
						break
					}
					t = t2
				}
				toks[i] = t
			}
			return toks
		}, nil
	case "Sequence":
		var seq struct {
			Decoders []json.RawMessage `json:"decoders"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("decoder Sequence: %w", err)
		}
		var ds []decoder
		for _, r := range seq.Decoders {
			d, err := parseDecoder(r)
			if err != nil {
				return nil, err
			}
			if d != nil {
				ds = append(ds, d)
			}
		}
		return func(toks []string) []string {
			for _, d := range ds {
				toks = d(toks)
			}
			return toks
		}, nil
	default:
		return nil, unsupported("decoder type %q", t.Type)
	}
}

// decodeByteLevel maps symbols back to bytes. A token with a rune outside
// the GPT-2 alphabet (an added token such as "<|im_start|>" is inside it,
// but one containing a space is not) contributes its UTF-8 bytes unchanged,
// as HF does.
func decodeByteLevel(toks []string) []string {
	var buf []byte
	for _, t := range toks {
		start := len(buf)
		ok := true
		for _, r := range t {
			b, in := runeToByte[r]
			if !in {
				ok = false
				break
			}
			buf = append(buf, b)
		}
		if !ok {
			buf = append(buf[:start], t...)
		}
	}
	return []string{lossyUTF8(buf)}
}

// decodeByteFallback turns runs of <0xNN> tokens into text; a run that is
// not valid UTF-8 becomes one U+FFFD per byte, as in HF.
func decodeByteFallback(toks []string) []string {
	out := make([]string, 0, len(toks))
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, t := range toks {
		if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
			if v, err := strconv.ParseUint(t[3:5], 16, 8); err == nil {
				run = append(run, byte(v))
				continue
			}
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

// decode is the Metaspace decoder as the Rust library implements it: the
// replacement becomes a space, except that in the first token it is dropped
// unless prepend_scheme is "never".
func (m *metaspace) decode(toks []string) []string {
	for i, t := range toks {
		if i == 0 && m.prepend != "never" {
			toks[i] = strings.ReplaceAll(t, m.rep, "")
		} else {
			toks[i] = strings.ReplaceAll(t, m.rep, " ")
		}
	}
	return toks
}

// lossyUTF8 is Rust's String::from_utf8_lossy (and the WHATWG decoder): each
// maximal ill-formed subsequence becomes one U+FFFD. Go's []rune conversion
// would emit one per byte, which differs on truncated sequences.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			sb.Write(b[i : i+n])
			i += n
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart is the length of the ill-formed prefix of b that Unicode
// (the Unicode Standard, chapter 3, "maximal subpart") replaces with a single U+FFFD: a valid lead byte
// followed by as many valid continuation bytes as fit, or one byte.
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}
