package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/servingprobe/servingprobe/internal/jsonscan"
)

// A tokenizer.json is mostly its vocabulary and merges (11 MB for Qwen3).
// encoding/json decodes those through reflection at about 10 MB/s; these
// readers walk the two shapes with jsonscan, the scanner the prober's
// stream decoders use, and keep loading well under a second. Anything
// unusual (a number that is not a plain integer, a null, bad syntax) falls
// back to encoding/json, which stays the reference.

var errFallback = errors.New("fallback to encoding/json")

// str reads the string value at s (whitespace skipped) as encoding/json
// decodes it: a plain literal is returned as a slice of the input, one
// with escapes (or invalid UTF-8) is decoded into *buf, which the caller
// reuses.
func str(s *jsonscan.Scanner, buf *[]byte) ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, false
	}
	body, kind := s.Str()
	return unquote(body, kind, buf)
}

// unquote turns a literal's body and kind from Str or Member into its
// value (see str).
func unquote(body []byte, kind jsonscan.Kind, buf *[]byte) ([]byte, bool) {
	switch {
	case kind == jsonscan.Bad:
		return nil, false
	case kind.Plain():
		return body, true
	}
	*buf = jsonscan.AppendUnquoted((*buf)[:0], body)
	return *buf, true
}

// scanVocab reads {"token": id, ...} into b.
func scanVocab(raw []byte, b *vocabBuilder) error {
	s := jsonscan.New(raw)
	if s.Peek() != '{' || !s.Enter() {
		return errFallback
	}
	var buf []byte
	for first := true; ; first = false {
		body, kind, end, ok := s.Member(first)
		if !ok {
			return errFallback
		}
		if end {
			break
		}
		k, _ := unquote(body, kind, &buf)
		if c := s.Peek(); c != '-' && (c < '0' || c > '9') {
			return errFallback // null, a string...: encoding/json says what it means
		}
		var v int
		if !s.Int(&v) {
			return errFallback
		}
		if err := b.add(k, v); err != nil {
			return err
		}
	}
	s.Leave()
	if !s.End() {
		return errFallback
	}
	return nil
}

// scanMerges reads ["a b", ...] or [["a","b"], ...], calling add for each
// pair; a and b are only valid during the call.
func scanMerges(raw []byte, add func(rank int, a, b []byte) error) error {
	s := jsonscan.New(raw)
	if s.Peek() != '[' || !s.Enter() {
		return errFallback
	}
	var bufA, bufB []byte
	for n := 0; ; n++ {
		end, ok := s.Elem(n == 0)
		if !ok {
			return errFallback
		}
		if end {
			break
		}
		var a, b []byte
		switch s.Peek() {
		case '"':
			v, ok := str(&s, &bufA)
			if !ok {
				return errFallback
			}
			i := bytes.IndexByte(v, ' ')
			if i < 0 {
				return fmt.Errorf("merges[%d] %q: no space separator", n, v)
			}
			a, b = v[:i], v[i+1:]
		case '[':
			if !s.Enter() {
				return errFallback
			}
			var okA, okB bool
			if end, ok := s.Elem(true); ok && !end {
				a, okA = str(&s, &bufA)
			}
			if end, ok := s.Elem(false); ok && !end && okA {
				b, okB = str(&s, &bufB)
			}
			if end, ok := s.Elem(false); !ok || !end || !okB {
				return errFallback
			}
			s.Leave()
		default:
			return errFallback
		}
		if err := add(n, a, b); err != nil {
			return err
		}
	}
	s.Leave()
	if !s.End() {
		return errFallback
	}
	return nil
}

// rawObject splits a JSON object into its members' raw values, without
// the validation pass encoding/json makes over every RawMessage (Span,
// not Skip: the vocabulary and merges would be validated twice more).
// Members are validated when they are decoded: scanVocab and scanMerges
// validate what they read, encoding/json the rest.
func rawObject(b []byte) (map[string]json.RawMessage, error) {
	s := jsonscan.New(b)
	if s.Peek() != '{' || !s.Enter() {
		return nil, errFallback
	}
	out := map[string]json.RawMessage{}
	var buf []byte
	for first := true; ; first = false {
		body, kind, end, ok := s.Member(first)
		if !ok {
			return nil, errFallback
		}
		if end {
			break
		}
		k, _ := unquote(body, kind, &buf)
		start := s.Pos()
		if !s.Span() {
			return nil, errFallback
		}
		out[string(k)] = b[start:s.Pos()]
	}
	s.Leave()
	if !s.End() {
		return nil, errFallback
	}
	return out, nil
}
