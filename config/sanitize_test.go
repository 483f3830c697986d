package config

import (
	"fmt"
	"strings"
	"testing"
)

// token is a 31-character bearer token, as the hostile tests plant it.
const token = "sk-live-4f9c2a7e1b8d6053aa7c9e1"

// escapeAll spells every character of s as a \u escape.
func escapeAll(s string) string {
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	return b.String()
}

func TestSanitize(t *testing.T) {
	r := (*Redactor)(nil).WithHeaders(map[string]string{"Authorization": "Bearer " + token, "X-Api-Key": "abcde"})
	long := strings.Repeat("x", 500) + token + strings.Repeat("y", 100) // the token across byte 512
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"raw", "key " + token + " end", 0, "key <secret> end"},
		{"header form", "Authorization: Bearer " + token, 0, "Authorization: <secret>"},
		{"all escaped", `{"k":"` + escapeAll(token) + `"}`, 0, `{"k":"<secret>"}`},
		{"first letter escaped", `\u0073k-live-4f9c2a7e1b8d6053aa7c9e1`, 0, "<secret>"},
		{"slash escape", `Bearer sk\/live`, 0, `Bearer sk/live`},
		{"near secret, minus two", "model " + token[:len(token)-2], 0, "model <secret>"},
		{"eight-byte run", "x" + token[10:18] + "x", 0, "x<secret>x"},
		{"seven bytes are not a run", "x" + token[10:17] + "x", 0, "x" + token[10:17] + "x"},
		{"two runs merge", token[:12] + token[5:20], 0, "<secret>"},
		{"short secret whole only", "abcde abcd", 0, "<secret> abcd"},
		{"straddling the cut", long, 512, strings.Repeat("x", 500) + "<secret>" + strings.Repeat("y", 4) + "…"},
		{"cut on a rune", strings.Repeat("é", 10), 5, "éé…"},
		{"kept escapes", `a\"b\\c\nd\u0000e\u000Af\bg`, 0, `a\"b\\c\nd\u0000e\nf\u0008g`},
		{"surrogate pair", `\ud83d\ude00 and lone \ud83d`, 0, "😀 and lone \\ud83d"},
		{"escaped backslash is not an escape", `\\u0073k`, 0, `\\u0073k`},
		{"invalid utf-8", "a\xffb", 10, "a\uFFFDb"},
		{"nothing to do", "hello", 0, "hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Sanitize(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("Sanitize(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			for i := 0; i+runLen <= len(token); i++ {
				if strings.Contains(got, token[i:i+runLen]) {
					t.Errorf("Sanitize(%q) = %q holds %q of the token", tc.in, got, token[i:i+runLen])
				}
			}
		})
	}
}

// TestSanitizeCutAfterRedaction: wherever a cut falls, what is left of
// the token is redacted, whole.
func TestSanitizeCutAfterRedaction(t *testing.T) {
	r := (*Redactor)(nil).WithHeaders(map[string]string{"Authorization": "Bearer " + token})
	for at := 0; at <= len(token); at++ {
		in := strings.Repeat("x", 512-at) + token + "tail"
		got := r.Sanitize(in, 512)
		if want := TruncateUTF8(strings.Repeat("x", 512-at)+"<secret>tail", 512); got != want {
			t.Errorf("token at 512-%d: Sanitize = …%q, want …%q", at, got[max(0, len(got)-40):], want[max(0, len(want)-40):])
		}
	}
}

func TestLabel(t *testing.T) {
	r := (*Redactor)(nil).WithHeaders(map[string]string{"Authorization": "Bearer " + token})
	for _, tc := range []struct {
		id      string
		ok      bool
		wantErr string
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", true, ""},
		{"llama3.2:1b", true, ""},
		{"/models/qwen2.5-0.5b-instruct-q4_k_m.gguf", true, ""},
		{"org/model@rev+lora_1", true, ""},
		{strings.Repeat("m", MaxLabelBytes), true, ""},
		{strings.Repeat("m", MaxLabelBytes+1), false, "bytes (at most 128)"},
		{"", false, "empty"},
		{"Authorization=Bearer sk-x", false, "not a letter"},
		{"Authorization: Bearer x", false, "not a letter"},
		{`m"><script>`, false, "not a letter"},
		{"modèle", false, "not a letter"},
		{"a\nb", false, "not a letter"},
		{`sk\u002dx`, false, "not a letter"},
		{token, false, "credential"}, // shaped like an id, but the configured key
		{"prefix-" + token, false, "credential"},
		{token[:len(token)-2], false, "credential"},
		{escapeAll(token), false, "credential"},
		{"Authorization=Bearer " + token, false, "credential"},
	} {
		got, err := r.Label(tc.id)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Label(%q) = %q, %v; want ok %v, an error saying %q", tc.id, got, err, tc.ok, tc.wantErr)
		}
		if want := map[bool]string{true: tc.id, false: LabelPlaceholder}[tc.ok]; got != want {
			t.Errorf("Label(%q) = %q, want %q", tc.id, got, want)
		}
		if err != nil && tc.id != "" && (strings.Contains(err.Error(), token[:8]) || strings.Contains(err.Error(), tc.id)) {
			t.Errorf("Label(%q) = %v: the error quotes the id", tc.id, err)
		}
	}
}

// TestRedactingLoggerDecodes: a log value holding the token in any
// spelling is logged without it.
func TestRedactingLoggerDecodes(t *testing.T) {
	r := (*Redactor)(nil).WithHeaders(map[string]string{"Authorization": "Bearer " + token})
	var got []any
	l := RedactingLogger(kvFunc(func(kv ...any) error { got = kv; return nil }), func() *Redactor { return r })
	_ = l.Log("msg", "Probe failed", "err", fmt.Errorf("401: %s", escapeAll(token)), "model", token[:20])
	if want := fmt.Sprint([]any{"msg", "Probe failed", "err", "401: <secret>", "model", "<secret>"}); fmt.Sprint(got) != want {
		t.Errorf("logged %v, want %v", got, want)
	}
}

type kvFunc func(...any) error

func (f kvFunc) Log(kv ...any) error { return f(kv...) }

// The redactor runs on every log record and every probe error: these
// measure a log line and a 16 KiB body with nothing to redact (the common
// case) against a config with three secrets.
func BenchmarkRedact(b *testing.B) {
	r := (*Redactor)(nil).WithHeaders(map[string]string{"Authorization": "Bearer " + token, "X-Api-Key": "apikey-0123456789abcdef", "Cookie": "session=9f8e7d6c5b4a"})
	line := `level=debug target=vllm-a model=meta-llama/Llama-3.1-8B-Instruct msg="Probe done" ttft_seconds=0.0412 outcome=success`
	body := strings.Repeat(`{"id":"chatcmpl-1","choices":[{"delta":{"content":"The quick brown fox\n"}}]} `, 16<<10/80)
	for _, bc := range []struct{ name, s string }{{"line", line}, {"16KiB", body}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.s)))
			for b.Loop() {
				_ = r.Redact(bc.s)
			}
		})
	}
}
