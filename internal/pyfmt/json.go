package pyfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Encoder writes JSON as Python's json.dumps does with its defaults:
// ", " and ": " separators, ASCII-only strings, floats by repr, and the
// bare tokens Infinity and NaN. With Strict set, the one deviation is that
// infinities become the string "inf" (as vLLM writes an infinite rate) and
// NaN becomes null, so the output is valid JSON. What it wrote is its
// Buffer's.
type Encoder struct {
	bytes.Buffer
	Strict bool
}

// Field is one key of an ordered object: a Python dict keeps insertion
// order, so a JSON object or a repr'd dict is a list of fields.
type Field struct {
	Key   string
	Value any
}

// Object is an ordered JSON object.
type Object []Field

// Fields is an ordered object of the caller's own type (a package that
// builds many objects keeps its own short field type): Value writes it as
// it writes an Object.
type Fields interface {
	Len() int
	Field(i int) (key string, value any)
}

// Len implements Fields.
func (o Object) Len() int { return len(o) }

// Field implements Fields.
func (o Object) Field(i int) (string, any) { return o[i].Key, o[i].Value }

// Valuer is a type that says what it is written as: Value writes
// PyValue()'s result in its place. A nil pointer may return nil (null).
type Valuer interface {
	PyValue() any
}

// Float writes f by repr, or as Infinity and NaN (Strict: "inf", null).
func (e *Encoder) Float(f float64) {
	switch {
	case math.IsNaN(f):
		if e.Strict {
			e.WriteString("null")
		} else {
			e.WriteString("NaN")
		}
	case math.IsInf(f, 0):
		switch {
		case e.Strict && f > 0:
			e.WriteString(`"inf"`)
		case e.Strict:
			e.WriteString(`"-inf"`)
		case f > 0:
			e.WriteString("Infinity")
		default:
			e.WriteString("-Infinity")
		}
	default:
		e.Write(AppendFloat(e.AvailableBuffer(), f))
	}
}

// Int writes i.
func (e *Encoder) Int(i int) { e.Write(strconv.AppendInt(e.AvailableBuffer(), int64(i), 10)) }

const hexDigits = "0123456789abcdef"

// Str writes s with ensure_ascii escaping; invalid UTF-8 bytes become
// U+FFFD, as Go strings cannot carry Python's lone surrogates.
func (e *Encoder) Str(s string) {
	e.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			e.WriteString(`\"`)
		case '\\':
			e.WriteString(`\\`)
		case '\n':
			e.WriteString(`\n`)
		case '\r':
			e.WriteString(`\r`)
		case '\t':
			e.WriteString(`\t`)
		case '\b':
			e.WriteString(`\b`)
		case '\f':
			e.WriteString(`\f`)
		default:
			switch {
			case r >= 0x20 && r < 0x7f:
				e.WriteRune(r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				e.u16(uint16(r1))
				e.u16(uint16(r2))
			default: // controls, DEL and all non-ASCII, as ensure_ascii
				e.u16(uint16(r))
			}
		}
	}
	e.WriteByte('"')
}

func (e *Encoder) u16(v uint16) {
	e.WriteString(`\u`)
	e.WriteByte(hexDigits[v>>12])
	e.WriteByte(hexDigits[v>>8&0xf])
	e.WriteByte(hexDigits[v>>4&0xf])
	e.WriteByte(hexDigits[v&0xf])
}

// Value writes one Go value: nil, bool, int, float64, string, an Object,
// a json.RawMessage (re-encoded as Python would after json.loads; empty is
// null), a Valuer, or a slice of any of these.
func (e *Encoder) Value(v any) error {
	switch v := v.(type) {
	case nil:
		e.WriteString("null")
	case bool:
		if v {
			e.WriteString("true")
		} else {
			e.WriteString("false")
		}
	case int:
		e.Int(v)
	case float64:
		e.Float(v)
	case string:
		e.Str(v)
	case json.RawMessage:
		if len(v) == 0 {
			e.WriteString("null")
			return nil
		}
		return e.raw(v)
	case Fields:
		return e.Object(v)
	case Valuer:
		return e.Value(v.PyValue())
	case []int:
		list(e, v, func(x int) error { e.Int(x); return nil })
	case []float64:
		list(e, v, func(x float64) error { e.Float(x); return nil })
	case []string:
		list(e, v, func(x string) error { e.Str(x); return nil })
	default:
		// Other slices ([][]float64, []Object, []*T of a Valuer):
		// element by element.
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice {
			return fmt.Errorf("pyfmt: unsupported type %T", v)
		}
		e.WriteByte('[')
		for i := range rv.Len() {
			if i > 0 {
				e.WriteString(", ")
			}
			if err := e.Value(rv.Index(i).Interface()); err != nil {
				return err
			}
		}
		e.WriteByte(']')
	}
	return nil
}

// list writes v as a JSON array, each element by elem.
func list[T any](e *Encoder, v []T, elem func(T) error) error {
	e.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			e.WriteString(", ")
		}
		if err := elem(x); err != nil {
			return err
		}
	}
	e.WriteByte(']')
	return nil
}

// Object writes o in its order; an error names the key it is under.
func (e *Encoder) Object(o Fields) error {
	e.WriteByte('{')
	for i := range o.Len() {
		if i > 0 {
			e.WriteString(", ")
		}
		k, v := o.Field(i)
		e.Str(k)
		e.WriteString(": ")
		if err := e.Value(v); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	e.WriteByte('}')
	return nil
}

// raw re-encodes arbitrary JSON (a server's /server_info) as Python would
// after json.loads: key order kept, integers as written, other numbers as
// floats by repr, strings ASCII-escaped.
func (e *Encoder) raw(data json.RawMessage) error {
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
			e.WriteByte(byte(d))
			afterValue(stack)
			continue
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			switch {
			case top.object && top.key:
				if !top.first {
					e.WriteString(", ")
				}
				top.first = false
				top.key = false
				e.Str(tok.(string))
				e.WriteString(": ")
				continue
			case !top.object:
				if !top.first {
					e.WriteString(", ")
				}
				top.first = false
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			e.WriteByte(byte(t))
			stack = append(stack, rawFrame{object: t == '{', first: true, key: t == '{'})
			continue
		case nil:
			e.WriteString("null")
		case bool:
			_ = e.Value(t)
		case string:
			e.Str(t)
		case json.Number:
			if i, err := t.Int64(); err == nil && !strings.ContainsAny(string(t), ".eE") {
				e.WriteString(strconv.FormatInt(i, 10))
			} else if !strings.ContainsAny(string(t), ".eE") {
				e.WriteString(string(t)) // a big int: Python keeps it exact
			} else {
				f, err := t.Float64()
				if err != nil && !math.IsInf(f, 0) {
					return fmt.Errorf("server info: %w", err)
				}
				e.Float(f)
			}
		}
		afterValue(stack)
	}
	return nil
}

// rawFrame is an open container in raw: whether its next item is the
// first, and for objects whether the next token is a key.
type rawFrame struct {
	object, first, key bool
}

// afterValue marks that an object's next token is a key again.
func afterValue(stack []rawFrame) {
	if n := len(stack); n > 0 && stack[n-1].object {
		stack[n-1].key = true
	}
}
