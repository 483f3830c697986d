package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	promconfig "github.com/prometheus/common/config"
)

// Redactor replaces every secret of a config in free text (error messages,
// probe logs) with <secret>. Secret-typed fields already marshal as
// <secret>; this covers the text paths that do not go through a marshaller,
// in case a library quotes a header or a URL with its userinfo.
type Redactor struct {
	secrets []string
	m       *matcher // finds secrets, their escaped spellings and runs of them
}

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
				addURLSecrets(raw, add)
			}
		}
		for _, m := range c.Modules {
			addHeaderSecrets(m.Headers, add)
		}
	}
	return newRedactor(s)
}

func newRedactor(s []string) *Redactor {
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortFunc(s, func(a, b string) int {
		if d := len(b) - len(a); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	s = slices.Compact(s)
	// A secret holding a quote, a backslash or a control character shows
	// in JSON text in its escaped spelling, which decodeEscapes keeps.
	all := slices.Clone(s)
	for _, sec := range s {
		if q := string(appendQuoted(nil, sec)); q != sec {
			all = append(all, q)
		}
	}
	return &Redactor{secrets: s, m: newMatcher(all)}
}

// WithHeaders returns a Redactor that also redacts the values of the
// headers in h whose names say they carry credentials (sensitiveName), and
// the credential part of an Authorization-style value ("Bearer sk-..."
// gives "sk-..." too, the form a server echoes in a message). The bench
// takes its API key this way (OPENAI_API_KEY becomes a header), outside any
// config file. r is not changed; a nil r starts empty.
func (r *Redactor) WithHeaders(h map[string]string) *Redactor {
	var s []string
	if r != nil {
		s = slices.Clone(r.secrets)
	}
	addHeaderSecrets(h, func(v string) {
		if len(v) >= minSecretLen {
			s = append(s, v)
		}
	})
	return newRedactor(s)
}

func addHeaderSecrets(h map[string]string, add func(string)) {
	for k, v := range h {
		if !sensitiveName(k) {
			continue
		}
		add(v)
		if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			add(strings.TrimSpace(cred))
		}
	}
}

// addURLSecrets adds the password of a URL's userinfo and the values of
// query parameters whose names say they carry credentials (?api_key=,
// ?token=, ?sig=): a URL error from net/http quotes the whole URL.
func addURLSecrets(raw string, add func(string)) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	for k, vs := range u.Query() {
		if sensitiveName(k) {
			for _, v := range vs {
				add(v)
				// The escaped spelling is the one a quoted URL shows.
				add(url.QueryEscape(v))
			}
		}
	}
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
		addFile(h.OAuth2.ClientSecretFile)
		for k, v := range h.OAuth2.EndpointParams {
			if sensitiveName(k) {
				add(v)
			}
		}
		addURLSecrets(h.OAuth2.TokenURL, add)
	}
	add(string(h.TLSConfig.Key))
	if h.HTTPHeaders != nil {
		for name, hd := range h.HTTPHeaders.Headers {
			for _, v := range hd.Secrets {
				add(string(v))
			}
			for _, f := range hd.Files {
				addFile(f)
			}
			if sensitiveName(name) {
				// A credential given as a plain value is still one.
				for _, v := range hd.Values {
					add(v)
				}
			}
		}
	}
}

// sensitiveName reports whether a header, query parameter or OAuth2
// endpoint parameter name says that its value is a credential. It errs
// towards redacting: hiding a harmless value costs a reader little, showing
// a key costs the key.
func sensitiveName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "cookie", "password", "passwd", "pwd",
		"sig", "credential", "assertion", "session"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Redact is Sanitize without a cut: JSON escapes decoded, then every
// secret and every run of 8 or more bytes of one replaced with <secret>.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	return r.Sanitize(s, 0)
}

// RedactJSON sanitizes a JSON document that came from a server (a bench
// run's server_info) or holds what one sent (a bench summary or record):
// the document is decoded, every string value and every key passes Redact,
// and the document is encoded again in its own order, numbers as written.
// So the bytes it returns hold no secret in any spelling a JSON escape
// allows, even one escaped inside a string (JSON text a server put in a
// string is decoded once more by Redact). A document that does not parse
// and holds a secret, or part of one, becomes null rather than a broken
// document.
func (r *Redactor) RedactJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	// Most documents hold nothing to redact: when the text with its
	// escapes made canonical shows no secret and no doubly escaped
	// backslash (behind which an escape could hide one level down), the
	// document is returned as it is.
	s := string(b)
	canon := decodeEscapes(s)
	if r == nil || r.m == nil || (r.m.spans(canon) == nil && !strings.Contains(s, `\\`)) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b))
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	err := r.redactJSONValue(dec, &out)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = fmt.Errorf("data after the document")
		}
	}
	if err != nil {
		return json.RawMessage("null")
	}
	return json.RawMessage(out.Bytes())
}

// redactJSONValue copies one JSON value from dec to out, with its keys and
// strings redacted.
func (r *Redactor) redactJSONValue(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		out.WriteByte(byte(v))
		for first := true; dec.More(); first = false {
			if !first {
				out.WriteByte(',')
			}
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				r.writeJSONString(out, k.(string))
				out.WriteByte(':')
			}
			if err := r.redactJSONValue(dec, out); err != nil {
				return err
			}
		}
		end, err := dec.Token()
		if err != nil {
			return err
		}
		out.WriteByte(byte(end.(json.Delim)))
	case string:
		r.writeJSONString(out, v)
	case json.Number:
		out.WriteString(string(v))
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func (r *Redactor) writeJSONString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	out.Write(appendQuoted(nil, r.Redact(strings.ToValidUTF8(s, "\uFFFD"))))
	out.WriteByte('"')
}

// RedactError returns err with its text redacted; it still unwraps to err,
// so that errors.Is and errors.As see the cause. A nil err stays nil, and
// an err with nothing to redact is returned as it is.
func (r *Redactor) RedactError(err error) error {
	if err == nil {
		return nil
	}
	if m := r.Redact(err.Error()); m != err.Error() {
		return &redactedError{msg: m, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// KVLogger is the method set of go-kit's log.Logger, declared here so that
// config need not import a logging library; a go-kit logger is one.
type KVLogger interface {
	Log(keyvals ...any) error
}

// RedactingLogger returns a logger that redacts every string and error
// value with red() before next sees it. red is called per record, so that
// a daemon's logger follows its reloaded config.
func RedactingLogger(next KVLogger, red func() *Redactor) KVLogger {
	return redactingLogger{next, red}
}

type redactingLogger struct {
	next KVLogger
	red  func() *Redactor
}

func (l redactingLogger) Log(kv ...any) error {
	red := l.red()
	out := make([]any, len(kv))
	for i, v := range kv {
		switch v := v.(type) {
		case string:
			out[i] = red.Redact(v)
		case error:
			out[i] = red.Redact(v.Error())
		default:
			out[i] = v
		}
	}
	return l.next.Log(out...)
}
