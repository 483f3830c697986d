package prober

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"time"
)

// StreamFormat is how a response body is split into events.
type StreamFormat int

// Stream formats.
const (
	// FormatAuto sniffs the first non-blank byte: '{' or '[' is NDJSON,
	// anything else is SSE.
	FormatAuto StreamFormat = iota
	FormatSSE
	FormatNDJSON
	// FormatJSON is a whole, non-streamed body: one event at EOF.
	FormatJSON
	// FormatRaw is an unframed body, the concatenation of the server's
	// chunks with no terminator (a truss model whose predict returns a
	// generator): each Read that returns bytes is one event, and EOF ends
	// the stream. Read boundaries are the only chunk boundaries left, so
	// they are the events' arrival times.
	FormatRaw
	// FormatRawOrSSE is FormatRaw unless the body's first bytes are a
	// server-sent events line (data:, event:, id:, retry: or a comment),
	// in which case it is FormatSSE: a truss model that passes an OpenAI
	// engine's stream through serves SSE under the raw Content-Type
	// (application/octet-stream). A raw body whose first read is a strict
	// prefix of such a line ("da") waits for the next read to decide.
	FormatRawOrSSE
)

// isRawType reports the Content-Types of an unframed stream: what truss
// serves a generator with (application/octet-stream), and text/plain.
func isRawType(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/octet-stream" || mt == "text/plain"
}

// FormatFor picks the format from a response Content-Type. Unknown types
// are sniffed, except application/json for a request that did not ask to
// stream, which is one JSON document.
func FormatFor(contentType string, stream bool) StreamFormat {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "text/event-stream":
		return FormatSSE
	case "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines":
		return FormatNDJSON
	case "application/json":
		if !stream {
			return FormatJSON
		}
	}
	return FormatAuto
}

// Limits bound what a server can make us buffer.
type Limits struct {
	MaxEventBytes    int   // one event's data; default DefaultMaxEventBytes
	MaxResponseBytes int64 // the whole body; default DefaultMaxResponseBytes
}

// Default limits: a 16 MiB event fits a long cumulative sglang chunk; the
// body cap stops an endless stream from being read forever at full speed.
const (
	DefaultMaxEventBytes    = 16 << 20
	DefaultMaxResponseBytes = 256 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxEventBytes <= 0 {
		l.MaxEventBytes = DefaultMaxEventBytes
	}
	if l.MaxResponseBytes <= 0 {
		l.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return l
}

// Errors from the stream reader.
var (
	ErrEventTooLarge    = errors.New("event too large")
	ErrResponseTooLarge = errors.New("response too large")
)

// initialBufSize is the first read buffer: small, so that an idle open
// stream is cheap (its reader waits in Read with this buffer). It grows for
// long lines, and, up to burstBufSize, when a read fills all the free room
// (a server that coalesces its writes), so that a burst is taken in few
// reads. A pooled reader keeps its grown buffer.
const (
	initialBufSize = 4 << 10
	burstBufSize   = 64 << 10
)

// StreamReader splits a response body into events and stamps each one with
// the time its bytes arrived.
//
// Subtleness ahead: the arrival time of an event is the time at which the
// Read that delivered the end of its last data line returned. It is taken
// right after Read returns, before any parsing or decoding. Several events
// delivered by one Read share its time, which is the truth: they arrived
// together. The reader never reads ahead while a complete event is
// buffered, so no later read can be blamed for an earlier event.
//
// The reader allocates only when its buffers grow; Data returned by Next is
// valid until the following call.
type StreamReader struct {
	r      io.Reader
	now    func() time.Time
	format StreamFormat
	lim    Limits

	buf        []byte
	start, end int // unconsumed bytes are buf[start:end]
	total      int64
	eof        bool
	readErr    error
	lastRead   time.Time // when the most recent Read with data returned
	errAt      time.Time // when the Read that returned EOF or an error returned
	skipLF     bool      // the previous line ended in CR at the end of the buffer
	noCR       int       // buf[start:noCR] holds no CR (scanned once, not per line)
	discarding bool      // inside an over-long non-data line we drop
	filled     bool      // the last read filled all the free room

	// the event being assembled. data aliases buf while aliased (one data
	// line, not yet moved by fill), else it is in dataBuf's array.
	data     []byte
	dataBuf  []byte
	aliased  bool
	hasData  bool
	dataAt   time.Time
	event    string
	consumed bool // data was handed out; reset before the next event

	comments int
}

// NewStreamReader returns a reader over r. now is the clock (time.Now when
// nil).
func NewStreamReader(r io.Reader, format StreamFormat, lim Limits, now func() time.Time) *StreamReader {
	s := &StreamReader{}
	s.Reset(r, format, lim, now)
	return s
}

// Reset reuses s, and its buffers, for another body.
func (s *StreamReader) Reset(r io.Reader, format StreamFormat, lim Limits, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	buf, dataBuf := s.buf, s.dataBuf[:0]
	if buf == nil {
		buf = make([]byte, initialBufSize)
	}
	*s = StreamReader{r: r, now: now, format: format, lim: lim.withDefaults(), buf: buf, dataBuf: dataBuf}
}

// Comments counts SSE comment lines seen (keep-alives).
func (s *StreamReader) Comments() int { return s.comments }

// BytesRead is the body size read so far.
func (s *StreamReader) BytesRead() int64 { return s.total }

// Next returns the next event and its arrival time. At the end of the body
// it returns io.EOF, with the time the end was seen. A body that ends inside
// an event returns io.ErrUnexpectedEOF. Read errors are returned with the
// time they happened.
func (s *StreamReader) Next() (SSEEvent, time.Time, error) {
	if s.consumed {
		s.data, s.aliased, s.hasData, s.event, s.consumed = s.dataBuf[:0], false, false, "", false
	}
	for {
		if (s.format == FormatAuto || s.format == FormatRawOrSSE) && !s.sniff() {
			if err := s.fill(); err != nil {
				return SSEEvent{}, s.errAt, err
			}
			continue
		}
		if s.format == FormatRaw {
			if s.start < s.end {
				ev := SSEEvent{Data: s.buf[s.start:s.end]}
				s.start = s.end
				s.consumed = true
				return ev, s.lastRead, nil
			}
			if s.eof {
				return SSEEvent{}, s.errAt, io.EOF
			}
			if err := s.fill(); err != nil {
				return SSEEvent{}, s.errAt, err
			}
			continue
		}
		if s.format == FormatJSON {
			if !s.eof {
				if err := s.fill(); err != nil {
					return SSEEvent{}, s.errAt, err
				}
				continue
			}
			return s.whole()
		}
		for {
			line, ok, err := s.line()
			if err != nil {
				return SSEEvent{}, s.lastRead, err
			}
			if !ok {
				break
			}
			ev, ok, err := s.handleLine(line)
			if err != nil {
				return SSEEvent{}, s.lastRead, err
			}
			if ok {
				return ev, s.dataAt, nil
			}
		}
		if s.eof {
			return s.atEOF()
		}
		if err := s.fill(); err != nil {
			return SSEEvent{}, s.errAt, err
		}
	}
}

// sniff decides FormatAuto from the first non-blank byte, and
// FormatRawOrSSE from the first non-blank line's start; false means it
// needs more bytes.
func (s *StreamReader) sniff() bool {
	if s.format == FormatRawOrSSE {
		b := bytes.TrimLeft(s.buf[s.start:s.end], " \t\r\n")
		switch sse, sure := sseStart(b); {
		case sure || s.eof:
			s.format = FormatRaw
			if sse {
				s.format = FormatSSE
			}
			return true
		}
		return false
	}
	for _, c := range s.buf[s.start:s.end] {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			s.format = FormatNDJSON
		default:
			s.format = FormatSSE
		}
		return true
	}
	if s.eof {
		s.format = FormatSSE
		return true
	}
	return false
}

// whole returns the entire body as one event, or EOF for an empty body.
func (s *StreamReader) whole() (SSEEvent, time.Time, error) {
	b := bytes.TrimSpace(s.buf[s.start:s.end])
	s.start = s.end
	if len(b) == 0 {
		return SSEEvent{}, s.errAt, io.EOF
	}
	s.consumed = true
	return SSEEvent{Data: b}, s.lastRead, nil
}

func (s *StreamReader) atEOF() (SSEEvent, time.Time, error) {
	if s.start < s.end && !s.discarding {
		// A final line without a terminator. NDJSON allows it; in SSE it
		// is an event cut short.
		line := s.buf[s.start:s.end]
		s.start = s.end
		if s.format == FormatNDJSON {
			if ev, ok, _ := s.handleLine(line); ok {
				return ev, s.dataAt, nil
			}
		} else if len(bytes.TrimSpace(line)) > 0 {
			return SSEEvent{}, s.errAt, io.ErrUnexpectedEOF
		}
	}
	// Complete data lines without the blank line that dispatches them: a
	// server that closed right after "data: [DONE]\n". Deliver them.
	if s.hasData {
		s.consumed = true
		return SSEEvent{Event: s.event, Data: s.data}, s.dataAt, nil
	}
	return SSEEvent{}, s.errAt, io.EOF
}

// line returns the next complete line without its terminator (LF, CRLF or
// CR). Lines longer than the event limit are an error, except SSE lines
// that are not data, which are dropped.
func (s *StreamReader) line() ([]byte, bool, error) {
	if s.skipLF && s.start < s.end {
		if s.buf[s.start] == '\n' {
			s.start++
		}
		s.skipLF = false
	}
	b := s.buf[s.start:s.end]
	lf := bytes.IndexByte(b, '\n')
	limit := lf
	if lf < 0 {
		limit = len(b)
	}
	// A CR before limit ends the line there. Streams rarely have one, so
	// the buffered bytes are searched once, not once per line.
	cr := s.noCR - s.start // b[:cr] holds no CR
	if cr < limit {
		from := max(cr, 0)
		if c := bytes.IndexByte(b[from:], '\r'); c >= 0 {
			cr = from + c
		} else {
			cr = len(b)
		}
		s.noCR = s.start + cr
	}
	i, n := lf, 1
	if cr < limit {
		i = cr
		switch {
		case cr+1 < len(b) && b[cr+1] == '\n':
			n = 2
		case cr+1 == len(b):
			s.skipLF = true // the LF of a CRLF may be in the next read
		}
	}
	if i < 0 {
		if s.discarding {
			s.start = s.end
		} else if len(b) > s.lim.MaxEventBytes+8 { // room for "data: "
			if s.format == FormatSSE && !bytes.HasPrefix(b, []byte("data")) {
				s.discarding = true
				s.start = s.end
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("%w: a line exceeds %d bytes", ErrEventTooLarge, s.lim.MaxEventBytes)
		}
		return nil, false, nil
	}
	line := b[:i]
	s.start += i + n
	if s.discarding {
		s.discarding = false
		return s.line()
	}
	return line, true, nil
}

var dataField = []byte("data")

// handleLine applies one line; it reports a complete event.
func (s *StreamReader) handleLine(line []byte) (SSEEvent, bool, error) {
	if s.format == FormatNDJSON {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return SSEEvent{}, false, nil
		}
		s.data, s.aliased = line, true // handed out before any fill
		s.dataAt = s.lastRead
		s.consumed = true
		return SSEEvent{Data: s.data}, true, nil
	}
	if len(line) == 0 { // blank line: dispatch
		if !s.hasData {
			s.event = ""
			return SSEEvent{}, false, nil
		}
		s.consumed = true
		return SSEEvent{Event: s.event, Data: s.data}, true, nil
	}
	if line[0] == ':' {
		s.comments++
		return SSEEvent{}, false, nil
	}
	name, value := line, []byte(nil)
	if len(line) >= 5 && string(line[:5]) == "data:" { // nearly every line
		name, value = line[:4], line[5:]
	} else if c := bytes.IndexByte(line, ':'); c >= 0 {
		name, value = line[:c], line[c+1:]
	}
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch {
	case bytes.Equal(name, dataField):
		if len(s.data)+1+len(value) > s.lim.MaxEventBytes {
			return SSEEvent{}, false, fmt.Errorf("%w: an event exceeds %d bytes", ErrEventTooLarge, s.lim.MaxEventBytes)
		}
		if !s.hasData {
			// The read buffer's bytes, not a copy: fill copies them
			// before it moves them.
			s.data, s.aliased = value, true
		} else {
			s.own()
			s.data = append(append(s.data, '\n'), value...)
			s.dataBuf = s.data[:0]
		}
		s.hasData = true
		s.dataAt = s.lastRead
	case string(name) == "event":
		s.event = string(value) // rare: OpenAI-style servers send no event lines
	}
	// id:, retry: and unknown fields are ignored, as the SSE spec says.
	return SSEEvent{}, false, nil
}

// own copies an event's data out of the read buffer.
func (s *StreamReader) own() {
	if s.aliased {
		s.data = append(s.dataBuf[:0], s.data...)
		s.dataBuf = s.data[:0]
		s.aliased = false
	}
}

// fill reads once into the buffer, growing it only when a single line does
// not fit.
func (s *StreamReader) fill() error {
	if s.readErr != nil {
		return s.readErr
	}
	s.own()
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:s.end])
		s.noCR = max(s.noCR-s.start, 0)
		s.start, s.end = 0, n
	}
	if s.filled && len(s.buf) < burstBufSize {
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	if s.end == len(s.buf) {
		max := s.lim.MaxEventBytes + 64
		if len(s.buf) >= max {
			return fmt.Errorf("%w: a line exceeds %d bytes", ErrEventTooLarge, s.lim.MaxEventBytes)
		}
		nb := make([]byte, min(2*len(s.buf), max))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for range 100 {
		n, err := s.r.Read(s.buf[s.end:])
		t := s.now() // the arrival time: before any parsing
		s.filled = n == len(s.buf)-s.end
		if n > 0 {
			s.lastRead = t
			s.end += n
			s.total += int64(n)
			if s.total > s.lim.MaxResponseBytes {
				s.readErr = fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, s.lim.MaxResponseBytes)
				s.errAt = t
				return s.readErr
			}
		}
		if err != nil {
			s.errAt = t
			if err == io.EOF {
				s.eof = true
				return nil
			}
			s.readErr = err
			return err
		}
		if n > 0 {
			return nil
		}
	}
	s.readErr = io.ErrNoProgress
	return s.readErr
}

// sseStart reports whether b starts with a server-sent events line, and
// whether that is sure: false and not sure when b is a strict prefix of one
// (more bytes may tell).
func sseStart(b []byte) (sse, sure bool) {
	if len(b) == 0 {
		return false, false
	}
	for _, f := range sseFields {
		if bytes.HasPrefix(b, []byte(f)) {
			return true, true
		}
		if len(b) < len(f) && bytes.HasPrefix([]byte(f), b) {
			return false, false
		}
	}
	return false, true
}

// sseFields are the starts of a server-sent events line.
var sseFields = [...]string{"data:", "event:", "id:", "retry:", ":"}

// looksSSE reports whether a line is a server-sent events line (a data:,
// event:, id: or retry: field, or a comment) rather than a JSON value: how
// a stream declared as NDJSON, or sniffed, shows it is SSE after all.
func looksSSE(line []byte) bool {
	for _, f := range sseFields {
		if bytes.HasPrefix(line, []byte(f)) {
			return true
		}
	}
	return false
}
