package prober

import "time"

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
	// OutcomeConnectionClosed is a request whose bytes were all written
	// and whose connection then closed (or was reset) before a response
	// header came: the server accepted the request and died, restarted or
	// dropped it, unlike connect_error, where no request reached it.
	OutcomeConnectionClosed Outcome = "connection_closed"
	OutcomeTimeout          Outcome = "timeout"
	OutcomeStreamCut        Outcome = "stream_cut"
	OutcomeParseError       Outcome = "parse_error"
	// OutcomeServerError is a failure the server reported inside a 200
	// stream without stating an HTTP status (one it states counts as that
	// status: http_4xx, http_429 or http_5xx).
	OutcomeServerError Outcome = "server_error"
	// OutcomeOverrun is a stream the client cut because it ran well past
	// the requested length (see OverrunLimit): the server ignored every
	// length field we sent.
	OutcomeOverrun     Outcome = "overrun"
	OutcomeEmptyOutput Outcome = "empty_output"
	OutcomeCanceled    Outcome = "canceled"
	// OutcomeRequestError is a request that could not be built (its body
	// cannot be encoded, its URL is invalid): nothing was sent, so it is
	// never counted as a network or server failure.
	OutcomeRequestError Outcome = "request_error"
)

// Outcomes lists every Outcome, in a stable order, so that the exporter can
// create every series before the first failure happens.
var Outcomes = []Outcome{
	OutcomeSuccess, OutcomeHTTP4xx, OutcomeHTTP429, OutcomeHTTP5xx,
	OutcomeConnectError, OutcomeConnectionClosed, OutcomeTimeout, OutcomeStreamCut, OutcomeParseError,
	OutcomeServerError, OutcomeOverrun, OutcomeEmptyOutput, OutcomeCanceled,
	OutcomeRequestError,
}

// TokenSource says where a token count came from.
type TokenSource string

// Token sources, best first.
const (
	TokenSourceUsage     TokenSource = "usage"     // the server's OpenAI usage block (ollama: eval_count)
	TokenSourceMetaInfo  TokenSource = "meta_info" // sglang's meta_info counts
	TokenSourceTokenizer TokenSource = "tokenizer" // our tokenizer on the text (a chat prompt through the model's chat template)
	// TokenSourceNoTemplate is for input counts only: our tokenizer on a
	// chat prompt's messages without the chat template the server applies,
	// because the tokenizer has none. An estimate, and a low one: the
	// server counts the template's tokens too.
	TokenSourceNoTemplate TokenSource = "tokenizer_without_chat_template"
	// TokenSourceTokenizerEstimate is for output counts only: our
	// tokenizer on the first MiB of a longer text, scaled by its length
	// (counting more cost seconds of CPU per request; see maxCountBytes).
	TokenSourceTokenizerEstimate TokenSource = "tokenizer_estimate"
	TokenSourceDataset           TokenSource = "dataset"   // the dataset row's prompt length
	TokenSourceRequested         TokenSource = "requested" // the requested length (no count available)
	TokenSourceEvents            TokenSource = "events"    // one per token-bearing event (last resort)
	TokenSourceProtocol          TokenSource = "protocol"  // the protocol defines one token per event (trt)
	// TokenSourceSpread is for per-event counts only: the output count
	// spread over the events by their text (see docs/metrics.md).
	TokenSourceSpread TokenSource = "spread"
	// TokenSourceCounted is for reasoning counts only: the per-event
	// counts of the reasoning events added up, where the server stated
	// none (see Result.EventTokensSource for how those were found).
	TokenSourceCounted TokenSource = "counted"
)

// Event is one stream event that carried output: its arrival time, stamped
// as its bytes arrived and before any decoding, and how many tokens it held.
type Event struct {
	At time.Time `json:"at,omitzero"`
	// Tokens is the event's token count (see Result.EventTokensSource). It
	// is 0 for an event whose text arrived without a new token count (an
	// sglang chunk whose completion_tokens did not move); ITLs skips it.
	Tokens int `json:"tokens,omitzero"`
	// TextEnd is len(GeneratedText) after this event, so that a total
	// count can be spread over the events by their text.
	TextEnd int `json:"text_end,omitzero"`
	// Reasoning: the event carried reasoning only, no answer text (see
	// splitReasoning).
	Reasoning bool `json:"reasoning,omitzero"`
}

// Trace holds the connection phases from net/http/httptrace. Zero values mean
// the phase did not happen (for example, a reused connection has no connect).
type Trace struct {
	DNSStart          time.Time `json:"dns_start,omitzero"`
	DNSDone           time.Time `json:"dns_done,omitzero"`
	ConnectStart      time.Time `json:"connect_start,omitzero"`
	ConnectDone       time.Time `json:"connect_done,omitzero"`
	TLSStart          time.Time `json:"tls_start,omitzero"`
	TLSDone           time.Time `json:"tls_done,omitzero"`
	GotConn           time.Time `json:"got_conn,omitzero"`
	WroteRequest      time.Time `json:"wrote_request,omitzero"`
	FirstResponseByte time.Time `json:"first_response_byte,omitzero"` // headers started arriving
	ConnReused        bool      `json:"conn_reused,omitzero"`
}

// DNS is the DNS lookup time, 0 if there was none.
func (t Trace) DNS() time.Duration { return span(t.DNSStart, t.DNSDone) }

// Connect is the TCP connect time, 0 on a reused connection.
func (t Trace) Connect() time.Duration { return span(t.ConnectStart, t.ConnectDone) }

// TLS is the TLS handshake time, 0 without TLS or on reuse.
func (t Trace) TLS() time.Duration { return span(t.TLSStart, t.TLSDone) }

func span(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return b.Sub(a)
}

// Result is one request, as plain data. Only the exporter turns it into
// metrics; only the bench turns many of them into a summary.
type Result struct {
	RequestID string `json:"request_id,omitzero"`
	// TraceID is the W3C trace id of the traceparent header the request
	// carried (ours, or one a module's headers set), empty when it
	// carried none or an invalid one.
	TraceID string `json:"trace_id,omitzero"`
	Target  string `json:"target,omitzero"`
	Module  string `json:"module,omitzero"`
	Model   string `json:"model,omitzero"`
	Backend string `json:"backend,omitzero"`
	Stream  bool   `json:"stream,omitzero"`

	// Scheduled is when the pacer wanted the request sent; Sent is taken
	// immediately before client.Do. Sent-Scheduled is client queue time.
	Scheduled  time.Time `json:"scheduled,omitzero"`
	Sent       time.Time `json:"sent,omitzero"`
	FirstToken time.Time `json:"first_token,omitzero"` // arrival of the first event with text or tokens
	End        time.Time `json:"end,omitzero"`         // arrival of [DONE], EOF, or the failure
	// FirstAnswer is the arrival of the first event with answer text, set
	// only when reasoning came before it (without reasoning the first
	// token is the answer's: FirstToken).
	FirstAnswer time.Time `json:"first_answer_token,omitzero"`

	// Events holds every output-bearing event in arrival order. Role-only,
	// usage-only and keep-alive events are not in it.
	Events []Event `json:"events,omitzero"`
	// EventTokensSource says where Events[i].Tokens came from: meta_info or
	// usage (cumulative counts on every chunk), protocol (trt), events (one
	// per event, which matched the output count), or spread (the output
	// count shared out over the events by their text). The counts always
	// add up to OutputTokens when that is known.
	EventTokensSource TokenSource `json:"event_tokens_source,omitzero"`

	InputTokens        int         `json:"input_tokens,omitzero"`
	InputTokensSource  TokenSource `json:"input_tokens_source,omitzero"`
	OutputTokens       int         `json:"output_tokens,omitzero"`
	OutputTokensSource TokenSource `json:"output_tokens_source,omitzero"`
	CachedTokens       int         `json:"cached_tokens,omitzero"` // prompt tokens the server reported as cached
	// CacheDetails is sglang's split of the cached tokens by cache tier,
	// from the last event that carried one; nil when none did.
	CacheDetails *CacheDetails `json:"cache_details,omitempty"`
	// ReasoningTokens is the part of OutputTokens that went to reasoning:
	// the server's count where it states one above 0 (source usage), else
	// the per-event counts of the reasoning events added up (source
	// counted). 0 with no source: the request had no reasoning.
	ReasoningTokens       int         `json:"reasoning_tokens,omitzero"`
	ReasoningTokensSource TokenSource `json:"reasoning_tokens_source,omitzero"`

	// RequestedOutputTokens is the max tokens the request asked for.
	RequestedOutputTokens int `json:"requested_output_tokens,omitzero"`

	GeneratedText string `json:"generated_text,omitzero"`
	// Answer is the answer's content alone (no reasoning field, no tool
	// call), what the answer checks read; kept only when the module has
	// checks (it repeats most of GeneratedText), and never written out.
	Answer string `json:"-"`
	// ToolCalls are the answer's tool calls, assembled from the stream's
	// fragments by index (see ToolCall).
	ToolCalls []ToolCall `json:"tool_calls,omitzero"`
	// Checks are the module's answer checks on this answer, in
	// CheckNames order; empty when it has none or the request failed.
	Checks []CheckResult `json:"checks,omitzero"`

	FinishReason string `json:"finish_reason,omitzero"`
	// SpecAcceptLength is sglang's meta_info.spec_accept_length, 0 if absent.
	SpecAcceptLength float64 `json:"spec_accept_length,omitzero"`
	// Server holds the durations and counts the server stated for the
	// request (ollama's final object), zero where it states none.
	Server ServerTimings `json:"server_timings,omitzero"`
	// RequestPath is the path the request was sent to (no host, no
	// query), so that a 404 can be read against the base URL it came from.
	RequestPath string `json:"request_path,omitzero"`
	HTTPStatus  int    `json:"http_status,omitzero"`
	// TLSCertExpiry is CertExpiry of the connection the response came
	// on, on reused connections too; zero without TLS or a response.
	TLSCertExpiry time.Time `json:"tls_cert_expiry,omitzero"`
	Outcome       Outcome   `json:"outcome"`
	Err           string    `json:"error,omitzero"` // human-readable; never a label

	// Clock says what stamped the response's arrival times (and the
	// start): the kernel's receive times, the process's clock, or both.
	// Empty when no response body was read.
	Clock Clock `json:"clock,omitzero"`

	// ConnRetries is 1 when the request was sent again on a new
	// connection because the kept-alive connection it first went out on
	// closed before any response byte (a server that announces keep-alive
	// and then closes it); 0 otherwise. Sent and Trace are the retry's.
	ConnRetries int `json:"conn_retries,omitzero"`

	// KeepAlives counts SSE comment lines; BytesRead the body bytes.
	KeepAlives int   `json:"keep_alives,omitzero"`
	BytesRead  int64 `json:"bytes_read,omitzero"`

	Trace Trace `json:"trace,omitzero"`

	// Turn is the 1-based turn of a conversation probe's request (a
	// module with dataset conversation), 0 for every other request.
	// Before holds, on the last request a conversation probe sent, the
	// results of its earlier turns in order: a probe is one Result, and
	// the scheduler hands each earlier turn to the observers first.
	Turn   int      `json:"turn,omitzero"`
	Before []Result `json:"-"`
}
