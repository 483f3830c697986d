package config

import (
	"encoding/json"
	"testing"
)

func TestRedactJSON(t *testing.T) {
	r := &Redactor{secrets: []string{`sk-a/b"c`, "hunter22"}}
	for _, tc := range []struct{ in, want string }{
		{`{"echo":{"authorization":"Bearer hunter22"}}`, `{"echo":{"authorization":"Bearer <secret>"}}`},
		// The escaped spelling of a secret with a quote in it.
		{`{"k":"sk-a/b\"c"}`, `{"k":"<secret>"}`},
		{`{"clean":1}`, `{"clean":1}`},
		{``, ``},
	} {
		got := string(r.RedactJSON(json.RawMessage(tc.in)))
		if got != tc.want {
			t.Errorf("redactJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
