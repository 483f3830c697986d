package benchrun

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// requestEvent is one line of --print-requests, kept as values: the
// formatting and the write happen on the writer goroutine.
type requestEvent struct {
	id       int
	end      bool
	at       time.Duration // since the measured run started
	inLen    int
	outLen   int
	outcome  prober.Outcome
	ttft     time.Duration
	latency  time.Duration
	outToks  int
	errText  string
	hasFirst bool
}

// requestLog writes a line when each measured request starts and ends,
// off the request path: a request only appends a small value to a queue
// under a mutex (no formatting, no I/O, never waits for the writer), and
// one goroutine formats the queued lines and writes them through a
// buffer. What it costs a request is that append (tens of nanoseconds,
// amortised allocation); the queue is unbounded, so a slow terminal
// delays the lines, never the requests, and every line is written by
// close.
type requestLog struct {
	w     *bufio.Writer
	start time.Time

	mu     sync.Mutex
	queue  []requestEvent
	nextID int
	wake   chan struct{}
	done   chan struct{}
	closed bool
}

func newRequestLog(w io.Writer, start time.Time) *requestLog {
	l := &requestLog{w: bufio.NewWriterSize(w, 64<<10), start: start, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go l.loop()
	return l
}

func (l *requestLog) push(e requestEvent) {
	l.mu.Lock()
	l.queue = append(l.queue, e)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// started records a request's start and returns its id (ids count the
// measured requests in the order they start, from 0).
func (l *requestLog) started(p datasets.Prompt) int {
	now := time.Now()
	l.mu.Lock()
	id := l.nextID
	l.nextID++
	l.mu.Unlock()
	l.push(requestEvent{id: id, at: now.Sub(l.start), inLen: p.PromptLen, outLen: p.OutputLen})
	return id
}

// ended records how request id finished.
func (l *requestLog) ended(id int, p datasets.Prompt, r *prober.Result) {
	e := requestEvent{id: id, end: true, at: r.End.Sub(l.start), inLen: p.PromptLen, outLen: p.OutputLen,
		outcome: r.Outcome, outToks: r.OutputTokens, errText: r.Err, latency: r.End.Sub(r.Sent)}
	if !r.FirstToken.IsZero() {
		e.ttft, e.hasFirst = r.FirstToken.Sub(r.Sent), true
	}
	l.push(e)
}

func (l *requestLog) loop() {
	defer close(l.done)
	var batch []requestEvent
	var line []byte
	for {
		_, ok := <-l.wake
		l.mu.Lock()
		batch, l.queue = l.queue, batch[:0]
		closed := l.closed
		l.mu.Unlock()
		for _, e := range batch {
			line = e.appendLine(line[:0])
			_, _ = l.w.Write(line)
		}
		_ = l.w.Flush()
		if closed || !ok {
			return
		}
	}
}

// close writes every queued line and stops the writer.
func (l *requestLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
}

// appendLine formats one line: "[request N start] t=... input_len=...
// output_len=..." and "[request N end] t=... success=... ttft_ms=...
// latency_ms=... output_tokens=... error=...", with t in seconds since
// the measured run started.
func (e requestEvent) appendLine(b []byte) []byte {
	kind := " start] t="
	if e.end {
		kind = " end] t="
	}
	b = append(b, "[request "...)
	b = strconv.AppendInt(b, int64(e.id), 10)
	b = append(b, kind...)
	b = strconv.AppendFloat(b, e.at.Seconds(), 'f', 3, 64)
	b = append(b, " input_len="...)
	b = strconv.AppendInt(b, int64(e.inLen), 10)
	b = append(b, " output_len="...)
	b = strconv.AppendInt(b, int64(e.outLen), 10)
	if e.end {
		b = fmt.Appendf(b, " success=%t outcome=%s", e.outcome == prober.OutcomeSuccess, e.outcome)
		if e.hasFirst {
			b = append(b, " ttft_ms="...)
			b = strconv.AppendFloat(b, float64(e.ttft)/float64(time.Millisecond), 'f', 2, 64)
		}
		b = append(b, " latency_ms="...)
		b = strconv.AppendFloat(b, float64(e.latency)/float64(time.Millisecond), 'f', 2, 64)
		b = append(b, " output_tokens="...)
		b = strconv.AppendInt(b, int64(e.outToks), 10)
		if e.errText != "" {
			b = append(b, " error="...)
			b = strconv.AppendQuote(b, e.errText)
		}
	}
	return append(b, '\n')
}
