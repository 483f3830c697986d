package hostile

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
)

// SecretEcho is a server that hands a prober's token back in the spellings
// a redactor that matches text byte for byte misses: its GET /server_info
// (and /get_server_info) answer holds the token with every character
// \u-escaped, as a value and as a key, and with only its first one escaped; its GET
// /v1/models names as its model the token minus its last two characters
// (shaped like a model id); and every POST gets a complete stream whose
// generated text holds the token across byte EchoTextCut, where a cut made
// before redaction would split it. Other GETs answer 200 "ok".
type SecretEcho struct {
	srv   *httptest.Server
	token string

	info, models, streams atomic.Int64
	sawToken              atomic.Bool
}

// EchoTextCut is the byte of the generated text that the token straddles:
// the history keeps the first 512 bytes of a probe's text.
const EchoTextCut = 512

// NewSecretEcho serves the echoes of token on a loopback port.
func NewSecretEcho(token string) *SecretEcho {
	e := &SecretEcho{token: token}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	return e
}

// URL is the server's base URL.
func (e *SecretEcho) URL() string { return e.srv.URL }

// Close stops the server and closes every connection.
func (e *SecretEcho) Close() {
	e.srv.CloseClientConnections()
	e.srv.Close()
}

// Served returns how many server info, model list and stream answers the
// server gave, and whether any request carried the token in its
// Authorization header: a test that plants the token checks these, or it
// proves nothing.
func (e *SecretEcho) Served() (info, models, streams int64, sawToken bool) {
	return e.info.Load(), e.models.Load(), e.streams.Load(), e.sawToken.Load()
}

// EscapeAll spells every character of s as a JSON \u escape.
func EscapeAll(s string) string {
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	return b.String()
}

// EchoText is the generated text of every stream: filler, then the token
// starting 10 bytes before EchoTextCut, then more filler.
func EchoText(token string) string {
	return strings.Repeat("a", EchoTextCut-10) + token + strings.Repeat(" z", 20)
}

func (e *SecretEcho) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	if strings.Contains(r.Header.Get("Authorization"), e.token) {
		e.sawToken.Store(true)
	}
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost:
		e.streams.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		text := EchoText(e.token)
		// Three chunks, the token split between the second and third.
		cut := EchoTextCut - 10 + len(e.token)/2
		var b strings.Builder
		for _, part := range []string{text[:EchoTextCut-10], text[EchoTextCut-10 : cut], text[cut:]} {
			b.WriteString(Chunk(jsonEscape(part)))
		}
		b.WriteString(Finish)
		_, _ = io.WriteString(w, b.String())
	case strings.HasSuffix(p, "/server_info") || strings.HasSuffix(p, "/get_server_info"):
		e.info.Add(1)
		first := EscapeAll(e.token[:1]) + e.token[1:]
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"version":"echo","echo":{"authorization":"Bearer `+EscapeAll(e.token)+`","first":"`+first+
			`","`+EscapeAll(e.token)+`":1},"internal_states":[{"avg_spec_accept_length":1.0}]}`)
	case strings.HasSuffix(p, "/v1/models"):
		e.models.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"`+e.token[:len(e.token)-2]+`","object":"model"}]}`)
	default:
		_, _ = io.WriteString(w, "ok")
	}
}
