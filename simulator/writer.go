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
	lastFlush time.Time // when the last flush returned; set only with rec
	err       error
}

func newStreamWriter(w http.ResponseWriter, coalesce bool, limit int, rec *record) *streamWriter {
	size := 512
	if coalesce {
		size = limit + 4096
	}
	return &streamWriter{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, size), coalesce: coalesce, limit: limit, rec: rec}
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
		s.rec.flushed(s.lastFlush)
	}
	s.buf = s.buf[:0]
	s.start = 0
	return nil
}
