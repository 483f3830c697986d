package simulator

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeLog records the size and bytes of every write the server makes to
// its connections.
type writeLog struct {
	mu     sync.Mutex
	writes [][]byte
}

type loggedListener struct {
	net.Listener
	log *writeLog
}

func (l loggedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return loggedConn{c, l.log}, nil
}

type loggedConn struct {
	net.Conn
	log *writeLog
}

func (c loggedConn) Write(p []byte) (int, error) {
	c.log.mu.Lock()
	c.log.writes = append(c.log.writes, bytes.Clone(p))
	c.log.mu.Unlock()
	return c.Conn.Write(p)
}

// TestCoalescedWritesCarryData checks that a coalescing stream never sends
// a chunk's closing CRLF as a write of its own: each full buffer reaches the
// connection without a Flush, the CRLF leaves with the next chunk, and the
// stream still arrives whole. On a stamped connection every buffer is
// flushed (the write stamps are taken there), so the bare CRLF writes come
// back: the test would see if the skip stopped working or the count lied.
func TestCoalescedWritesCarryData(t *testing.T) {
	for _, stamped := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stamped"}[stamped], func(t *testing.T) {
			cfg := fastConfig()
			cfg.Coalesce = true
			cfg.CoalesceBytes = 32 << 10
			s := newServer(t, cfg)
			wl := &writeLog{}
			ts := httptest.NewUnstartedServer(s.Handler())
			ts.Listener = loggedListener{ts.Listener, wl}
			if stamped {
				ts.Listener = StampListener(ts.Listener)
				ts.Config.ConnContext = ConnContext
			}
			ts.Start()
			defer ts.Close()
			body := `{"model":"servingprobe-sim","prompt":"hello","max_tokens":600,"ignore_eos":true,"stream":true}`
			resp := post(t, ts.Client(), ts.URL+"/v1/completions", body)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), "data: {"); n < 600 {
				t.Fatalf("%d events arrived, want at least 600", n)
			}
			if !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
				t.Fatalf("stream does not end with [DONE]: %q", b[max(0, len(b)-40):])
			}
			wl.mu.Lock()
			defer wl.mu.Unlock()
			// A bare CRLF right before the terminating chunk is the
			// last buffer's when it was too short to write through.
			bare := 0
			for i, w := range wl.writes {
				if string(w) == "\r\n" && (i+1 >= len(wl.writes) || string(wl.writes[i+1]) != "0\r\n\r\n") {
					bare++
				}
			}
			if stamped && bare < 3 {
				t.Errorf("on a stamped connection %d writes were a bare CRLF before the last buffer, want one for each of the 3 full buffers (%d writes): the flushes this test contrasts with are gone", bare, len(wl.writes))
			}
			if !stamped && bare != 0 {
				t.Errorf("%d of %d writes were a bare CRLF", bare, len(wl.writes))
			}
		})
	}
}

// TestWriteThroughWithoutFlush holds net/http to what writesThrough relies
// on: a response write of writeThroughBytes, with no Flush after it,
// reaches the connection whole while the handler still runs, both as the
// first write (after the header) and after a chunk whose CRLF is still
// buffered. Should a Go release buffer more, the bytes would wait for the
// next write and this test would time out on them.
func TestWriteThroughWithoutFlush(t *testing.T) {
	step := make(chan struct{})
	data := bytes.Repeat([]byte("x"), writeThroughBytes)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 2 {
			if _, err := w.Write(data); err != nil {
				return
			}
			<-step // no Flush: the client must have the bytes already
		}
	}))
	defer ts.Close()
	defer close(step) // a failed test lets the handler finish
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 64<<10)
	for i := 1; i <= 2; i++ {
		// A liveness bound, not a timing check: the bytes either come
		// while the handler waits or never.
		if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		for bytes.Count(got, []byte("x")) < i*len(data) {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("write %d: %d of %d bytes arrived before the handler went on: %v", i, bytes.Count(got, []byte("x"))-(i-1)*len(data), len(data), err)
			}
			got = append(got, buf[:n]...)
		}
		step <- struct{}{}
	}
}
