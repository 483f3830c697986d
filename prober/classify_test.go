package prober

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		want Outcome
	}{
		{"nil", nil, OutcomeSuccess},
		{"400", &StatusError{Code: 400}, OutcomeHTTP4xx},
		{"401", &StatusError{Code: 401}, OutcomeHTTP4xx},
		{"404", &StatusError{Code: 404}, OutcomeHTTP4xx},
		{"429", &StatusError{Code: 429}, OutcomeHTTP429},
		{"500", &StatusError{Code: 500}, OutcomeHTTP5xx},
		{"503", &StatusError{Code: 503}, OutcomeHTTP5xx},
		{"302 not followed", &StatusError{Code: 302}, OutcomeHTTP4xx},
		{"204", &StatusError{Code: 204}, OutcomeHTTP4xx},
		{"connection refused", &RequestError{Err: &url.Error{Op: "Post", URL: "http://x", Err: dial}}, OutcomeConnectError},
		{"DNS", &RequestError{Err: &url.Error{Op: "Post", Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}}}, OutcomeConnectError},
		{"raw DNS", &net.DNSError{Err: "no such host"}, OutcomeConnectError},
		{"TLS bad certificate", &RequestError{Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, OutcomeConnectError},
		{"raw TLS record", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, OutcomeConnectError},
		{"redirect loop, raw net/http error", &RequestError{Err: &url.Error{Op: "Post", Err: errors.New("stopped after 10 redirects")}}, OutcomeConnectError},
		{"redirect loop", &RequestError{Err: &url.Error{Op: "Post", Err: fmt.Errorf("%w: stopped after 10", ErrTooManyRedirects)}}, OutcomeHTTP4xx},
		{"gzip body not asked for", &FormatError{Header: "Content-Encoding", Value: "gzip"}, OutcomeParseError},
		{"HTML page with 200", &FormatError{Header: "Content-Type", Value: "text/html"}, OutcomeParseError},
		{"closed before headers", &RequestError{Err: &url.Error{Op: "Post", Err: io.EOF}}, OutcomeConnectError},
		{"closed after the request was written", &RequestError{Err: &url.Error{Op: "Post", Err: io.EOF}, Wrote: true}, OutcomeConnectionClosed},
		{"reset after the request was written", &RequestError{Err: &url.Error{Op: "Post", Err: &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}, Wrote: true}, OutcomeConnectionClosed},
		{"refused, with a stale written flag", &RequestError{Err: &url.Error{Op: "Post", Err: dial}, Wrote: true}, OutcomeConnectError},
		{"deadline after the request was written", &RequestError{Err: &url.Error{Op: "Post", Err: context.DeadlineExceeded}, Wrote: true}, OutcomeTimeout},
		{"request deadline", &RequestError{Err: &url.Error{Op: "Post", Err: context.DeadlineExceeded}}, OutcomeTimeout},
		{"net timeout (client Timeout)", &RequestError{Err: &url.Error{Op: "Post", Err: timeoutErr{}}}, OutcomeTimeout},
		{"read timeout mid-stream", fmt.Errorf("read stream: %w", timeoutErr{}), OutcomeTimeout},
		{"deadline wraps a reset", fmt.Errorf("%w: %w", context.DeadlineExceeded, syscall.ECONNRESET), OutcomeTimeout},
		{"parent canceled", fmt.Errorf("%w: read stream: %w", context.Canceled, errors.New("body closed")), OutcomeCanceled},
		{"canceled before headers", &RequestError{Err: &url.Error{Op: "Post", Err: context.Canceled}}, OutcomeCanceled},
		{"EOF before [DONE]", ErrStreamCut, OutcomeStreamCut},
		{"partial event at EOF", fmt.Errorf("read stream: %w", io.ErrUnexpectedEOF), OutcomeStreamCut},
		{"reset mid-stream", fmt.Errorf("read stream: %w", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), OutcomeStreamCut},
		{"malformed JSON", &DecodeError{Event: 3, Err: errors.New("invalid character")}, OutcomeParseError},
		{"error in a 200 stream, no status", fmt.Errorf("event 1: %w", &ServerError{Message: "engine dead"}), OutcomeServerError},
		{"error in a 200 stream, status 503", fmt.Errorf("event 1: %w", &ServerError{Message: "shutting down", Status: 503}), OutcomeHTTP5xx},
		{"error in a 200 stream, status 400", &ServerError{Message: "too long", Status: 400}, OutcomeHTTP4xx},
		{"error in a 200 stream, status 429", &ServerError{Message: "busy", Status: 429}, OutcomeHTTP429},
		{"event too large", fmt.Errorf("read stream: %w", ErrEventTooLarge), OutcomeParseError},
		{"response too large", fmt.Errorf("read stream: %w", ErrResponseTooLarge), OutcomeParseError},
		{"empty output", ErrEmptyOutput, OutcomeEmptyOutput},
		{"stream cut past the requested length", ErrOverrun, OutcomeOverrun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.err); got != tc.want {
				t.Errorf("classify(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

// TestOutcomesClosed checks Outcomes lists every constant exactly once, so
// the exporter's pre-created series match classify's range.
func TestOutcomesClosed(t *testing.T) {
	seen := map[Outcome]bool{}
	for _, o := range Outcomes {
		if seen[o] {
			t.Errorf("Outcomes lists %q twice", o)
		}
		seen[o] = true
	}
	if len(seen) != 14 {
		t.Errorf("len(Outcomes) = %d, want 14", len(seen))
	}
}

// TestInStreamErrorShapes pins how each server's in-stream error object
// reads: its message, and the HTTP status it states, if any.
func TestInStreamErrorShapes(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       *ServerError
	}{
		{"triton and ollama: a string", `{"error":"Executor failed"}`, &ServerError{Message: "Executor failed"}},
		{"vLLM: an object with a status code", `{"error":{"message":"engine dead","type":"InternalServerError","param":null,"code":500}}`, &ServerError{Message: "engine dead", Status: 500}},
		{"sglang /generate: an object without a code", `{"error":{"message":"aborted"}}`, &ServerError{Message: "aborted"}},
		{"OpenAI: a string code says no status", `{"error":{"message":"too long","code":"context_length_exceeded"}}`, &ServerError{Message: "too long"}},
		{"older vLLM: top level", `{"object":"error","message":"bad","code":400}`, &ServerError{Message: "bad", Status: 400}},
		{"lmdeploy proxy: error true", `{"error":true,"status":500,"message":"Internal streaming error"}`, &ServerError{Message: "Internal streaming error", Status: 500}},
		{"a code that is no HTTP status", `{"error":{"message":"x","code":7}}`, &ServerError{Message: "x"}},
		{"error false is no error", `{"error":false,"choices":[]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeCompletionsJSON([]byte(tc.data))
			var got *ServerError
			if err != nil {
				var ok bool
				if got, ok = errors.AsType[*ServerError](err); !ok {
					t.Fatalf("Decode(%q) error = %v, want a *ServerError", tc.data, err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode(%q) (-want +got):\n%s", tc.data, diff)
			}
		})
	}
}

// TestUnbuildableRequest: a request whose body cannot be encoded is a
// request_error, never a network class, and nothing is sent.
func TestUnbuildableRequest(t *testing.T) {
	sent := false
	p := &Prober{
		Client: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			sent = true
			return nil, errors.New("must not be called")
		})},
		Backend: openAIChat{},
		Options: RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true,
			ExtraBody: map[string]any{"bad": math.Inf(1)}},
	}
	r := p.Run(t.Context(), datasets.Prompt{Text: "x", OutputLen: 4}, time.Now())
	if r.Outcome != OutcomeRequestError || sent || r.HTTPStatus != 0 {
		t.Errorf("outcome %s (%s), sent %v, status %d; want request_error, nothing sent", r.Outcome, r.Err, sent, r.HTTPStatus)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestConnectionClosedAfterRequest: real loopback servers. One reads the
// whole request and closes the connection without answering (a server
// killed while requests wait for their headers; kill -9 of a real server
// gave "Post …: EOF"), one resets it the same way, and a closed port
// refuses. Only the refusal is connect_error: the others had the request.
func TestConnectionClosedAfterRequest(t *testing.T) {
	closer := func(linger bool) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			if tc, ok := c.(*net.TCPConn); ok && linger {
				_ = tc.SetLinger(0) // close with a reset
			}
			c.Close()
		}))
	}
	closing, resetting := closer(false), closer(true)
	defer closing.Close()
	defer resetting.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name, url string
		want      Outcome
	}{
		{"closed after the request", closing.URL, OutcomeConnectionClosed},
		{"reset after the request", resetting.URL, OutcomeConnectionClosed},
		{"refused", refused, OutcomeConnectError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Prober{Client: &http.Client{Transport: &http.Transport{}}, Backend: openAIChat{}, Name: "openai-chat",
				Options: RequestOptions{BaseURL: tc.url, Model: "m", Stream: true}}
			res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 4}, time.Time{})
			if res.Outcome != tc.want {
				t.Errorf("outcome = %q (%s), want %q", res.Outcome, res.Err, tc.want)
			}
		})
	}
}
