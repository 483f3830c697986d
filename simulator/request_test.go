package simulator

import (
	"encoding/json"
	"testing"
)

// FuzzPlainJSONString checks that the prompt fast path never disagrees
// with encoding/json: whatever it accepts, json.Unmarshal decodes to the
// same string.
func FuzzPlainJSONString(f *testing.F) {
	for _, s := range []string{`"hello world"`, `"a\"b"`, `"\u00e9"`, "\"caf\xc3\xa9\"", "\"bad \xff\"", "\"tab\t\"", `""`, `"`, `123`, `["x"]`, `"<&>"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := plainJSONString(raw)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("fast path accepted %q, which json.Unmarshal refuses: %v", raw, err)
		}
		if got != want {
			t.Fatalf("fast path %q, json.Unmarshal %q", got, want)
		}
	})
}

func TestPlainJSONString(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want string
		ok   bool
	}{
		{`"hello world"`, "hello world", true},
		{"\"caf\xc3\xa9\"", "café", true},
		{`""`, "", true},
		{`"a\"b"`, "", false},       // an escape: json.Unmarshal decodes it
		{"\"bad \xff\"", "", false}, // invalid UTF-8: json.Unmarshal substitutes U+FFFD
		{"\"tab\t\"", "", false},    // a control byte: json.Unmarshal refuses it
		{`[1,2]`, "", false},
		{`"`, "", false},
	} {
		got, ok := plainJSONString(json.RawMessage(c.raw))
		if got != c.want || ok != c.ok {
			t.Errorf("plainJSONString(%q) = %q, %v; want %q, %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}
