package config

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"strings"

	promconfig "github.com/prometheus/common/config"
)

// Redactor replaces every secret of a config in free text (error messages,
// probe logs) with <secret>. Secret-typed fields already marshal as
// <secret>; this covers the text paths that do not go through a marshaller,
// in case a library quotes a header or a URL with its userinfo.
type Redactor struct{ secrets []string }

// minSecretLen avoids redacting trivially short values (a "1" password would
// otherwise blank out every digit of a log line).
const minSecretLen = 4

// NewRedactor collects the secrets of the given configs (credentials in
// http_client_config, also those kept in files; a password in a target URL
// or a server_metrics URL; module headers whose names say they carry
// credentials).
func NewRedactor(cfgs ...*Config) *Redactor {
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
			for _, raw := range append([]string{t.URL}, t.ServerMetricsURLs()...) {
				if u, err := url.Parse(raw); err == nil && u.User != nil {
					if p, ok := u.User.Password(); ok {
						add(p)
					}
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
	return &Redactor{secrets: slices.Compact(s)}
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

// Redact replaces every secret in s with <secret>. A nil Redactor returns s.
func (r *Redactor) Redact(s string) string {
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

// RedactJSON redacts secrets inside a JSON document that came from a
// server (a bench run's server_info): in their raw spelling and in their
// JSON-escaped one. If the result no longer parses, it becomes null rather
// than a broken document.
func (r *Redactor) RedactJSON(b json.RawMessage) json.RawMessage {
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
