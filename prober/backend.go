package prober

import (
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
)

// SSEEvent is one event from the stream reader. Data is only valid until the
// next event is read; decoders must not keep it.
type SSEEvent struct {
	Event string // the event: field, if any
	Data  []byte // data: lines joined with "\n" (or one NDJSON line)
}

// Usage is a server's token count.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Delta is what one event means. Decode fills it; it never reads a clock.
type Delta struct {
	Text     string
	Tokens   int    // tokens in this event as reported by the server, else 0
	Usage    *Usage // final or cumulative usage block, if sent
	Cumulative bool // Text replaces everything so far (sglang /generate)
	FinishReason string
	Done     bool // [DONE] or a terminal event
}

// RequestOptions are the per-request knobs that do not come from the dataset.
type RequestOptions struct {
	BaseURL      string
	Model        string // sent as "model"
	Stream       bool
	IgnoreEOS    bool
	Temperature  *float64
	TopP         *float64
	IncludeUsage bool // ask for stream_options.include_usage (not sent in sglang compat mode)
	ExtraBody    map[string]any
	Headers      map[string]string
}

// Backend is one wire protocol.
type Backend interface {
	// NewRequest builds the HTTP request for one prompt.
	NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error)
	// Decode interprets one event. It is pure: no clock, no I/O.
	Decode(ev SSEEvent) (Delta, error)
}
