package prober

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
)

// Counter counts tokens in text; it is optional (the bench passes its
// tokenizer). TokenizerCounter adapts a datasets.Tokenizer.
type Counter interface {
	Count(text string) (int, error)
}

// TokenizerCounter counts with a datasets.Tokenizer, without special tokens
// (bench_serving's retokenized count).
type TokenizerCounter struct{ datasets.Tokenizer }

// Count implements Counter.
func (c TokenizerCounter) Count(text string) (int, error) {
	ids, err := c.Encode(text, false)
	return len(ids), err
}

// ContextCounter is a Counter that can give up when its context is done
// (the tokenizer package's Tokenizer is one), so that counting a huge
// text ends at the request's deadline.
type ContextCounter interface {
	CountContext(ctx context.Context, text string) (int, error)
}

// CountContext implements ContextCounter: the tokenizer's own where it
// has one, else Count once ctx is seen to be alive.
func (c TokenizerCounter) CountContext(ctx context.Context, text string) (int, error) {
	if cc, ok := c.Tokenizer.(ContextCounter); ok {
		return cc.CountContext(ctx, text)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return c.Count(text)
}

// maxCountBytes bounds the server text our tokenizer counts for one
// request. A server that states no count leaves it to us, and a text of
// tens of MiB (a 64 MiB max_response_bytes allows that) took seconds of
// CPU per request, and more to spread it over the events. Beyond the
// bound the output count is the count of the first maxCountBytes scaled
// by length, and its source says it is an estimate
// (TokenSourceTokenizerEstimate); events are weighted by their bytes.
// 131,072 tokens of text are about 512 KiB, so real outputs stay exact.
const maxCountBytes = 1 << 20

// Prober sends one request per Run. It is safe for concurrent use if its
// Counter is.
type Prober struct {
	Client  *http.Client
	Backend Backend
	// Name is the --backend name recorded in Result.Backend.
	Name    string
	Options RequestOptions
	Limits  Limits
	Counter Counter // optional
	// Target and Module are copied into each Result.
	Target, Module string
	// Redactor hides the configured credentials in the error text (an
	// error body or in-stream error that echoes them) before the Result
	// leaves Run, so that every surface gets the same redacted text. Nil
	// redacts nothing.
	Redactor *config.Redactor
	// Checks judges each answer (see Checker.Check); nil checks nothing.
	Checks *Checker
}

// drainTimeout bounds how long Run waits, after the stream ended, for the
// rest of the body (the chunked terminator), so the connection is reused.
// The measurement is already taken by then.
const drainTimeout = 100 * time.Millisecond

// drainBytes bounds how much Run reads after the end for the same reason.
const drainBytes = 64 << 10

// maxErrorBody bounds the part of an HTTP error body kept in Result.Err.
const maxErrorBody = 512

// streamState is what one stream needs beyond its Result: the reader and
// the text buffers. It is pooled, so that a steady state of requests
// allocates neither read buffers nor text buffers.
type streamState struct {
	sr    StreamReader
	text  []byte // the generated text so far (or sglang's latest full text)
	raw   []byte // scratch for unescaping a cumulative text
	memo  scanMemo
	delta Delta // the event being handled (in the pooled state, so that decodeMemo's pointer does not allocate)
	clock reqClock
}

var streamPool = sync.Pool{New: func() any { return new(streamState) }}

// maxPooledBuf is the largest buffer put back in the pool.
const maxPooledBuf = 1 << 20

// maxPresizedEvents caps the Result.Events capacity taken from the
// requested output length (40 KiB).
const maxPresizedEvents = 1024

// Run sends one request for prompt and returns its Result. scheduled is when
// the caller wanted it sent (zero if not paced). Run never returns an error:
// a failed request is a Result with an Outcome and Err. It matches the
// runner's RequestFunc, so p.Run can be passed directly.
func (p *Prober) Run(ctx context.Context, prompt datasets.Prompt, scheduled time.Time) Result {
	res := Result{
		Target:                p.Target,
		Module:                p.Module,
		Model:                 modelFor(p.Options, prompt),
		Backend:               p.Name,
		Stream:                p.Options.Stream,
		Scheduled:             scheduled,
		RequestedOutputTokens: prompt.OutputLen,
	}
	err := p.run(ctx, prompt, &res)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// The transport reports a deadline or cancellation in many ways;
		// make the cause explicit so classify sees it.
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	res.Outcome = classify(err)
	if err != nil {
		res.Err = p.Redactor.Redact(err.Error())
	}
	p.countTokens(ctx, prompt, &res)
	res.Checks = p.Checks.Check(&res)
	return res
}

// tracer records httptrace phases. Callbacks may run on the transport's
// dial goroutines, even after the request picked another connection, so
// it is locked and copied out.
type tracer struct {
	mu    sync.Mutex
	t     Trace
	conn  net.Conn // the connection the request got
	wrote bool     // the request was written without an error
}

func (tr *tracer) stamp(dst func(t *Trace) *time.Time, onlyFirst bool) {
	now := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := dst(&tr.t)
	if onlyFirst && !p.IsZero() {
		return
	}
	*p = now
}

// got returns the connection the request got and whether it was reused.
func (tr *tracer) got() (net.Conn, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.conn, tr.t.ConnReused
}

func (tr *tracer) snapshot() Trace {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.t
}

func (tr *tracer) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { tr.stamp(func(t *Trace) *time.Time { return &t.DNSStart }, true) },
		DNSDone:  func(httptrace.DNSDoneInfo) { tr.stamp(func(t *Trace) *time.Time { return &t.DNSDone }, false) },
		// Happy eyeballs may dial several addresses: first start, last done.
		ConnectStart: func(string, string) { tr.stamp(func(t *Trace) *time.Time { return &t.ConnectStart }, true) },
		ConnectDone:  func(string, string, error) { tr.stamp(func(t *Trace) *time.Time { return &t.ConnectDone }, false) },
		TLSHandshakeStart: func() {
			tr.stamp(func(t *Trace) *time.Time { return &t.TLSStart }, true)
		},
		TLSHandshakeDone: func(tls.ConnectionState, error) {
			tr.stamp(func(t *Trace) *time.Time { return &t.TLSDone }, false)
		},
		GotConn: func(info httptrace.GotConnInfo) {
			now := time.Now()
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.t.GotConn, tr.t.ConnReused, tr.conn = now, info.Reused, info.Conn
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			tr.stamp(func(t *Trace) *time.Time { return &t.WroteRequest }, false)
			if info.Err == nil {
				tr.mu.Lock()
				tr.wrote = true
				tr.mu.Unlock()
			}
		},
		GotFirstResponseByte: func() { tr.stamp(func(t *Trace) *time.Time { return &t.FirstResponseByte }, true) },
	}
}

func (p *Prober) run(ctx context.Context, prompt datasets.Prompt, res *Result) error {
	// An image prompt's images are made here, for this request only, so
	// that the prompt set does not hold every image for the whole run.
	prompt, err := prompt.WithImages()
	if err != nil {
		return &BuildError{Err: err}
	}
	req, err := p.Backend.NewRequest(p.Options, prompt)
	if err != nil {
		return &BuildError{Err: err}
	}
	res.TraceID = traceContext(req, p.Options.NoTraceparent)
	res.RequestPath = req.URL.Path
	tr := &tracer{}
	req = req.WithContext(httptrace.WithClientTrace(ctx, tr.clientTrace()))
	defer func() { res.Trace = tr.snapshot() }()

	res.Sent = time.Now()
	resp, err := p.Client.Do(req)
	if err != nil && ctx.Err() == nil && closedUnanswered(tr, err) {
		// A kept-alive connection closed under the request before any
		// response byte: the server answered nothing, so the request is
		// sent again, once, on a connection dialled for it. Servers that
		// announce keep-alive and close after each stream (llama-server)
		// would otherwise show their keep-alive bug as a failure rate.
		// The retry is counted (Result.ConnRetries), and its Sent is the
		// second call's: the first attempt's time is client-side, seen
		// between Scheduled and Sent.
		if retry, berr := p.Backend.NewRequest(p.Options, prompt); berr == nil {
			// The retry is the same request: it continues the same trace.
			if tp := req.Header.Values(TraceparentHeader); len(tp) > 0 {
				retry.Header[http.CanonicalHeaderKey(TraceparentHeader)] = tp
			}
			res.ConnRetries++
			// Closing the idle pool makes the retry dial: a server that
			// closed one idle connection has likely closed the others it
			// left idle too. Connections in use are not touched.
			p.Client.CloseIdleConnections()
			tr = &tracer{}
			req = retry.WithContext(httptrace.WithClientTrace(ctx, tr.clientTrace()))
			res.Sent = time.Now()
			resp, err = p.Client.Do(req)
		}
	}
	if err != nil {
		res.End = time.Now()
		tr.mu.Lock()
		wrote := tr.wrote
		tr.mu.Unlock()
		return &RequestError{Err: err, Wrote: wrote}
	}
	body := resp.Body
	defer func() { drain(body) }()
	res.HTTPStatus = resp.StatusCode
	res.TLSCertExpiry = CertExpiry(resp.TLS)
	kc, userStart := p.requestConn(tr, resp, res)
	if resp.StatusCode != http.StatusOK {
		snippet, rerr := io.ReadAll(io.LimitReader(body, maxErrorBody))
		res.End = time.Now()
		se := &StatusError{Code: resp.StatusCode, Body: TruncateUTF8(strings.TrimSpace(string(snippet)), maxErrorBody)}
		if rerr != nil && se.Body == "" {
			se.Body = "(reading body: " + rerr.Error() + ")"
		}
		return se
	}
	if err := checkResponseFormat(resp.Header); err != nil {
		res.End = time.Now()
		return err
	}
	ct := resp.Header.Get("Content-Type")
	fr := p.Backend.framing()
	// An answer without output is one JSON object, whatever was asked
	// (the embeddings route has no stream): read it whole.
	format := FormatFor(ct, p.Options.Stream && !fr.NoOutput)
	if p.Options.Stream && format == FormatNDJSON && !fr.NDJSON {
		res.End = time.Now()
		return &FormatError{Header: "Content-Type", Value: TruncateUTF8(ct, 64), Why: wrongProtocolNDJSON}
	}
	if p.Options.Stream && format == FormatSSE && fr.NDJSON {
		res.End = time.Now()
		return &FormatError{Header: "Content-Type", Value: TruncateUTF8(ct, 64), Why: wrongProtocolSSE}
	}
	if fr.Raw && p.Options.Stream && isRawType(ct) {
		format = FormatRawOrSSE // SSE passed through under the raw type is still SSE
	}
	err = p.streamClocked(body, format, res, kc, userStart)
	if errors.Is(err, ErrOverrun) || errors.Is(err, ErrTokenless) {
		// Close at once rather than drain: closing an unfinished body drops
		// the connection, which is how the server learns to stop.
		body.Close()
	}
	return err
}

// closedUnanswered says a request failed because the reused connection it
// went out on closed (or was reset) before any byte of a response came.
func closedUnanswered(tr *tracer, err error) bool {
	tr.mu.Lock()
	reused, answered := tr.t.ConnReused, !tr.t.FirstResponseByte.IsZero()
	tr.mu.Unlock()
	return reused && !answered && isClosedErr(err)
}

// requestConn returns the kernel-stamped connection carrying resp, or nil
// for the user clock. Only HTTP/1.x carries one response at a time on a
// connection, so only there are a connection's stamps this response's.
// On a reused connection the request's start becomes the kernel's
// transmit time of its first write (or, without one, the moment that
// write began: userStart), when that is later than the call: what the
// transport's goroutines and the write took before the bytes left is
// client-side, and it shows between Scheduled and Sent instead of inside
// TTFT. On a connection dialled for the request the start stays at the
// call, so TTFT keeps the connection setup, as bench_serving's does.
func (p *Prober) requestConn(tr *tracer, resp *http.Response, res *Result) (kc *stampConn, userStart bool) {
	if resp.ProtoMajor != 1 {
		return nil, false
	}
	c, reused := tr.got()
	if kc = lookupStampConn(c); kc == nil || !reused {
		return kc, false
	}
	start, kernel := kc.requestStart()
	if start.After(res.Sent) {
		res.Sent = start
	}
	return kc, !kernel
}

// stream reads events until the end and fills res, stamped by the user
// clock.
func (p *Prober) stream(body io.Reader, format StreamFormat, res *Result) error {
	return p.streamClocked(body, format, res, nil, false)
}

// streamClocked reads events until the end and fills res. It owns all the
// timing logic: one clock reading per read, taken by the StreamReader from
// kc's kernel stamps when kc is not nil. userStart says res.Sent was taken
// by the process's clock where the kernel's was wanted, which the result's
// clock counts as one user stamp.
func (p *Prober) streamClocked(body io.Reader, format StreamFormat, res *Result, kc *stampConn, userStart bool) error {
	st := streamPool.Get().(*streamState)
	sr := &st.sr
	if st.clock.now == nil {
		st.clock.now = st.clock.read // bound once per pooled state, not per request
	}
	st.clock.c, st.clock.floor, st.clock.kernel, st.clock.user = kc, res.Sent, 0, 0
	if userStart {
		st.clock.user = 1
	}
	sr.Reset(body, format, p.Limits, st.clock.now)
	st.memo.ok = false // the memo is per stream and per decoder
	text := st.text[:0]
	defer func() {
		res.KeepAlives, res.BytesRead = sr.Comments(), sr.BytesRead()
		res.Clock = st.clock.clock()
		st.clock.c = nil
		sr.Reset(nil, FormatAuto, Limits{}, nil) // drop references
		st.delta = Delta{}
		st.text = text[:0]
		if cap(sr.buf) <= maxPooledBuf && cap(st.text) <= maxPooledBuf && cap(st.raw) <= maxPooledBuf &&
			cap(st.memo.prefix)+cap(st.memo.suffix) <= maxPooledBuf {
			streamPool.Put(st)
		}
	}()

	var (
		cumulative  bool // text holds sglang's latest full text
		lastCT      int  // last cumulative completion_tokens
		perEventCT  bool // the first output event had a cumulative count
		finished    bool // a finish reason was seen
		final       Usage
		protocolOne bool
		streamed    int // output tokens so far, as counted into Events
		limit       = OverrunLimit(res.RequestedOutputTokens)
		stallEvents int   // consecutive events that counted no token
		stallFrom   int64 // BytesRead after the last event that counted one
	)
	maxStallEvents, maxStallBytes := StallLimits(res.RequestedOutputTokens)
	fr := p.Backend.framing()
	eofEnds := fr.EOFEnds
	presized := res.Events == nil && res.Stream && res.RequestedOutputTokens > 0
	if presized {
		// One event per token is the usual stream: size for it once rather
		// than growing through ten copies, capped so that a large
		// max_tokens with a short answer does not pin much memory.
		res.Events = make([]Event, 0, min(res.RequestedOutputTokens, maxPresizedEvents))
	}
	var answer []byte // the answer's content, kept only for the checks
	keepAnswer := p.Checks != nil
	err := func() error {
		for i := 0; ; i++ {
			ev, at, err := sr.Next()
			if err == io.EOF {
				res.End = at
				if finished || eofEnds || sr.format == FormatJSON || sr.format == FormatRaw || !res.Stream {
					return nil
				}
				return ErrStreamCut
			}
			if err != nil {
				res.End = at
				return fmt.Errorf("read stream: %w", err)
			}
			if i == 0 && fr.NDJSON && res.Stream && (sr.format == FormatSSE || looksSSE(ev.Data)) {
				// Recognised by its first bytes, whatever the headers said:
				// decoded as this protocol, every event would be empty.
				res.End = at
				return &FormatError{Header: "body", Value: TruncateUTF8(string(ev.Data[:min(len(ev.Data), 32)]), 40), Why: wrongProtocolSSE}
			}
			d := &st.delta
			if sr.format == FormatRaw {
				*d, err = Delta{Text: ev.Data}, nil // the bytes are the text
			} else {
				*d = Delta{}
				err = p.Backend.decodeMemo(ev, &st.memo, d)
			}
			if err != nil {
				res.End = at
				if _, ok := errors.AsType[*ServerError](err); ok {
					return fmt.Errorf("event %d: %w", i, err) // the server's word, not a decoding failure
				}
				return &DecodeError{Event: i, Err: err}
			}
			if d.Done {
				res.End = at
				return nil
			}
			if d.FinishReason != "" {
				res.FinishReason, finished = FinishReasonOf(d.FinishReason), true
			}
			if d.CacheDetails != nil {
				res.CacheDetails = d.CacheDetails // the last wins, as bench_serving's
			}
			if d.SpecAcceptLength > 0 {
				res.SpecAcceptLength = d.SpecAcceptLength
			}
			if d.Server.Stated() {
				res.Server = d.Server
			}

			// New text, appended to the pooled buffer: no allocation per event.
			newText := 0
			if d.Cumulative {
				full := d.Text
				if d.TextRaw {
					st.raw = d.AppendText(st.raw[:0])
					full = st.raw
				}
				if !cumulative {
					text, cumulative = text[:0], true
				}
				if bytes.HasPrefix(full, text) {
					newText = len(full) - len(text)
					text = append(text, full[len(text):]...)
				} else { // the server rewrote history; take its word
					newText = len(full)
					text = append(text[:0], full...)
				}
			} else {
				n := len(text)
				text = d.AppendText(text)
				newText = len(text) - n
				switch {
				case !keepAnswer:
				case d.AnswerSet:
					answer = append(answer, d.Answer...)
				case !d.Reasoning && len(d.ToolCalls) == 0:
					answer = append(answer, text[n:]...)
				}
			}
			if len(d.ToolCalls) > 0 {
				res.ToolCalls = appendToolCalls(res.ToolCalls, d.ToolCalls)
			}

			// New tokens, from a cumulative count when the server gives one
			// on every output event.
			tokens, counted := 0, false
			if u := d.Usage; u.Source != "" {
				if u.PromptTokens == 0 {
					// Anthropic states the input count in message_start
					// only; a later block without one keeps it.
					u.PromptTokens, u.CachedTokens = final.PromptTokens, max(u.CachedTokens, final.CachedTokens)
				}
				final = u
				if u.CompletionTokens > 0 && (perEventCT || len(res.Events) == 0) {
					tokens, counted = max(u.CompletionTokens-lastCT, 0), true
					lastCT = max(lastCT, u.CompletionTokens)
				}
			}
			if tokens == 0 && d.Tokens == 0 && (newText == 0 || counted) {
				// No token counted: role-only, usage-only, finish-only, or
				// text under a cumulative count that did not move. A few
				// are normal; a stream of them is going nowhere.
				if stallEvents++; stallEvents > maxStallEvents || sr.BytesRead()-stallFrom > maxStallBytes {
					res.End = at
					return fmt.Errorf("%w: %d events and %d bytes since the last token", ErrTokenless, stallEvents, sr.BytesRead()-stallFrom)
				}
			} else {
				stallEvents, stallFrom = 0, sr.BytesRead()
			}
			if newText == 0 && tokens == 0 && d.Tokens == 0 {
				continue // role-only, usage-only, finish-only, keep-alive
			}
			switch {
			case counted:
				if len(res.Events) == 0 {
					perEventCT = true
				}
			case d.Tokens > 0:
				tokens, protocolOne = d.Tokens, true
			default:
				tokens, perEventCT = 1, false
			}
			if len(res.Events) == 0 {
				res.FirstToken = at
			}
			res.Events = append(res.Events, Event{At: at, Tokens: tokens, TextEnd: len(text), Reasoning: d.Reasoning && newText > 0})
			if streamed += tokens; limit > 0 && streamed > limit {
				res.End = at
				return ErrOverrun
			}
		}
	}()
	if presized && len(res.Events) == 0 {
		res.Events = nil // as if never sized: "events" stays omitted
	}
	res.GeneratedText = string(text)
	if keepAnswer {
		if cumulative { // sglang's /generate: the latest full text is the answer
			answer = text
		}
		res.Answer = string(answer)
	}
	switch {
	case perEventCT && final.Source != "":
		res.EventTokensSource = final.Source
	case protocolOne:
		res.EventTokensSource = TokenSourceProtocol
	default:
		res.EventTokensSource = TokenSourceEvents
	}
	if final.Source != "" {
		if final.PromptTokens > 0 { // a zeroed usage block is no count
			res.InputTokens, res.InputTokensSource = final.PromptTokens, final.Source
		}
		if final.CompletionTokens > 0 || len(res.Events) == 0 {
			res.OutputTokens, res.OutputTokensSource = final.CompletionTokens, final.Source
		}
		res.CachedTokens = final.CachedTokens
		if final.ReasoningTokens > 0 {
			res.ReasoningTokens, res.ReasoningTokensSource = final.ReasoningTokens, final.Source
		}
	}
	applyCacheDetails(res, res.CacheDetails)
	if err == nil && len(res.Events) == 0 && res.GeneratedText == "" && res.OutputTokens == 0 && !fr.NoOutput {
		return ErrEmptyOutput
	}
	return err
}

// countTokens fills the counts the server did not state and makes the
// per-event counts add up to the output count (see reconcileEvents). The
// output count is, best first: the server's (usage, meta_info), the
// protocol's (a TensorRT-LLM response per token, or its output arrays),
// our tokenizer on the whole generated text, one per event when streaming,
// else the requested length. The input count is the server's, else our
// tokenizer on the prompt, else the dataset row's.
func (p *Prober) countTokens(ctx context.Context, prompt datasets.Prompt, res *Result) {
	if res.Outcome != OutcomeSuccess && res.Outcome != OutcomeEmptyOutput && len(res.Events) == 0 {
		return
	}
	if res.OutputTokensSource == "" {
		switch n, src, ok := p.countOutput(ctx, res.GeneratedText); {
		case res.EventTokensSource == TokenSourceProtocol:
			res.OutputTokens, res.OutputTokensSource = eventTokens(res.Events), TokenSourceProtocol
		case ok:
			res.OutputTokens, res.OutputTokensSource = n, src
		case res.Stream && len(res.Events) > 0:
			res.OutputTokens, res.OutputTokensSource = eventTokens(res.Events), TokenSourceEvents
		case res.GeneratedText != "":
			res.OutputTokens, res.OutputTokensSource = res.RequestedOutputTokens, TokenSourceRequested
		}
	}
	p.reconcileEvents(ctx, res)
	splitReasoning(res)
	if res.InputTokensSource == "" {
		if n, src, ok := p.countInput(ctx, prompt, res.Outcome != OutcomeSuccess); ok {
			res.InputTokens, res.InputTokensSource = n, src
		} else if prompt.PromptLen > 0 {
			res.InputTokens, res.InputTokensSource = prompt.PromptLen, TokenSourceDataset
		}
	}
}

func eventTokens(ev []Event) int {
	n := 0
	for _, e := range ev {
		n += e.Tokens
	}
	return n
}

// reconcileEvents makes the per-event token counts add up to the output
// count. They already do when the server counted every event (cumulative
// usage or meta_info), when the protocol did (trt), or when the events are
// as many as the tokens. Otherwise the total is spread over the events in
// proportion to each chunk's weight: its text retokenized on its own when
// there is a tokenizer, else its length in bytes (at least 1 either way).
// A chunk's own token count is only a weight, never its count: a token's
// text can split into two ids alone ("tok " is two ids to Qwen3), which
// would double every per-token ITL.
//
// When the total is at least the number of events each event first gets
// one token (it arrived, so it held one) and only the rest is shared, by
// weight beyond 1; else the total is shared by weight and some events get
// none. Shares are whole tokens by largest remainder, ties to the earlier
// event, so the counts add up exactly.
func (p *Prober) reconcileEvents(ctx context.Context, res *Result) {
	total := res.OutputTokens
	if len(res.Events) == 0 || total <= 0 || eventTokens(res.Events) == total {
		return
	}
	w := make([]int, len(res.Events))
	start := 0
	for i, e := range res.Events {
		end := min(max(e.TextEnd, start), len(res.GeneratedText))
		chunk := res.GeneratedText[start:end]
		w[i] = len(chunk)
		if len(res.GeneratedText) <= maxCountBytes {
			if n, ok := p.count(ctx, chunk); ok {
				w[i] = n
			}
		}
		w[i] = max(w[i], 1)
		start = end
	}
	base := 0
	if total >= len(w) {
		base = 1
		excess := 0
		for i := range w {
			excess += w[i] - 1
		}
		if excess > 0 {
			for i := range w {
				w[i]--
			}
		} // else every weight is 1: share equally
	}
	shares := apportion(total-base*len(w), w)
	for i := range res.Events {
		res.Events[i].Tokens = base + shares[i]
	}
	res.EventTokensSource = TokenSourceSpread
}

// apportion splits n into whole shares proportional to the weights (not
// all zero) by the largest remainder method; ties go to the earlier index.
func apportion(n int, w []int) []int {
	sum := 0
	for _, x := range w {
		sum += x
	}
	out := make([]int, len(w))
	if sum == 0 {
		for i := range w {
			w[i] = 1
		}
		sum = len(w)
	}
	rem := make([]int, len(w))
	given := 0
	for i, x := range w {
		out[i] = n * x / sum
		rem[i] = n * x % sum
		given += out[i]
	}
	order := make([]int, len(w))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rem[b] - rem[a] })
	for _, i := range order[:n-given] {
		out[i]++
	}
	return out
}

func (p *Prober) count(ctx context.Context, text string) (int, bool) {
	return countText(ctx, p.Counter, text)
}

func countText(ctx context.Context, c Counter, text string) (int, bool) {
	if c == nil || text == "" {
		return 0, false
	}
	if cc, ok := c.(ContextCounter); ok {
		n, err := cc.CountContext(ctx, text)
		return n, err == nil
	}
	n, err := c.Count(text)
	return n, err == nil
}

func (p *Prober) countOutput(ctx context.Context, text string) (int, TokenSource, bool) {
	return CountOutput(ctx, p.Counter, text)
}

// CountOutput counts a server's text with c, at most maxCountBytes of it:
// a longer text's count is scaled from its first maxCountBytes (cut at a
// rune), and its source says it is an estimate. It stops, reporting no
// count, once ctx is done (with a ContextCounter). Every count of server
// text goes through it: a request's output count here, the bench's
// retokenized total in runner.
func CountOutput(ctx context.Context, c Counter, text string) (int, TokenSource, bool) {
	if len(text) <= maxCountBytes {
		n, ok := countText(ctx, c, text)
		return n, TokenSourceTokenizer, ok
	}
	cut := maxCountBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	n, ok := countText(ctx, c, text[:cut])
	if !ok || cut == 0 {
		return 0, "", false
	}
	return int(math.Round(float64(n) * float64(len(text)) / float64(cut))), TokenSourceTokenizerEstimate, true
}

// countInput counts a prompt's input tokens where the server stated none.
// For a request that failed before its usage on a chat backend it counts
// as the server does, the prompt through the model's chat template (7
// tokens of text are 15 with Qwen3's); without a template to apply the
// count is of the text alone and its source says so. A request that
// succeeded without a usage block keeps the count of its text, which is
// the dataset's prompt length that bench's input_lens holds (as
// bench_serving's does), so that the probe, the daemon and the bench
// record show one value; its token_source says it is ours.
func (p *Prober) countInput(ctx context.Context, prompt datasets.Prompt, failed bool) (int, TokenSource, bool) {
	text := promptText(prompt)
	if info, err := LookupBackend(p.Name); err == nil && failed && info.Chat && len(prompt.IDs) == 0 {
		tc, ok := p.Counter.(TokenizerCounter)
		tmpl, can := tc.Tokenizer.(datasets.ChatTemplater)
		if !ok || !can {
			n, ok := p.count(ctx, text)
			return n, TokenSourceNoTemplate, ok
		}
		msgs := prompt.Messages
		if len(msgs) == 0 {
			msgs = []datasets.Message{{Role: "user", Content: prompt.Text}}
		}
		s, err := tmpl.ApplyChatTemplate(slices.Clone(msgs), true)
		if err != nil {
			n, ok := p.count(ctx, text)
			return n, TokenSourceNoTemplate, ok
		}
		n, ok := p.count(ctx, s)
		return n, TokenSourceTokenizer, ok
	}
	n, ok := p.count(ctx, text)
	return n, TokenSourceTokenizer, ok
}

// promptText is the text a tokenizer should count for the prompt (chat
// template tokens excluded: this is a lower bound for chat).
func promptText(p datasets.Prompt) string {
	if len(p.Messages) == 0 {
		return p.Text
	}
	var b strings.Builder
	for _, m := range p.Messages {
		b.WriteString(m.Content)
	}
	return b.String()
}

// drain reads a bounded tail of the body so the connection can be reused,
// then closes it. A server that keeps the body open after [DONE] is cut off
// after drainTimeout.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(drainTimeout, func() { body.Close() })
	_, _ = io.CopyN(io.Discard, body, drainBytes)
	t.Stop()
	body.Close()
}
