package exporter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-kit/log"
	"github.com/go-logfmt/logfmt"
	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/config"
)

// redactor replaces every secret of a config in free text (error messages,
// probe logs) with <secret>. Secret-typed fields already marshal as
// <secret>; this covers the text paths that do not go through a marshaller,
// in case a library quotes a header or a URL with its userinfo.
type redactor struct{ secrets []string }

// minSecretLen avoids redacting trivially short values (a "1" password would
// otherwise blank out every digit of a log line).
const minSecretLen = 4

func newRedactor(cfgs ...*config.Config) *redactor {
	var s []string
	add := func(v string) {
		if len(v) >= minSecretLen {
			s = append(s, v)
		}
	}
	for _, c := range cfgs {
		if c == nil {
			continue
		}
		for _, t := range c.Targets {
			addHTTPSecrets(&t.HTTPClientConfig, add)
			if u, err := url.Parse(t.URL); err == nil && u.User != nil {
				if p, ok := u.User.Password(); ok {
					add(p)
				}
			}
		}
		for _, m := range c.Modules {
			for k, v := range m.Headers {
				if sensitiveHeader(k) {
					add(v)
				}
			}
		}
	}
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortFunc(s, func(a, b string) int { return len(b) - len(a) })
	return &redactor{secrets: slices.Compact(s)}
}

func addHTTPSecrets(h *promconfig.HTTPClientConfig, add func(string)) {
	// Secrets kept in files are read as the client reads them, so that
	// they are redacted too.
	addFile := func(path string) {
		if path == "" {
			return
		}
		if b, err := os.ReadFile(path); err == nil {
			add(strings.TrimSpace(string(b)))
		}
	}
	add(string(h.BearerToken))
	addFile(h.BearerTokenFile)
	if h.BasicAuth != nil {
		add(string(h.BasicAuth.Password))
		pw := string(h.BasicAuth.Password)
		if h.BasicAuth.PasswordFile != "" {
			if b, err := os.ReadFile(h.BasicAuth.PasswordFile); err == nil {
				pw = strings.TrimSpace(string(b))
				add(pw)
			}
		}
		// The Authorization header carries user:password in base64; a
		// server that echoes its request headers sends that form back.
		if pw != "" {
			add(base64.StdEncoding.EncodeToString([]byte(string(h.BasicAuth.Username) + ":" + pw)))
		}
	}
	if h.Authorization != nil {
		add(string(h.Authorization.Credentials))
		addFile(h.Authorization.CredentialsFile)
	}
	if h.OAuth2 != nil {
		add(string(h.OAuth2.ClientSecret))
	}
	add(string(h.TLSConfig.Key))
	if h.HTTPHeaders != nil {
		for _, hd := range h.HTTPHeaders.Headers {
			for _, v := range hd.Secrets {
				add(string(v))
			}
		}
	}
}

func sensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "cookie", "password"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func (r *redactor) redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "<secret>")
		}
	}
	return s
}

// redactJSON redacts secrets inside a JSON document that came from a
// server (a bench run's server_info): in their raw spelling and in their
// JSON-escaped one. If the result no longer parses, it becomes null rather
// than a broken document.
func (r *redactor) redactJSON(b json.RawMessage) json.RawMessage {
	if r == nil || len(b) == 0 {
		return b
	}
	s := string(b)
	changed := false
	for _, sec := range r.secrets {
		q, _ := json.Marshal(sec)
		for _, form := range []string{sec, string(q[1 : len(q)-1])} {
			if strings.Contains(s, form) {
				s, changed = strings.ReplaceAll(s, form, "<secret>"), true
			}
		}
	}
	if !changed {
		return b
	}
	if !json.Valid([]byte(s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// probeLog captures one probe's log records at every level, for the
// history and /probe?debug. Records are kept unformatted: a probe pays for
// one slice copy per line, and logfmt formatting, which cost about a tenth
// of a 32-token probe's CPU, happens only when someone reads the history.
type probeLog struct {
	mu   sync.Mutex
	recs []logRecord
	size int // estimated formatted bytes of recs
	cut  bool
}

type logRecord struct {
	ts time.Time
	kv []any
}

// maxProbeLogRecords and maxProbeLogBytes bound one probe's captured log.
const (
	maxProbeLogRecords = 64
	maxProbeLogBytes   = 16 << 10
)

// Log implements log.Logger. Values of other than plain immutable types are
// rendered now, so that formatting later shows them as they were. Strings
// are cut to maxProbeLogBytes and copied, and records stop once their text
// passes that size: a server-supplied value (a finish reason, a model id)
// must not keep megabytes alive in the history.
func (l *probeLog) Log(kv ...any) error {
	ts := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recs) >= maxProbeLogRecords || l.size > maxProbeLogBytes {
		l.cut = true
		return nil
	}
	c := make([]any, len(kv))
	for i, v := range kv {
		var str string
		switch v := v.(type) {
		case nil, bool, int, int64, int32, uint64, uint32, float64, float32, time.Time, time.Duration:
			c[i] = v
			l.size += 24
			continue
		case string:
			str = v
		case []byte:
			str = string(v) // as logfmt writes bytes
		default:
			str = fmt.Sprint(v)
		}
		if len(str) > maxProbeLogBytes {
			str, l.cut = truncateUTF8(str, maxProbeLogBytes), true // a new string
		} else if _, ok := v.(string); ok {
			str = strings.Clone(str) // it may be a slice of a large server response
		}
		c[i] = str
		l.size += len(str) + 4
	}
	l.recs = append(l.recs, logRecord{ts, c})
	return nil
}

// String formats the records as logfmt lines, each starting with its UTC
// timestamp, as go-kit's DefaultTimestampUTC writes it.
func (l *probeLog) String() string {
	l.mu.Lock()
	recs, cut := l.recs, l.cut
	l.mu.Unlock()
	var b bytes.Buffer
	enc := logfmt.NewEncoder(&b)
	for _, r := range recs {
		_ = enc.EncodeKeyval("ts", r.ts.UTC().Format(time.RFC3339Nano))
		_ = enc.EncodeKeyvals(r.kv...)
		_ = enc.EndRecord()
		if b.Len() > maxProbeLogBytes {
			b.Truncate(maxProbeLogBytes)
			cut = true
			break
		}
	}
	if cut {
		b.WriteString("\n[log truncated]\n")
	}
	return b.String()
}

// teeLogger sends every record to the capture buffer (unfiltered) and to
// the probe logger (which applies --log.prober).
type teeLogger struct{ capture, out log.Logger }

func (t teeLogger) Log(kv ...any) error {
	_ = t.capture.Log(kv...)
	return t.out.Log(kv...)
}
