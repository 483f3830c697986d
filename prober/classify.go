package prober

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/servingprobe/servingprobe/config"
)

// StatusError is a response whose status was not 200. Body holds a bounded,
// printable snippet of the response body.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

// RequestError is a failure before response headers arrived: DNS, connect,
// TLS, writing the request, or the server closing before it answered.
type RequestError struct {
	Err error
	// Wrote: the whole request was written (httptrace's WroteRequest,
	// without an error) before the failure, so the server had it.
	Wrote bool
}

func (e *RequestError) Error() string { return "request: " + e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// DecodeError is an event the backend could not decode.
type DecodeError struct {
	Event int // 0-based index of the event in the stream
	Err   error
}

func (e *DecodeError) Error() string { return fmt.Sprintf("decode event %d: %v", e.Event, e.Err) }
func (e *DecodeError) Unwrap() error { return e.Err }

// FormatError is a 200 response whose headers show it is not a body we can
// read as a stream: a content encoding we did not ask for (requests send
// Accept-Encoding: identity and compressed bodies are never expanded, so a
// gzip bomb costs nothing), or an HTML page (a proxy's or load balancer's
// error page served with 200), or a stream in a framing the backend does
// not speak (newline-delimited JSON to an SSE backend).
type FormatError struct {
	Header, Value string
	// Why says what the header means for the user, when we know.
	Why string
}

func (e *FormatError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("unreadable 200 response: %s %q: %s", e.Header, e.Value, e.Why)
	}
	return fmt.Sprintf("unreadable 200 response: %s %q", e.Header, e.Value)
}

// wrongProtocolNDJSON explains a newline-delimited JSON stream sent to a
// backend that reads server-sent events.
const wrongProtocolNDJSON = "the server streams newline-delimited JSON, which this backend does not speak " +
	"(it reads server-sent events); ollama's native API streams so: use --backend ollama or ollama-chat, " +
	"or the server's OpenAI-compatible /v1 routes"

// wrongProtocolSSE explains a server-sent events stream sent to a backend
// that reads newline-delimited JSON (ollama's native API).
const wrongProtocolSSE = "the server streams server-sent events, which this backend does not speak " +
	"(it reads ollama's native newline-delimited JSON); OpenAI-compatible routes stream so: " +
	"use --backend openai-chat for /v1/chat/completions or openai for /v1/completions, " +
	"or point the URL at ollama's native API (http://host:11434)"

// checkResponseFormat returns a *FormatError for response headers that no
// LLM server sends with a usable body.
func checkResponseFormat(h http.Header) error {
	if ce := strings.TrimSpace(h.Get("Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		return &FormatError{Header: "Content-Encoding", Value: TruncateUTF8(ce, 64)}
	}
	if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mt == "text/html" {
		return &FormatError{Header: "Content-Type", Value: mt}
	}
	return nil
}

// ErrTooManyRedirects is returned by the client's CheckRedirect when a
// target redirects more than maxRedirects times (a redirect loop). It is an
// HTTP answer, not a connection failure, so it is classified as http_4xx
// like a 3xx that is not followed.
var ErrTooManyRedirects = config.ErrTooManyRedirects

// maxRedirects is net/http's default limit.
const maxRedirects = 10

// Stream ending errors.
var (
	// ErrStreamCut: the body ended before [DONE] or a finish reason.
	ErrStreamCut = errors.New("stream ended before [DONE] or a finish reason")
	// ErrEmptyOutput: a complete response with no output tokens.
	ErrEmptyOutput = errors.New("response carried no output")
	// ErrOverrun: the client cut a stream that ran past OverrunLimit.
	ErrOverrun = errors.New("stream ran past the requested length; cut by the client")
	// ErrTokenless: the client cut a stream that ran on without counting a
	// token for more events or bytes than StallLimits allows. It is an
	// overrun too: the stream went past anything the request asked for.
	ErrTokenless = errors.New("stream ran on without a token; cut by the client")
)

// OverrunLimit is how many output tokens a request for n may stream before
// the client cuts it: max(2n, n+32). A server that honours the length
// stops at n; the margin absorbs servers that count a little differently
// (a stop token, a reasoning preamble, speculative chunks that overshoot)
// while bounding what a server that ignores the length can make us, and
// itself, generate. Without a requested length (n <= 0) there is no limit.
func OverrunLimit(n int) int {
	if n <= 0 {
		return 0
	}
	return max(2*n, n+32)
}

// StallLimits bounds a stretch of a stream without a token, for a request
// of n output tokens: after more than events consecutive events, or more
// than bytes of body, that counted no token, the client cuts the stream
// (ErrTokenless). A real stream has a few such events in a row at most (a
// role-only first chunk, a finish chunk, a usage chunk), each smaller than
// the text it ends; these bounds are far above that, and scale with the
// request like OverrunLimit, so that no stream runs unbounded whatever
// its events carry: the token guard bounds streams whose events count
// tokens, this one all others (keep-alive comments excepted: they are the
// server waiting, bounded by the request's timeout).
func StallLimits(n int) (events int, bytes int64) {
	limit := max(OverrunLimit(n), 64)
	return limit, max(1<<20, 8<<10*int64(limit))
}

// classify maps the error that ended a request to its Outcome. It is the
// only place an Outcome is chosen. Order matters: a deadline or a parent
// cancellation explains whatever error the transport reported after it.
// BuildError is a request that could not be built: nothing was sent.
type BuildError struct{ Err error }

func (e *BuildError) Error() string { return "build request: " + e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

func classify(err error) Outcome {
	if err == nil {
		return OutcomeSuccess
	}
	var (
		be  *BuildError
		se  *StatusError
		re  *RequestError
		de  *DecodeError
		fe  *FormatError
		srv *ServerError
		ne  net.Error
	)
	switch {
	case errors.As(err, &be):
		return OutcomeRequestError
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.As(err, &se):
		switch {
		case se.Code == 429:
			return OutcomeHTTP429
		case se.Code >= 500:
			return OutcomeHTTP5xx
		default: // 4xx, and 1xx/2xx/3xx that are not a usable 200
			return OutcomeHTTP4xx
		}
	case errors.As(err, &ne) && ne.Timeout():
		return OutcomeTimeout
	case errors.Is(err, ErrTooManyRedirects), errors.Is(err, config.ErrRedirectOffHost):
		return OutcomeHTTP4xx
	case errors.As(err, &re):
		if re.Wrote && isClosedErr(re.Err) {
			return OutcomeConnectionClosed
		}
		return OutcomeConnectError
	case errors.Is(err, ErrOverrun), errors.Is(err, ErrTokenless):
		return OutcomeOverrun
	case errors.Is(err, ErrEmptyOutput):
		return OutcomeEmptyOutput
	case errors.As(err, &srv):
		return srv.outcome()
	case errors.As(err, &de), errors.As(err, &fe),
		errors.Is(err, ErrEventTooLarge), errors.Is(err, ErrResponseTooLarge):
		return OutcomeParseError
	case isConnectErr(err):
		return OutcomeConnectError
	default:
		// ErrStreamCut, io.ErrUnexpectedEOF, a reset or any other read
		// error after the headers: the stream was cut.
		return OutcomeStreamCut
	}
}

// outcome is the Outcome of an in-stream failure: a status the server
// states counts as that status would have (so vLLM's in-stream error with
// code 500 is http_5xx, as it is when the same failure comes before the
// headers); a failure without one is server_error.
func (e *ServerError) outcome() Outcome {
	switch {
	case e.Status == 429:
		return OutcomeHTTP429
	case e.Status >= 500:
		return OutcomeHTTP5xx
	case e.Status >= 400:
		return OutcomeHTTP4xx
	default:
		return OutcomeServerError
	}
}

// isClosedErr recognises a connection that closed or was reset under a
// request: the end of the stream where a response header was due (EOF),
// a reset, or net/http's "server closed idle connection", which it
// returns, unexported, when a reused connection turns out closed after
// the request went out on it.
func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		strings.Contains(err.Error(), "server closed idle connection")
}

// isConnectErr recognises connection-phase errors that reach us without a
// RequestError wrapper (they always come wrapped in practice; this keeps
// classify right for callers that pass raw transport errors).
func isConnectErr(err error) bool {
	var (
		dns     *net.DNSError
		op      *net.OpError
		rec     tls.RecordHeaderError
		alert   tls.AlertError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	return errors.As(err, &dns) || (errors.As(err, &op) && op.Op == "dial") ||
		errors.As(err, &rec) || errors.As(err, &alert) || errors.As(err, &verify) ||
		errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}
