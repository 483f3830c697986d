package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// scriptConn returns one scripted result per Read; a Write takes a
// millisecond.
type scriptConn struct {
	net.Conn // nil: only Read and Write are called
	reads    []int
}

func (c *scriptConn) Read(b []byte) (int, error) {
	if len(c.reads) == 0 {
		return 0, io.EOF
	}
	n := c.reads[0]
	c.reads = c.reads[1:]
	return n, nil
}

func (c *scriptConn) Write(b []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return len(b), nil
}

// fakeKernel stands in for recvmsg: every read returns n bytes received by
// the kernel ago before the call.
type fakeKernel struct {
	n   int
	ago time.Duration
}

func (f fakeKernel) Read(_ net.Conn, _ []byte) (int, int64, error) {
	return f.n, time.Now().Add(-f.ago).UnixNano(), nil
}

func TestStampConnKeepsLastDataRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &stampConn{Conn: &scriptConn{reads: []int{10, 0, 3}}}
		if read, kernel := c.lastRead(); !read.IsZero() || !kernel.IsZero() {
			t.Fatal("stamped before any read")
		}
		t0 := time.Now()
		buf := make([]byte, 16)
		for i, want := range []time.Time{t0, t0, t0.Add(2 * time.Millisecond), t0.Add(2 * time.Millisecond)} {
			_, _ = c.Read(buf) // data, empty, data, EOF
			if got, kernel := c.lastRead(); !got.Equal(want) || !kernel.IsZero() {
				t.Errorf("after read %d: last = %v after start, kernel %v; want %v and none", i, got.Sub(t0), kernel, want.Sub(t0))
			}
			time.Sleep(time.Millisecond)
		}
	})
}

func TestStampConnWriteStampsItsStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &stampConn{Conn: &scriptConn{}}
		for i := range 2 {
			start := time.Now()
			_, _ = c.Write([]byte("x")) // takes 1 ms
			if got, n := c.lastWrite(); !got.Equal(start) || n != uint64(i+1) {
				t.Errorf("write %d: stamp %v after its start, count %d; want 0 and %d", i, got.Sub(start), n, i+1)
			}
		}
	})
}

// TestReceivedStartsTTFT: the server's TTFT counts from the kernel's
// receipt of the request when known, else from its read, not from the
// handler start; the JSON carries all three.
func TestReceivedStartsTTFT(t *testing.T) {
	for _, tc := range []struct {
		name        string
		kernelAgo   time.Duration // 0: no kernel stamps
		wantTTFT    time.Duration
		wantReceive bool
	}{
		{"read only", 0, 104 * time.Millisecond, false},
		{"kernel stamp", 2 * time.Millisecond, 106 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newServer(t, timedConfig())
				sc := &stampConn{Conn: &scriptConn{reads: []int{200}}}
				if tc.kernelAgo > 0 {
					sc.raw = fakeKernel{200, tc.kernelAgo}
				}
				_, _ = sc.Read(make([]byte, 256))
				read := time.Now()
				time.Sleep(3 * time.Millisecond)
				ctx := ConnContext(context.Background(), sc)
				serveRecorded(s, ctx, "/v1/completions", "r", `{"prompt":[1],"max_tokens":2,"ignore_eos":true,"stream":true}`)
				tr, ok := s.Truth("r")
				if !ok {
					t.Fatal("no truth")
				}
				if !tr.Read.Equal(read) || tr.Arrived.Sub(tr.Read) != 3*time.Millisecond {
					t.Errorf("read %v, arrived %v after it; want the read's time and 3ms", tr.Read, tr.Arrived.Sub(tr.Read))
				}
				if got := tr.Read.Sub(tr.Received); tr.Received.IsZero() == tc.wantReceive || (tc.wantReceive && got != tc.kernelAgo) {
					t.Errorf("received %v (%v before the read), want kernel stamp %v", tr.Received, got, tc.wantReceive)
				}
				// timedConfig: 100 ms + 1 ms per prompt token after admission.
				if ttft, _ := tr.TTFT(); ttft != tc.wantTTFT {
					t.Errorf("TTFT = %v, want %v", ttft, tc.wantTTFT)
				}
				var j struct {
					Received int64 `json:"received_unix_nano"`
					Read     int64 `json:"read_unix_nano"`
					Arrived  int64 `json:"arrived_unix_nano"`
				}
				if err := json.Unmarshal(serveGet(s, "/debug/truth/r").Body.Bytes(), &j); err != nil {
					t.Fatal(err)
				}
				wantRx := int64(0)
				if tc.wantReceive {
					wantRx = read.UnixNano() - int64(tc.kernelAgo)
				}
				if j.Arrived-j.Read != int64(3*time.Millisecond) || j.Read != read.UnixNano() || j.Received != wantRx {
					t.Errorf("received %d, read %d, arrived %d: want %d, the read's time, 3ms after it", j.Received, j.Read, j.Arrived, wantRx)
				}
			})
		})
	}
}

func TestUnstampedConnHasNoReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, timedConfig())
		ctx := ConnContext(context.Background(), &scriptConn{})
		serveRecorded(s, ctx, "/v1/completions", "u", `{"prompt":[1],"max_tokens":1,"stream":true}`)
		tr, _ := s.Truth("u")
		if !tr.Received.IsZero() || !tr.Read.IsZero() || !tr.Start().Equal(tr.Arrived) {
			t.Errorf("Received = %v, Read = %v, Start = %v; want zero, zero and Arrived", tr.Received, tr.Read, tr.Start())
		}
		if w := serveGet(s, "/debug/truth/u"); strings.Contains(w.Body.String(), "read_unix_nano") || strings.Contains(w.Body.String(), "write_unix_nano") {
			t.Errorf("truth JSON has stamps without a stamped connection: %s", w.Body)
		}
	})
}

func startStamped(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Listener = StampListener(ts.Listener)
	ts.Config.ConnContext = ConnContext
	ts.Start()
	t.Cleanup(func() {
		ts.Client().CloseIdleConnections()
		ts.Close()
	})
	return ts
}

// TestStampListenerPerRequest serves over a real socket. Each request is
// stamped in causal order (kernel receipt, read, handler; every token
// chunk's write begins before its flush returns), and the second request on
// a kept-alive connection has its own stamps: it cannot be read before the
// first finished, because the client sends it only after reading the first
// response, whose end net/http writes after the handler returns.
func TestStampListenerPerRequest(t *testing.T) {
	s := newServer(t, fastConfig())
	ts := startStamped(t, s)
	if runtime.GOOS == "linux" {
		// Linux turns receive timestamps on for the host asynchronously
		// after the first socket asks for them: wait until they flow.
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; ; i++ {
			id := "warm" + strconv.Itoa(i)
			readAll(t, post(t, ts.Client(), ts.URL+"/v1/completions", `{"prompt":"x","max_tokens":1}`, RequestIDHeader, id))
			if tr, err := s.WaitTruth(context.Background(), id); err == nil && !tr.Received.IsZero() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no kernel receive timestamp after 10s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	var reused []bool
	for _, id := range []string{"a", "b"} {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"x","max_tokens":3,"ignore_eos":true,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(RequestIDHeader, id)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
		}))
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if len(reused) != 2 || !reused[1] {
		t.Fatalf("connection reuse = %v, want the second request on the first's connection", reused)
	}
	var tr [2]Truth
	for i, id := range []string{"a", "b"} {
		var err error
		if tr[i], err = s.WaitTruth(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if tr[i].Read.IsZero() || tr[i].Read.After(tr[i].Arrived) {
			t.Errorf("%s: read %v, arrived %v; want a stamp at or before the handler", id, tr[i].Read, tr[i].Arrived)
		}
		if runtime.GOOS == "linux" && (tr[i].Received.IsZero() || tr[i].Received.After(tr[i].Read)) {
			t.Errorf("%s: kernel receipt %v, read %v; want a stamp at or before the read", id, tr[i].Received, tr[i].Read)
		}
		tokens := 0
		for _, c := range tr[i].Chunks {
			if c.Tokens == 0 {
				continue
			}
			tokens += c.Tokens
			if c.Wrote.IsZero() || c.Wrote.After(c.At) || c.Wrote.Before(tr[i].Arrived) {
				t.Errorf("%s: chunk written at %v, flushed %v after arrival; want a write start between", id, c.Wrote.Sub(tr[i].Arrived), c.At.Sub(tr[i].Arrived))
			}
		}
		if tokens != 3 {
			t.Errorf("%s: %d tokens in the truth, want 3", id, tokens)
		}
	}
	if !tr[1].Read.After(tr[0].Finished) {
		t.Errorf("second request read %v after the first finished; want > 0 (a stale stamp?)", tr[1].Read.Sub(tr[0].Finished))
	}
}

// TestStampedResetMidStream: the reset fault still sends an RST through a
// stamped connection (the hijacked conn is unwrapped for SetLinger).
func TestStampedResetMidStream(t *testing.T) {
	s := newServer(t, fastConfig())
	ts := startStamped(t, s)
	resp := post(t, ts.Client(), ts.URL+"/v1/chat/completions", chatStreamBody, FaultHeader, string(FaultResetMidStream))
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read error = %v, want connection reset", err)
	}
}
