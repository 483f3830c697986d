package simulator

import (
	"net/http"
	"sync"
	"time"
)

// streamWriter frames events onto a ResponseWriter. Emitters append an
// event's bytes to buf and call commit. In per-token mode every event is
// written and flushed on its own; in coalesced mode events accumulate until
// limit bytes or close.
type streamWriter struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	buf       []byte
	pooled    *[]byte // what release hands buf back in; nil without coalescing
	start     int     // where the event being built begins
	coalesce  bool
	limit     int
	rec       *record
	conn      *stampConn // nil: no write stamps
	lastFlush time.Time  // when the last flush returned; set only with rec
	err       error
}

func newStreamWriter(w http.ResponseWriter, coalesce bool, limit int, rec *record, conn *stampConn) *streamWriter {
	size := 512
	var buf []byte
	var pooled *[]byte
	if coalesce {
		size = limit + 4096
		if p, ok := coalesceBufs.Get().(*[]byte); ok && cap(*p) >= size {
			buf, pooled = (*p)[:0], p
		} else {
			pooled = new([]byte)
		}
	}
	if buf == nil {
		buf = make([]byte, 0, size)
	}
	return &streamWriter{w: w, rc: http.NewResponseController(w), buf: buf, pooled: pooled, coalesce: coalesce, limit: limit, rec: rec, conn: conn}
}

// coalesceBufs keeps coalescing buffers from one request to the next. Each
// is CoalesceBytes plus 4 KiB, a large allocation the runtime zeroes:
// made anew for every request, it and the collections it caused took a
// tenth of the simulator's CPU at thousands of requests a second.
var coalesceBufs sync.Pool // of *[]byte

// release hands a coalescing buffer back for another request; s must not
// be used after.
func (s *streamWriter) release() {
	if s.pooled == nil || s.buf == nil {
		return
	}
	*s.pooled, s.buf = s.buf[:0], nil
	coalesceBufs.Put(s.pooled) // the pointer it came in, so Put allocates nothing
}

// commit closes the event appended since the previous commit.
func (s *streamWriter) commit(kind ChunkKind, tokens int) error {
	s.rec.add(kind, tokens, len(s.buf)-s.start)
	if s.coalesce && len(s.buf) < s.limit {
		s.start = len(s.buf)
		return s.err
	}
	return s.flush()
}

// flush writes and flushes whatever is buffered.
func (s *streamWriter) flush() error {
	if s.err != nil {
		return s.err
	}
	var writes uint64
	if s.rec != nil && s.conn != nil {
		_, writes = s.conn.lastWrite()
	}
	if len(s.buf) > 0 {
		if _, err := s.w.Write(s.buf); err != nil {
			s.err = err
			return err
		}
	}
	if !s.writesThrough() {
		if err := s.rc.Flush(); err != nil {
			s.err = err
			return err
		}
	}
	if s.rec != nil {
		s.lastFlush = time.Now()
		var wrote time.Time
		if s.conn != nil {
			// net/http writes to the connection inside Flush, from this
			// goroutine; no new write means nothing went out.
			if start, n := s.conn.lastWrite(); n != writes {
				wrote = start
			}
		}
		s.rec.flushed(s.lastFlush, wrote)
	}
	s.buf = s.buf[:0]
	s.start = 0
	return nil
}

// writeThroughBytes is the least write that net/http hands to the
// connection whole without a Flush: a write larger than its response
// buffer (2 KiB) goes straight to the chunk writer, which puts the chunk
// header and the data into the connection's 4 KiB buffer, writes out what
// fills it, and writes the rest directly once the buffer is empty. Only the
// chunk's closing CRLF stays buffered, and it leaves with the next chunk or
// the end of the response: the rest is written directly when it is larger
// than the connection's buffer, so more than twice that buffer is enough.
const writeThroughBytes = 2*(4<<10) + 1<<10

// writesThrough reports that the buffer about to be flushed has reached
// the connection already, so the Flush is skipped: it would send the
// chunk's 2-byte CRLF on its own, one more write for the simulator and one
// more wakeup and read for the client per coalesced buffer (two of the
// seven writes of a 256-token completion). It holds for a coalescing
// buffer at least writeThroughBytes long, and not on a stamped connection,
// whose write stamps are taken inside Flush. The chunks' flush time is
// then when the write returned: their bytes were with the kernel. After
// the last buffer the CRLF leaves with the response's terminating chunk,
// which net/http always wrote on its own once the handler returned.
func (s *streamWriter) writesThrough() bool {
	return s.coalesce && s.conn == nil && len(s.buf) >= writeThroughBytes
}
