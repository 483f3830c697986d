package llmtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Chunk is one write of the response body, made Delay after the previous
// chunk (or after the headers, for the first).
type Chunk struct {
	Delay time.Duration
	Data  string
}

// Script is one scripted response.
type Script struct {
	Status      int // 200 when 0
	Header      http.Header
	HeaderDelay time.Duration // before the status line
	Chunks      []Chunk
	// Reset, when set, ends the body with this error (for example
	// syscall.ECONNRESET) instead of a clean EOF.
	Reset error
	// Hang keeps the body open after the last chunk until the request's
	// context ends.
	Hang bool
}

// SSE is a convenience: each event is sent as its own chunk, the first
// after first, the others every gap.
func SSE(first, gap time.Duration, events ...string) []Chunk {
	out := make([]Chunk, len(events))
	for i, e := range events {
		d := gap
		if i == 0 {
			d = first
		}
		out[i] = Chunk{Delay: d, Data: e}
	}
	return out
}

// SplitEvents splits an SSE transcript after each blank line, keeping the
// line terminators, so each event can be its own chunk. It understands LF,
// CRLF and CR.
func SplitEvents(transcript string) []string {
	var out []string
	s := transcript
	for len(s) > 0 {
		cut := -1
		for _, sep := range []string{"\r\n\r\n", "\n\n", "\r\r"} {
			if i := strings.Index(s, sep); i >= 0 && (cut < 0 || i+len(sep) < cut) {
				cut = i + len(sep)
			}
		}
		if cut < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

func (s Script) header() http.Header {
	h := http.Header{}
	for k, v := range s.Header {
		h[k] = append([]string(nil), v...)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/event-stream")
	}
	return h
}

func (s Script) status() int {
	if s.Status == 0 {
		return http.StatusOK
	}
	return s.Status
}

// Transport serves scripts in order from memory, one per request (the last
// one repeats). Delays use time.Sleep, so inside a synctest bubble they are
// exact virtual durations. It records the requests' bodies.
type Transport struct {
	Scripts []Script

	mu       sync.Mutex
	n        int
	requests [][]byte
}

// Requests returns the bodies received so far.
func (t *Transport) Requests() [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([][]byte(nil), t.requests...)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	s := t.Scripts[min(t.n, len(t.Scripts)-1)]
	t.n++
	t.requests = append(t.requests, body)
	t.mu.Unlock()

	ctx := req.Context()
	if err := sleep(ctx, s.HeaderDelay); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range s.Chunks {
			if err := sleep(ctx, c.Delay); err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := pw.Write([]byte(c.Data)); err != nil {
				return // the reader closed the body
			}
		}
		if s.Hang {
			<-ctx.Done()
			pw.CloseWithError(ctx.Err())
			return
		}
		if s.Reset != nil {
			pw.CloseWithError(s.Reset)
			return
		}
		pw.Close()
	}()
	return &http.Response{
		Status:        http.StatusText(s.status()),
		StatusCode:    s.status(),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        s.header(),
		Body:          &pipeBody{PipeReader: pr, done: done},
		ContentLength: -1,
		Request:       req,
	}, nil
}

type pipeBody struct {
	*io.PipeReader
	done chan struct{}
}

// Close unblocks the writer and waits for it, so no goroutine outlives the
// body (synctest and goleak both check).
func (b *pipeBody) Close() error {
	b.PipeReader.CloseWithError(errors.New("body closed"))
	<-b.done
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Server serves scripts over a real loopback socket. Each chunk is written
// and flushed on its own, so it leaves as its own TCP segment.
type Server struct {
	*Transport
	URL string
	srv interface{ Close() }
}

// Handler returns an http.Handler that plays the transport's scripts.
func (t *Transport) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		t.mu.Lock()
		s := t.Scripts[min(t.n, len(t.Scripts)-1)]
		t.n++
		t.requests = append(t.requests, bytes.Clone(body))
		t.mu.Unlock()
		ctx := r.Context()
		if sleep(ctx, s.HeaderDelay) != nil {
			return
		}
		for k, v := range s.header() {
			w.Header()[k] = v
		}
		w.WriteHeader(s.status())
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		for _, c := range s.Chunks {
			if sleep(ctx, c.Delay) != nil {
				return
			}
			if _, err := io.WriteString(w, c.Data); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
		if s.Hang {
			<-ctx.Done()
			return
		}
		if s.Reset != nil {
			// Abort the connection without the chunked terminator.
			panic(http.ErrAbortHandler)
		}
	})
}
