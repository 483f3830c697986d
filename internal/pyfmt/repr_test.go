package pyfmt

import (
	"encoding/json"
	"math"
	"testing"
)

// TestRepr: values as CPython 3's repr() writes them (each want is
// what `python3 -c 'print(repr(x))'` prints for the Python value named).
func TestRepr(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, "None"},
		{true, "True"},
		{false, "False"},
		{"plain", "'plain'"},
		{"it's", `"it's"`},
		{`say "hi"`, `'say "hi"'`},
		{`it's "both"`, `'it\'s "both"'`},
		{"back\\slash", `'back\\slash'`},
		{"t\tn\nr\r", `'t\tn\nr\r'`},
		{"bell\a del\x7f", `'bell\x07 del\x7f'`},
		{"nbsp\u00a0", `'nbsp\xa0'`},
		{"zwsp\u200b", `'zwsp\u200b'`},
		{"€ é 日本", "'€ é 日本'"},
		{"\U0001F600", "'\U0001F600'"},
		{"\U000E0001", `'\U000e0001'`},
		{"bad\xff", "'bad\ufffd'"},
		{0.0, "0.0"},
		{1.5, "1.5"},
		{1e16, "1e+16"},
		{1e15, "1000000000000000.0"},
		{0.0001, "0.0001"},
		{1e-05, "1e-05"},
		{math.Inf(1), "inf"},
		{math.NaN(), "nan"},
		{json.Number("7"), "7"},
		{json.Number("-0"), "0"},
		{json.Number("12345678901234567890"), "12345678901234567890"},
		{json.Number("7.0"), "7.0"},
		{json.Number("1E2"), "100.0"},
		{json.Number("1e999"), "inf"},
		{[]any{}, "[]"},
		{[]any{json.Number("1"), "a", nil}, "[1, 'a', None]"},
		{map[string]any{}, "{}"},
		{map[string]any{"b": []any{true}, "a": map[string]any{"x": 1.25}}, "{'a': {'x': 1.25}, 'b': [True]}"},
		{[]float64{0.125, 1e-07}, "[0.125, 1e-07]"},
		{[]string{"data:image/png;base64,AA=="}, "['data:image/png;base64,AA==']"},
		{struct {
			A int `json:"a"`
		}{3}, "{'a': 3}"},
	} {
		if got := string(AppendRepr(nil, tc.in)); got != tc.want {
			t.Errorf("repr(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestSetField: d[key] = value keeps an existing key's place and appends
// a new one, as a Python dict does.
func TestSetField(t *testing.T) {
	for _, tc := range []struct {
		key, want string
	}{
		{"a", "{'a': 9, 'b': 2}"},
		{"b", "{'a': 1, 'b': 9}"},
		{"c", "{'a': 1, 'b': 2, 'c': 9}"},
	} {
		fields := []Field{{"a", 1}, {"b", 2}}
		if got := string(AppendDict(nil, SetField(fields, tc.key, 9))); got != tc.want {
			t.Errorf("d[%q] = 9: %s, want %s", tc.key, got, tc.want)
		}
	}
}
