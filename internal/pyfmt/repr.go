package pyfmt

import (
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The Append* functions below write values as Python's repr() does. Only
// the kinds that a dataclass repr of bench_serving's holds are covered:
// None, bool, int, float, str, list and dict, with JSON-decoded values
// (json.Number) as json.loads would give them to Python.

// AppendStr appends repr(s): single quotes unless s has a single quote
// and no double quote; backslash, the quote, \t \n \r escaped; other
// characters Python does not print (str.isprintable, approximated by
// unicode.IsPrint) as \xhh, \uhhhh or \Uhhhhhhhh. Invalid UTF-8 becomes
// U+FFFD, as a Go string cannot carry Python's lone surrogates.
func AppendStr(b []byte, s string) []byte {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b = append(b, q)
	for _, r := range s {
		switch {
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == rune(q):
			b = append(b, '\\', q)
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r < 0x7f && r >= 0x20, r >= 0x7f && unicode.IsPrint(r):
			b = utf8.AppendRune(b, r)
		case r < 0x100:
			b = append(b, '\\', 'x', hexDigit(r>>4), hexDigit(r))
		case r < 0x10000:
			b = append(b, '\\', 'u', hexDigit(r>>12), hexDigit(r>>8), hexDigit(r>>4), hexDigit(r))
		default:
			b = append(b, '\\', 'U')
			for sh := 28; sh >= 0; sh -= 4 {
				b = append(b, hexDigit(r>>sh))
			}
		}
	}
	return append(b, q)
}

func hexDigit(r rune) byte { return hexDigits[r&0xf] }

// AppendOptFloat appends repr(f), or None when ok is false.
func AppendOptFloat(b []byte, f float64, ok bool) []byte {
	if !ok {
		return append(b, "None"...)
	}
	return AppendFloat(b, f)
}

// AppendOptStr appends repr(s), or None for "" (an Optional[str] left at
// its default).
func AppendOptStr(b []byte, s string) []byte {
	if s == "" {
		return append(b, "None"...)
	}
	return AppendStr(b, s)
}

// AppendDict appends repr(dict) of fields in their order.
func AppendDict(b []byte, fields []Field) []byte {
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = AppendStr(b, f.Key)
		b = append(b, ": "...)
		b = AppendRepr(b, f.Value)
	}
	return append(b, '}')
}

// SortedFields are m's fields in key order: a Go map does not keep the
// order its JSON gave, so the one order that is stable is the sorted one.
func SortedFields(m map[string]any) []Field {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Field, len(keys))
	for i, k := range keys {
		out[i] = Field{k, m[k]}
	}
	return out
}

// SetField is d[key] = value on a Python dict held as fields: a key
// already present keeps its place and takes the value, a new one goes
// last.
func SetField(fields []Field, key string, value any) []Field {
	for i := range fields {
		if fields[i].Key == key {
			fields[i].Value = value
			return fields
		}
	}
	return append(fields, Field{Key: key, Value: value})
}

// AppendRepr appends repr(v) for a value decoded from JSON (or built of
// the same kinds). A json.Number is an int unless it has a fraction or an
// exponent, as json.loads decides; other Go types go through their JSON
// form.
func AppendRepr(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "None"...)
	case bool:
		if v {
			return append(b, "True"...)
		}
		return append(b, "False"...)
	case string:
		return AppendStr(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case float64:
		return AppendFloat(b, v)
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			if n, ok := new(big.Int).SetString(s, 10); ok {
				return n.Append(b, 10) // "-0" is 0, as int("-0")
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && f == 0 {
			return append(b, s...)
		}
		return AppendFloat(b, f) // out of range is inf, as float() gives
	case []any:
		return AppendList(b, v, AppendRepr)
	case []string:
		return AppendList(b, v, AppendStr)
	case []float64:
		return AppendList(b, v, AppendFloat)
	case map[string]any:
		return AppendDict(b, SortedFields(v))
	case []Field:
		return AppendDict(b, v)
	case Object:
		return AppendDict(b, v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return AppendStr(b, err.Error())
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return AppendStr(b, string(raw))
	}
	return AppendRepr(b, x)
}

// AppendList appends repr(list) of v, each element as elem writes it.
func AppendList[T any](b []byte, v []T, elem func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = elem(b, x)
	}
	return append(b, ']')
}
