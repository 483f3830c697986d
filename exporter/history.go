package exporter

import (
	"slices"
	"sync"
	"time"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// HistoryEntry is one finished request as shown on the landing page and at
// /api/v1/results. Text fields are redacted and bounded before they get here.
type HistoryEntry struct {
	ID         uint64    `json:"id"`
	Time       time.Time `json:"time"` // end of the request
	Target     string    `json:"target"`
	Module     string    `json:"module"`
	Model      string    `json:"model"`
	Mode       Mode      `json:"mode"`
	Outcome    string    `json:"outcome"`
	Success    bool      `json:"success"`
	Error      string    `json:"error,omitempty"`
	HTTPStatus int       `json:"http_status,omitempty"`
	RequestID  string    `json:"request_id,omitempty"`
	// TraceID is the W3C trace id the request carried (prober.Result's):
	// the server's trace of it, where the server traces.
	TraceID string `json:"trace_id,omitempty"`

	// Streamed says whether the response was streamed. A response that
	// was not arrives whole: only E2E is measured, and TTFT, TPOT and ITL
	// are absent rather than equal to E2E and 0.
	Streamed     bool     `json:"streamed"`
	TTFTSeconds  *float64 `json:"ttft_seconds,omitempty"`
	E2ESeconds   *float64 `json:"e2e_seconds,omitempty"`
	TPOTSeconds  *float64 `json:"tpot_seconds,omitempty"`
	QueueSeconds *float64 `json:"queue_seconds,omitempty"`
	// ITLMedianSeconds is the median inter-token latency of the request,
	// each event's gap counted once per token it carried: the nearest-rank
	// (lower) median, a gap that happened. `probe` prints the interpolated
	// median of the same gaps (bench_serving's np.percentile), so with an
	// even count the two can differ by half the middle gaps' difference.
	ITLMedianSeconds *float64 `json:"itl_median_seconds,omitempty"`
	// ServerTTFTSeconds is the server's own TTFT as it stated it, and
	// OutsideServerTTFTSeconds TTFT minus it (prober.Samples' split, the
	// histograms' values); both absent where the server stated none.
	ServerTTFTSeconds        *float64 `json:"server_ttft_seconds,omitempty"`
	OutsideServerTTFTSeconds *float64 `json:"outside_server_ttft_seconds,omitempty"`

	// The answer phase, only for a request that reasoned before
	// answering: the time to its first answer token, the answer's TPOT,
	// and how its output split (ReasoningTokenSource: usage when the
	// server stated the count, counted when it did not).
	TTFATSeconds      *float64 `json:"ttfat_seconds,omitempty"`
	AnswerTPOTSeconds *float64 `json:"answer_tpot_seconds,omitempty"`
	// AnswerITLMedianSeconds is the median of the answer's inter-token
	// latencies (the gaps from its first answer token on), taken as
	// ITLMedianSeconds is; absent with fewer than two answer events.
	AnswerITLMedianSeconds *float64 `json:"answer_itl_median_seconds,omitempty"`
	ReasoningTokens        int      `json:"reasoning_tokens,omitempty"`
	ReasoningTokenSource   string   `json:"reasoning_token_source,omitempty"`
	AnswerTokens           int      `json:"answer_tokens,omitempty"`

	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	TokenSource  string `json:"token_source,omitempty"`
	// Clock is what stamped the response's times (prober.Clock).
	Clock        string `json:"clock,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	// ServerTimings are the durations and counts the server stated for the
	// request (ollama's final object: load, prompt eval, eval), in
	// nanoseconds as it states them; absent when it stated none.
	ServerTimings *prober.ServerTimings `json:"server_timings,omitempty"`
	// Text is the start of the generated text.
	Text string `json:"text,omitempty"`
	// Checks are the answer checks' verdicts (prober.CheckResult), their
	// reasons sanitized; a failed or unjudged check keeps the entry among
	// the failures, as a failed request does.
	Checks []prober.CheckResult `json:"checks,omitempty"`
	// Log holds the probe's own log lines, at every level; List formats
	// them from logs, redacted with red.
	Log string `json:"log,omitempty"`

	logs *probeLog
	red  *config.Redactor
	// itl are the request's ITL samples (at most maxHistoryITL), for the
	// landing page's quantiles over the kept history.
	itl []itlSample
}

// History keeps the last N results and, separately, the last N failures,
// so that a failure stays visible after a run of successes pushed it out
// (blackbox_exporter's ResultHistory). It is safe for concurrent use.
type History struct {
	mu       sync.Mutex
	next     uint64
	recent   ring
	failures ring
}

type ring struct {
	buf  []HistoryEntry
	head int // next write position
	full bool
}

func (r *ring) add(e HistoryEntry) {
	if len(r.buf) == 0 {
		return
	}
	r.buf[r.head] = e
	r.head = (r.head + 1) % len(r.buf)
	if r.head == 0 {
		r.full = true
	}
}

func (r *ring) entries() []HistoryEntry {
	if r.full {
		return append(slices.Clone(r.buf[r.head:]), r.buf[:r.head]...)
	}
	return slices.Clone(r.buf[:r.head])
}

// NewHistory returns a History that keeps size results and size failures.
func NewHistory(size int) *History {
	size = max(size, 0)
	return &History{
		recent:   ring{buf: make([]HistoryEntry, size)},
		failures: ring{buf: make([]HistoryEntry, size)},
	}
}

// Add records e, giving it the next id.
func (h *History) Add(e HistoryEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	e.ID = h.next
	h.recent.add(e)
	if !e.Success || !e.checksPassed() {
		h.failures.add(e)
	}
}

// recentEntries returns the last results alone, oldest first, without
// the failures kept apart: a uniform sample in time, which the landing
// page's charts and quantiles need (the kept failures would weigh its
// failures over its successes). Log is not filled in.
func (h *History) recentEntries() []HistoryEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.recent.entries()
}

// List returns the kept entries, newest first, each once.
func (h *History) List() []HistoryEntry {
	h.mu.Lock()
	recent, failures := h.recent.entries(), h.failures.entries()
	h.mu.Unlock()
	seen := make(map[uint64]bool, len(recent))
	out := make([]HistoryEntry, 0, len(recent)+len(failures))
	for _, e := range recent {
		seen[e.ID] = true
		out = append(out, e.formatted())
	}
	for _, e := range failures {
		if !seen[e.ID] {
			out = append(out, e.formatted())
		}
	}
	slices.SortFunc(out, func(a, b HistoryEntry) int {
		switch {
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
	return out
}

func (e HistoryEntry) formatted() HistoryEntry {
	if e.logs != nil {
		e.Log = e.red.Redact(e.logs.String())
	}
	return e
}

// maxHistoryText bounds the generated text kept per entry.
const maxHistoryText = 512

// maxHistoryITL bounds the ITL samples kept per entry: a probe's are
// events, usually fewer than its output tokens.
const maxHistoryITL = 512

// entryOf builds a HistoryEntry from a result; every text in it passes
// red.Sanitize, which redacts before it cuts. model is the one the request
// sent (configured, or detected and checked by config.Redactor.Label),
// bounded and redacted all the same.
func entryOf(r prober.Result, model string, mode Mode, logs *probeLog, red *config.Redactor) HistoryEntry {
	sm := r.SampleSeconds()
	itl := cappedITL(sm.ITL)
	opt := func(v float64) *float64 {
		if v < 0 {
			return nil
		}
		return &v
	}
	end := r.End
	if end.IsZero() {
		end = time.Now()
	}
	var st *prober.ServerTimings
	if r.Server.Stated() {
		st = &r.Server
	}
	e := HistoryEntry{
		Streamed: r.Stream, ServerTimings: st,
		Time: end, Target: r.Target, Module: r.Module, Mode: mode,
		Model:   red.Sanitize(model, config.MaxLabelBytes),
		Outcome: string(r.Outcome), Success: r.Outcome == prober.OutcomeSuccess,
		Error: red.Redact(r.Err), HTTPStatus: r.HTTPStatus, RequestID: r.RequestID, TraceID: r.TraceID,
		TTFTSeconds: opt(sm.TTFT), E2ESeconds: opt(sm.E2E), TPOTSeconds: opt(sm.TPOT), QueueSeconds: opt(sm.Queue),
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, TokenSource: string(r.OutputTokensSource),
		Clock:            string(r.Clock),
		FinishReason:     prober.FinishReasonOf(r.FinishReason),
		Text:             red.Sanitize(r.GeneratedText, maxHistoryText),
		ITLMedianSeconds: opt(weightedQuantile(slices.Clone(itl), 0.5)),
		logs:             logs,
		red:              red,
		itl:              slices.Clip(itl[:min(len(itl), maxHistoryITL)]),
	}
	e.ServerTTFTSeconds, e.OutsideServerTTFTSeconds = opt(sm.ServerTTFT), opt(sm.OutsideServerTTFT)
	for _, c := range r.Checks {
		c.Reason = red.Sanitize(c.Reason, maxCheckReason)
		e.Checks = append(e.Checks, c)
	}
	if sm.Reasoning {
		e.TTFATSeconds = opt(sm.TTFAT)
		e.AnswerTPOTSeconds = opt(sm.AnswerTPOT)
		e.AnswerITLMedianSeconds = opt(weightedQuantile(cappedITL(sm.AnswerITL), 0.5))
		e.ReasoningTokens, e.ReasoningTokenSource, e.AnswerTokens = sm.ReasoningTokens, string(sm.ReasoningTokensSource), sm.AnswerTokens
	}
	return e
}
