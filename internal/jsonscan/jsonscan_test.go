package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestStrSWAR puts each kind of special byte at every offset of a string,
// so that the word-at-a-time scan in Str is checked against encoding/json
// at every alignment and near the end of the buffer.
func TestStrSWAR(t *testing.T) {
	specials := []string{`\n`, `\u00e9`, `\"`, "\x01", "\x1f", "\x7f", "\x80", "\xc3\xa9", "\xff", `\`, `"`}
	for n := 0; n < 20; n++ {
		for _, sp := range specials {
			for _, tail := range []string{"", "}", `,"k":1}`} {
				lit := `"` + strings.Repeat("a", n) + sp + `bc"`
				if sp == `"` {
					lit = `"` + strings.Repeat("a", n) + `"`
				}
				data := []byte(lit + tail)
				if sp == `"` {
					data = []byte(lit + `bc"` + tail)
				}
				s := New(data)
				body, kind := s.Str()
				var want string
				werr := json.Unmarshal([]byte(lit), &want)
				switch {
				case kind == Bad || werr != nil:
					if (kind == Bad) != (werr != nil) {
						t.Errorf("Str(%q): kind %d, but encoding/json says %v", data, kind, werr)
					}
				case s.Pos() != len(lit):
					t.Errorf("Str(%q) stopped at %d, want %d", data, s.Pos(), len(lit))
				case kind.Plain() && want != string(body):
					t.Errorf("Str(%q) = %q as plain, want %q", data, body, want)
				case !kind.Plain() && want != string(AppendUnquoted(nil, body)):
					t.Errorf("Str(%q) unquotes to %q, want %q", data, AppendUnquoted(nil, body), want)
				case kind == ASCII && strings.ContainsFunc(string(body), func(r rune) bool { return r >= 0x80 || r == '\\' }):
					t.Errorf("Str(%q) = ASCII for %q", data, body)
				}
			}
		}
	}
}

// validCases are documents for Skip: valid and invalid JSON of every kind
// of value, and the shapes real stream events take.
var validCases = []string{
	`{"id":"c","object":"text_completion","created":1730000000,"choices":[{"index":0,"text":" token","logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"text":"abc","meta_info":{"finish_reason":{"type":"length","length":3},"spec_accept_length":1.5e0}}`,
	`{"x":[1,2,{"y":[true,false,null,-1.5e+3]}]}`,
	` {"a" : [ { "b" : "sp" } ] } `,
	`"a\nb\u00e9\ud83d\ude00\"\\\/\b\f\r\t"`,
	"\"bad \xff utf8\"",
	`[]`, `{}`, `null`, `true`, `false`, `0`, `-0`, `01`, `1.`, `.5`, `1e`, `-`, `1E+2`,
	`{`, `[`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1 "b":2}`, `{1:2}`, `tru`, `nul`, `"\x"`, `"\u12"`,
	`{"a":1} x`, `"ctl` + "\x01" + `"`,
	`{"\u0120the":1,"Ġa":2,"a\"b":[{"é":null}]}`, "{\"bad \xff key\":1}",
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
}

// depth is the deepest nesting of arrays and objects in valid JSON.
func depth(data []byte) int {
	d, deepest, inStr, esc := 0, 0, false, false
	for _, c := range data {
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '[' || c == '{'):
			d++
			deepest = max(deepest, d)
		case !inStr && (c == ']' || c == '}'):
			d--
		}
	}
	return deepest
}

// checkSkip fails when Skip and End accept what encoding/json refuses, or
// refuse valid JSON within MaxDepth, whatever its keys hold (Skip reads
// them with Member).
func checkSkip(t *testing.T, data []byte) {
	t.Helper()
	s := New(data)
	got := s.Skip() && s.End()
	valid := json.Valid(data)
	if got && !valid {
		t.Fatalf("Skip(%q) accepted invalid JSON", data)
	}
	if sp := New(data); got && !(sp.Span() && sp.End()) {
		t.Fatalf("Span(%q) did not end where Skip did", data)
	}
	if !got && valid && depth(data) <= MaxDepth {
		t.Fatalf("Skip(%q) refused valid JSON", data)
	}
}

func TestSkipMatchesValid(t *testing.T) {
	for _, c := range validCases {
		checkSkip(t, []byte(c))
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if s := New([]byte(deep)); s.Skip() {
		t.Errorf("Skip accepted nesting %d, deeper than MaxDepth", MaxDepth+1)
	}
}

// FuzzSkipMatchesValid: on any input, Skip accepts only what encoding/json
// calls valid, and accepts all of it within MaxDepth.
func FuzzSkipMatchesValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSkip(t, data) })
}

// FuzzStrMatchesJSON: any string literal Str accepts decodes, plain or
// through AppendUnquoted, to what encoding/json decodes, and Str refuses
// what encoding/json refuses.
func FuzzStrMatchesJSON(f *testing.F) {
	for _, c := range []string{`a`, `a\nb`, `\u00e9\ud83d\ude00`, `\ud800x\udc00\ud800\ud800`, "bad \xff utf8 \xe2\x82", `\"\\\/\b\f\r\t`, "\x01", `\x`, `\u12`} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		lit := append(append([]byte{'"'}, body...), '"')
		s := New(lit)
		got, kind := s.Str()
		var want string
		werr := json.Unmarshal(lit, &want)
		if kind == Bad {
			if werr == nil && s.Pos() == 0 && bytes.IndexByte(body, '"') < 0 {
				t.Fatalf("Str(%q) refused a literal encoding/json decodes to %q", lit, want)
			}
			return
		}
		if s.Pos() != len(lit) {
			return // a quote inside body ended the literal early: another literal
		}
		if werr != nil {
			t.Fatalf("Str(%q) accepted a literal encoding/json refuses: %v", lit, werr)
		}
		dec := string(got)
		if !kind.Plain() {
			dec = string(AppendUnquoted(nil, got))
		}
		if dec != want {
			t.Fatalf("Str(%q) decodes to %q, encoding/json to %q", lit, dec, want)
		}
	})
}

// TestInt pins which numbers Int takes (plain integers of at most 18
// digits) and which it leaves to encoding/json.
func TestInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"42", 42, true}, {"-7", -7, true},
		{"null", 5, true}, {"999999999999999999", 999999999999999999, true},
		{"9999999999999999999", 5, false}, {"1.0", 5, false}, {"1e3", 5, false}, {`"1"`, 5, false},
	} {
		s := New([]byte(tc.in))
		n := 5
		ok := s.Int(&n)
		if ok != tc.ok || ok && n != tc.want {
			t.Errorf("Int(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.want, tc.ok)
		}
	}
}

// TestSpan: on valid JSON, Span ends where Skip does (escaped quotes and
// backslash runs included); it fails on a value cut short.
func TestSpan(t *testing.T) {
	cases := append([]string{`"a\\"`, `"a\\\"b"`, `"\\\\"`, `{"k":"v\"}"}`, `[1, "]", {"a":[]}] `, ` -1.5e3 `}, validCases...)
	for _, c := range cases {
		data := []byte(c + `,"next"`)
		if !json.Valid([]byte(c)) || depth([]byte(c)) > MaxDepth {
			continue
		}
		sk, sp := New(data), New(data)
		if !sk.Skip() {
			t.Fatalf("Skip(%q) refused valid JSON", c)
		}
		if !sp.Span() || sp.Pos() != sk.Pos() {
			t.Errorf("Span(%q) stopped at %d, Skip at %d", data, sp.Pos(), sk.Pos())
		}
	}
	for _, c := range []string{`"open`, `"esc\"`, `{"a":[1,2`, ``} {
		if s := New([]byte(c)); s.Span() {
			t.Errorf("Span(%q) succeeded at %d, want a failure", c, s.Pos())
		}
	}
}

// TestMember: Member takes every valid key, with its kind, where Key
// takes plain ASCII only.
func TestMember(t *testing.T) {
	for _, tc := range []struct {
		doc   string
		kind  Kind
		keyOK bool
	}{
		{`{"ab":1}`, ASCII, true},
		{`{"Ġa":1}`, UTF8, false},
		{`{"a\u0120":1}`, Raw, false},
		{`{"a\x":1}`, Bad, false},
	} {
		s := New([]byte(tc.doc))
		s.Enter()
		_, kind, end, ok := s.Member(true)
		if kind != tc.kind || end || ok != (tc.kind != Bad) {
			t.Errorf("Member(%q) = kind %d, end %v, ok %v; want kind %d", tc.doc, kind, end, ok, tc.kind)
		}
		s = New([]byte(tc.doc))
		s.Enter()
		if _, _, ok := s.Key(true); ok != tc.keyOK {
			t.Errorf("Key(%q) ok = %v, want %v", tc.doc, ok, tc.keyOK)
		}
	}
}
