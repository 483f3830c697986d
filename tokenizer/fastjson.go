package tokenizer

import (
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
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			v := string(s.b[start:s.i])
			s.i++
			return v, nil
		}
		if c == '\\' {
			return s.strEscaped(start)
		}
		if c < 0x20 {
			return "", errFallback
		}
		s.i++
	}
	return "", errFallback
}

func (s *jscan) strEscaped(start int) (string, error) {
	buf := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(buf) {
				return "", errFallback
			}
			return string(buf), nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return "", errFallback
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
					return "", errFallback
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
						s.i += 2
						if r2, ok = s.hex4(); !ok {
							return "", errFallback
						}
					}
					r = utf16.DecodeRune(r, r2)
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", errFallback
			}
		case c < 0x20:
			return "", errFallback
		default:
			buf = append(buf, c)
			s.i++
		}
	}
	return "", errFallback
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

// scanVocab reads {"token": id, ...}.
func scanVocab(raw []byte) (map[string]int, error) {
	s := &jscan{b: raw}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	m := make(map[string]int, len(raw)/16)
	if s.peek() == '}' {
		return m, nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		v, err := s.integer()
		if err != nil {
			return nil, err
		}
		m[k] = v
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return m, nil
		default:
			return nil, errFallback
		}
	}
}

// scanMerges reads ["a b", ...] or [["a","b"], ...].
func scanMerges(raw []byte) ([][2]string, error) {
	s := &jscan{b: raw}
	if err := s.expect('['); err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(raw)/12)
	if s.peek() == ']' {
		return out, nil
	}
	for n := 0; ; n++ {
		var p [2]string
		switch s.peek() {
		case '"':
			v, err := s.str()
			if err != nil {
				return nil, err
			}
			a, b, ok := cutSpace(v)
			if !ok {
				return nil, fmt.Errorf("merges[%d] %q: no space separator", n, v)
			}
			p = [2]string{a, b}
		case '[':
			s.i++
			var err error
			if p[0], err = s.str(); err != nil {
				return nil, err
			}
			if err := s.expect(','); err != nil {
				return nil, err
			}
			if p[1], err = s.str(); err != nil {
				return nil, err
			}
			if err := s.expect(']'); err != nil {
				return nil, err
			}
		default:
			return nil, errFallback
		}
		out = append(out, p)
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return out, nil
		default:
			return nil, errFallback
		}
	}
}

func cutSpace(v string) (string, string, bool) {
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' {
			return v[:i], v[i+1:], true
		}
	}
	return "", "", false
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
