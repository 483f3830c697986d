package pyfmt

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// Expected strings are Python 3's repr(float), format(f, ".2f") and
// json.dumps output.
func TestFloat(t *testing.T) {
	t.Parallel()
	tenth, fifth := 0.1, 0.2 // variables: constant arithmetic would be exact
	for _, tc := range []struct {
		in   float64
		repr string
		f2   string
	}{
		{0, "0.0", "0.00"},
		{math.Copysign(0, -1), "-0.0", "-0.00"},
		{1, "1.0", "1.00"},
		{50, "50.0", "50.00"},
		{tenth + fifth, "0.30000000000000004", "0.30"},
		{1e-4, "0.0001", "0.00"},
		{1e-5, "1e-05", "0.00"},
		{1.5e-7, "1.5e-07", "0.00"},
		{123456789, "123456789.0", "123456789.00"},
		{1e15, "1000000000000000.0", "1000000000000000.00"},
		{9999999999999998, "9999999999999998.0", "9999999999999998.00"},
		{1e16, "1e+16", "10000000000000000.00"},
		{1.2345678901234568e+17, "1.2345678901234568e+17", "123456789012345680.00"},
		{-2.5, "-2.5", "-2.50"},
		{0.125, "0.125", "0.12"}, // exact tie: half to even
		{0.375, "0.375", "0.38"},
		{2.675, "2.675", "2.67"}, // binary value is below the tie
		{1e300, "1e+300", ""},
		{math.Inf(1), "inf", "inf"},
		{math.Inf(-1), "-inf", "-inf"},
		{math.NaN(), "nan", "nan"},
	} {
		if got := Float(tc.in); got != tc.repr {
			t.Errorf("Float(%v) = %q, want %q", tc.in, got, tc.repr)
		}
		if tc.f2 == "" {
			continue
		}
		if got := Fixed2(tc.in); got != tc.f2 {
			t.Errorf("Fixed2(%v) = %q, want %q", tc.in, got, tc.f2)
		}
	}
}

func TestEncoder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     Object
		strict bool
		want   string
	}{
		{
			name: "python defaults",
			in: Object{
				{"a", math.Inf(1)},
				{"b", []float64{1, 1e-5, 1e16, 123456789}},
				{"c", "é\u2028\x01\"/<\x7f\\\t"},
				{"d", nil},
				{"e", "x\U0001F600"},
				{"f", []int{}},
				{"g", [][]float64{{}, {0.5}}},
				{"h", true},
			},
			want: `{"a": Infinity, "b": [1.0, 1e-05, 1e+16, 123456789.0], "c": "\u00e9\u2028\u0001\"/<\u007f\\\t", "d": null, "e": "x\ud83d\ude00", "f": [], "g": [[], [0.5]], "h": true}`,
		},
		{
			name:   "strict",
			in:     Object{{"a", math.Inf(1)}, {"b", math.NaN()}, {"c", math.Inf(-1)}},
			strict: true,
			want:   `{"a": "inf", "b": null, "c": "-inf"}`,
		},
		{
			// As json.dumps(json.loads(s)): order kept, 1.50 -> 1.5,
			// 1e3 -> 1000.0, big integers exact.
			name: "raw server info",
			in: Object{{"server_info", json.RawMessage(
				`{"version":"0.5.1","internal_states":[{"avg_spec_accept_length":1.50,"x":[]}],"n":1e3,"big":123456789012345678901,"ok":true,"none":null,"s":"\u00e9","o":{}}`)}},
			want: `{"server_info": {"version": "0.5.1", "internal_states": [{"avg_spec_accept_length": 1.5, "x": []}], "n": 1000.0, "big": 123456789012345678901, "ok": true, "none": null, "s": "\u00e9", "o": {}}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Encoder{Strict: tc.strict}
			if err := e.Object(tc.in); err != nil {
				t.Fatal(err)
			}
			if got := e.String(); got != tc.want {
				t.Errorf("encode =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestEncoderRejectsBadServerInfo(t *testing.T) {
	t.Parallel()
	e := &Encoder{}
	if err := e.Object(Object{{"server_info", json.RawMessage(`{"a":`)}}); err == nil {
		t.Errorf("encoding truncated server info: error = nil, want an error")
	}
}

// FuzzServerInfo checks the re-encoding of the server's JSON: valid input
// never fails, and the output decodes to the same value.
func FuzzServerInfo(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[1, 2.5, "x"]`, `{"a":{"b":[{"c":null}]},"d":1e3,"e":-0.0}`,
		`{"version":"0.5.1","internal_states":[{"avg_spec_accept_length":1.50}]}`,
		`"\u00e9\ud83d\ude00"`, `123456789012345678901234567890`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want any
		if json.Unmarshal(data, &want) != nil {
			return
		}
		e := &Encoder{}
		if err := e.raw(json.RawMessage(data)); err != nil {
			t.Fatalf("raw(%q) error = %v", data, err)
		}
		out := e.Bytes()
		if bytes.Contains(out, []byte("Infinity")) || bytes.Contains(out, []byte("NaN")) {
			return // a number beyond float64, as Python writes it
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("raw(%q) = %s, which does not parse: %v", data, out, err)
		}
		if !reflect.DeepEqual(normalize(want), normalize(got)) {
			t.Fatalf("raw(%q) = %s: value changed", data, out)
		}
	})
}

// normalize maps -0 to 0: Python and Go agree on the value, not the sign bit.
func normalize(v any) any {
	switch v := v.(type) {
	case float64:
		if v == 0 {
			return 0.0
		}
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalize(v[k])
		}
	}
	return v
}
