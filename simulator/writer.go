package simulator

import (
	"net/http"
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
	start     int // where the event being built begins
	coalesce  bool
	limit     int
	rec       *record
	conn      *stampConn // nil: no write stamps
	lastFlush time.Time  // when the last flush returned; set only with rec
	err       error
}

func newStreamWriter(w http.ResponseWriter, coalesce bool, limit int, rec *record, conn *stampConn) *streamWriter {
	size := 512
	if coalesce {
		size = limit + 4096
	}
	return &streamWriter{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, size), coalesce: coalesce, limit: limit, rec: rec, conn: conn}
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
	if err := s.rc.Flush(); err != nil {
		s.err = err
		return err
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
