package prober

import (
	"time"
)

// Outcome classifies how a request ended. It is a closed enum: it is used as
// a Prometheus label value, so nothing a server sends may become one.
type Outcome string

// The outcomes, produced only by classify.
const (
	OutcomeSuccess      Outcome = "success"
	OutcomeHTTP4xx      Outcome = "http_4xx"
	OutcomeHTTP429      Outcome = "http_429"
	OutcomeHTTP5xx      Outcome = "http_5xx"
	OutcomeConnectError Outcome = "connect_error"
	OutcomeTimeout      Outcome = "timeout"
	OutcomeStreamCut    Outcome = "stream_cut"
	OutcomeParseError   Outcome = "parse_error"
	OutcomeEmptyOutput  Outcome = "empty_output"
	OutcomeCanceled     Outcome = "canceled"
)

// Outcomes lists every Outcome, in a stable order, so that the exporter can
// create every series before the first failure happens.
var Outcomes = []Outcome{
	OutcomeSuccess, OutcomeHTTP4xx, OutcomeHTTP429, OutcomeHTTP5xx,
	OutcomeConnectError, OutcomeTimeout, OutcomeStreamCut, OutcomeParseError,
	OutcomeEmptyOutput, OutcomeCanceled,
}

// TokenSource says where a token count came from.
type TokenSource string

// Token sources, best first.
const (
	TokenSourceUsage     TokenSource = "usage"     // the server's OpenAI usage block
	TokenSourceMetaInfo  TokenSource = "meta_info" // sglang's meta_info counts
	TokenSourceTokenizer TokenSource = "tokenizer" // our tokenizer on the text
	TokenSourceRequested TokenSource = "requested" // the requested length (no count available)
	TokenSourceEvents    TokenSource = "events"    // one per token-bearing event (last resort)
)

// Event is one stream event that carried output: its arrival time, stamped
// as its bytes arrived and before any decoding, and how many tokens it held.
type Event struct {
	At     time.Time
	Tokens int
}

// Trace holds the connection phases from net/http/httptrace. Zero values mean
// the phase did not happen (for example, a reused connection has no connect).
type Trace struct {
	DNSStart, DNSDone         time.Time
	ConnectStart, ConnectDone time.Time
	TLSStart, TLSDone         time.Time
	GotConn                   time.Time
	WroteRequest              time.Time
	FirstResponseByte         time.Time // headers started arriving
	ConnReused                bool
}

// Result is one request, as plain data. Only the exporter turns it into
// metrics; only the bench turns many of them into a summary.
type Result struct {
	RequestID string
	Target    string
	Module    string
	Model     string
	Backend   string

	// Scheduled is when the pacer wanted the request sent; Sent is taken
	// immediately before client.Do. Sent-Scheduled is client queue time.
	Scheduled  time.Time
	Sent       time.Time
	FirstToken time.Time // arrival of the first event with text or tokens
	End        time.Time // arrival of [DONE], EOF, or the failure

	// Events holds every output-bearing event in arrival order. Role-only,
	// usage-only and keep-alive events are not in it.
	Events []Event

	InputTokens        int
	InputTokensSource  TokenSource
	OutputTokens       int
	OutputTokensSource TokenSource

	// RequestedOutputTokens is the max tokens the request asked for.
	RequestedOutputTokens int

	GeneratedText string
	FinishReason  string
	HTTPStatus    int
	Outcome       Outcome
	Err           string // human-readable; never a label

	Trace Trace
}
