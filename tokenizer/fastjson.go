package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A tokenizer.json is mostly its vocabulary and merges (11 MB for Qwen3).
// encoding/json decodes those through reflection at about 10 MB/s; these
// scanners read the two shapes directly and keep loading well under a second.
// Anything unusual falls back to encoding/json.

var errFallback = errors.New("fallback to encoding/json")

type jscan struct {
	b []byte
	i int
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) expect(c byte) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != c {
		return errFallback
	}
	s.i++
	return nil
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jscan) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *jscan) str() (string, error) {
	var buf []byte
	v, err := s.rawStr(&buf)
	return string(v), err
}

// rawStr reads a string without allocating: an unescaped string (nearly
// every token) is returned as a slice of the input, an escaped one is
// decoded into *buf, which the caller reuses.
func (s *jscan) rawStr(buf *[]byte) ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			s.i++
			return s.b[start : s.i-1], nil
		}
		if c == '\\' {
			*buf = append((*buf)[:0], s.b[start:s.i]...)
			v, err := s.strEscaped(*buf)
			*buf = v
			return v, err
		}
		if c < 0x20 {
			return nil, errFallback
		}
		s.i++
	}
	return nil, errFallback
}

func (s *jscan) strEscaped(buf []byte) ([]byte, error) {
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(buf) {
				return nil, errFallback
			}
			return buf, nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, errFallback
			}
			e := s.b[s.i+1]
			s.i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := s.hex4()
				if !ok {
					return nil, errFallback
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
						s.i += 2
						if r2, ok = s.hex4(); !ok {
							return nil, errFallback
						}
					}
					r = utf16.DecodeRune(r, r2)
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return nil, errFallback
			}
		case c < 0x20:
			return nil, errFallback
		default:
			buf = append(buf, c)
			s.i++
		}
	}
	return nil, errFallback
}

func (s *jscan) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(v), true
}

func (s *jscan) integer() (int, error) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	v, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return 0, errFallback
	}
	return v, nil
}

// scanVocab reads {"token": id, ...} into b.
func scanVocab(raw []byte, b *vocabBuilder) error {
	s := &jscan{b: raw}
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		return nil
	}
	var buf []byte
	for {
		k, err := s.rawStr(&buf)
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		v, err := s.integer()
		if err != nil {
			return err
		}
		if err := b.add(k, v); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errFallback
		}
	}
}

// scanMerges reads ["a b", ...] or [["a","b"], ...], calling add for each
// pair; a and b are only valid during the call.
func scanMerges(raw []byte, add func(rank int, a, b []byte) error) error {
	s := &jscan{b: raw}
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		return nil
	}
	var bufA, bufB []byte
	for n := 0; ; n++ {
		var a, b []byte
		switch s.peek() {
		case '"':
			v, err := s.rawStr(&bufA)
			if err != nil {
				return err
			}
			i := bytes.IndexByte(v, ' ')
			if i < 0 {
				return fmt.Errorf("merges[%d] %q: no space separator", n, v)
			}
			a, b = v[:i], v[i+1:]
		case '[':
			s.i++
			var err error
			if a, err = s.rawStr(&bufA); err != nil {
				return err
			}
			if err := s.expect(','); err != nil {
				return err
			}
			if b, err = s.rawStr(&bufB); err != nil {
				return err
			}
			if err := s.expect(']'); err != nil {
				return err
			}
		default:
			return errFallback
		}
		if err := add(n, a, b); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errFallback
		}
	}
}

// skip moves past one JSON value without decoding it.
func (s *jscan) skip() error {
	switch s.peek() {
	case '"':
		return s.skipStr()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if err := s.skipStr(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return nil
				}
			}
			s.i++
		}
		return errFallback
	default: // number, true, false, null
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.i == start {
					return errFallback
				}
				return nil
			}
			s.i++
		}
		if s.i == start {
			return errFallback
		}
		return nil
	}
}

// rawObject splits a JSON object into its members' raw values, without the
// validation pass encoding/json makes over every RawMessage. Members are
// validated when they are decoded.
func rawObject(b []byte) (map[string]json.RawMessage, error) {
	s := &jscan{b: b}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	if s.peek() == '}' {
		return out, nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		s.ws()
		start := s.i
		if err := s.skip(); err != nil {
			return nil, err
		}
		out[k] = b[start:s.i]
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			return out, nil
		default:
			return nil, errFallback
		}
	}
}

// skipStr moves past a string at s.i without allocating.
func (s *jscan) skipStr() error {
	s.i++ // opening quote
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.i++
			return nil
		case '\\':
			s.i += 2
			continue
		}
		s.i++
	}
	return errFallback
}
