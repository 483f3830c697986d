package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/servingprobe/servingprobe/prober"
)

// pyFixed2 is Python's format(f, ".2f"): Go rounds the exact binary value
// half to even as Python does, but spells infinities differently.
func pyFixed2(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return prober.PyFloat(f)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// pyEncoder writes JSON as Python's json.dumps does with its defaults:
// ", " and ": " separators, ASCII-only strings, floats by repr, and the
// bare tokens Infinity and NaN. In strict mode, the one deviation is that
// infinities become the string "inf" (as vLLM writes an infinite rate) and
// NaN becomes null, so the output is valid JSON.
type pyEncoder struct {
	buf    bytes.Buffer
	strict bool
}

func (e *pyEncoder) float(f float64) {
	switch {
	case math.IsNaN(f):
		if e.strict {
			e.buf.WriteString("null")
		} else {
			e.buf.WriteString("NaN")
		}
	case math.IsInf(f, 0):
		switch {
		case e.strict && f > 0:
			e.buf.WriteString(`"inf"`)
		case e.strict:
			e.buf.WriteString(`"-inf"`)
		case f > 0:
			e.buf.WriteString("Infinity")
		default:
			e.buf.WriteString("-Infinity")
		}
	default:
		e.buf.WriteString(prober.PyFloat(f))
	}
}

func (e *pyEncoder) int(i int) { e.buf.WriteString(strconv.Itoa(i)) }

const hexDigits = "0123456789abcdef"

// string writes s with ensure_ascii escaping; invalid UTF-8 bytes become
// U+FFFD, as Go strings cannot carry Python's lone surrogates.
func (e *pyEncoder) string(s string) {
	b := &e.buf
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r >= 0x20 && r < 0x7f:
				b.WriteRune(r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				e.u16(uint16(r1))
				e.u16(uint16(r2))
			default: // controls, DEL and all non-ASCII, as ensure_ascii
				e.u16(uint16(r))
			}
		}
	}
	b.WriteByte('"')
}

func (e *pyEncoder) u16(v uint16) {
	e.buf.WriteString(`\u`)
	e.buf.WriteByte(hexDigits[v>>12])
	e.buf.WriteByte(hexDigits[v>>8&0xf])
	e.buf.WriteByte(hexDigits[v>>4&0xf])
	e.buf.WriteByte(hexDigits[v&0xf])
}

// value writes one Go value of the kinds a record holds.
func (e *pyEncoder) value(v any) error {
	switch v := v.(type) {
	case nil:
		e.buf.WriteString("null")
	case bool:
		if v {
			e.buf.WriteString("true")
		} else {
			e.buf.WriteString("false")
		}
	case int:
		e.int(v)
	case float64:
		e.float(v)
	case string:
		e.string(v)
	case json.RawMessage:
		if len(v) == 0 {
			e.buf.WriteString("null")
			return nil
		}
		return e.raw(v)
	case []int:
		e.buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.buf.WriteString(", ")
			}
			e.int(x)
		}
		e.buf.WriteByte(']')
	case []float64:
		e.buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.buf.WriteString(", ")
			}
			e.float(x)
		}
		e.buf.WriteByte(']')
	case []string:
		e.buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.buf.WriteString(", ")
			}
			e.string(x)
		}
		e.buf.WriteByte(']')
	case [][]float64:
		e.buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.buf.WriteString(", ")
			}
			if err := e.value(x); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
	case *ServerTiming:
		return e.value(v.record())
	case []*ServerTiming:
		e.buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.buf.WriteString(", ")
			}
			if err := e.value(x.record()); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
	case *DetailReasoning:
		return e.value(v.record())
	case []*DetailReasoning:
		e.buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.buf.WriteString(", ")
			}
			if err := e.value(x.record()); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
	case record:
		return e.object(v)
	case []record:
		e.buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.buf.WriteString(", ")
			}
			if err := e.object(x); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
	default:
		return fmt.Errorf("pyjson: unsupported type %T", v)
	}
	return nil
}

// field is one key of an ordered JSON object.
type field struct {
	key   string
	value any
}

// record is an ordered JSON object, as a Python dict keeps insertion order.
type record []field

func (e *pyEncoder) object(r record) error {
	e.buf.WriteByte('{')
	for i, f := range r {
		if i > 0 {
			e.buf.WriteString(", ")
		}
		e.string(f.key)
		e.buf.WriteString(": ")
		if err := e.value(f.value); err != nil {
			return fmt.Errorf("%s: %w", f.key, err)
		}
	}
	e.buf.WriteByte('}')
	return nil
}

// raw re-encodes arbitrary JSON (the server's /server_info) as Python would
// after json.loads: key order kept, integers as written, other numbers as
// floats by repr, strings ASCII-escaped.
func (e *pyEncoder) raw(data json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []rawFrame
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 {
			break
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return fmt.Errorf("server info: %w", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			e.buf.WriteByte(byte(d))
			e.afterValue(stack)
			continue
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			switch {
			case top.object && top.key:
				if !top.first {
					e.buf.WriteString(", ")
				}
				top.first = false
				top.key = false
				e.string(tok.(string))
				e.buf.WriteString(": ")
				continue
			case !top.object:
				if !top.first {
					e.buf.WriteString(", ")
				}
				top.first = false
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			e.buf.WriteByte(byte(t))
			stack = append(stack, rawFrame{object: t == '{', first: true, key: t == '{'})
			continue
		case nil:
			e.buf.WriteString("null")
		case bool:
			_ = e.value(t)
		case string:
			e.string(t)
		case json.Number:
			if i, err := t.Int64(); err == nil && !strings.ContainsAny(string(t), ".eE") {
				e.buf.WriteString(strconv.FormatInt(i, 10))
			} else if !strings.ContainsAny(string(t), ".eE") {
				e.buf.WriteString(string(t)) // a big int: Python keeps it exact
			} else {
				f, err := t.Float64()
				if err != nil && !math.IsInf(f, 0) {
					return fmt.Errorf("server info: %w", err)
				}
				e.float(f)
			}
		}
		e.afterValue(stack)
	}
	return nil
}

// rawFrame is an open container in raw: whether its next item is the
// first, and for objects whether the next token is a key.
type rawFrame struct {
	object, first, key bool
}

// afterValue marks that an object's next token is a key again.
func (e *pyEncoder) afterValue(stack []rawFrame) {
	if n := len(stack); n > 0 && stack[n-1].object {
		stack[n-1].key = true
	}
}
