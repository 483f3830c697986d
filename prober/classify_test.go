package prober

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
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
		{"error object in a 200 stream", &DecodeError{Event: 1, Err: &ServerError{Message: "engine dead"}}, OutcomeParseError},
		{"event too large", fmt.Errorf("read stream: %w", ErrEventTooLarge), OutcomeParseError},
		{"response too large", fmt.Errorf("read stream: %w", ErrResponseTooLarge), OutcomeParseError},
		{"empty output", ErrEmptyOutput, OutcomeEmptyOutput},
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
	if len(seen) != 10 {
		t.Errorf("len(Outcomes) = %d, want 10", len(seen))
	}
}
