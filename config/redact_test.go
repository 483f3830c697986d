package config

import (
	"encoding/json"
	"testing"
)

func TestRedactJSON(t *testing.T) {
	r := newRedactor([]string{`sk-a/b"c`, "hunter22"})
	for _, tc := range []struct{ in, want string }{
		{`{"echo":{"authorization":"Bearer hunter22"}}`, `{"echo":{"authorization":"Bearer <secret>"}}`},
		// The escaped spelling of a secret with a quote in it.
		{`{"k":"sk-a/b\"c"}`, `{"k":"<secret>"}`},
		{`{"clean":1}`, `{"clean":1}`},
		{``, ``},
		// Every spelling JSON allows: \u escapes, \/ and a surrogate-free
		// mix, in keys as in values; the document keeps its order and its
		// numbers as written.
		{`{"z":1.50,"echo":"Bearer \u0068unter\u0032\u0032","a":[1e3]}`, `{"z":1.50,"echo":"Bearer <secret>","a":[1e3]}`},
		{`{"sk-a\/b\"c":true}`, `{"<secret>":true}`},
		{`{"k":"sk-a\u002fb\u0022c"}`, `{"k":"<secret>"}`},
		// JSON text inside a string, escaped once more.
		{`{"echo":"{\"auth\":\"\\u0068\\u0075nter22\"}"}`, `{"echo":"{\"auth\":\"<secret>\"}"}`},
		// Not JSON, holding a secret: null, never a broken document.
		{`{"k":"hunter22"`, `null`},
	} {
		got := string(r.RedactJSON(json.RawMessage(tc.in)))
		if got != tc.want {
			t.Errorf("redactJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
