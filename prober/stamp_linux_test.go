package prober

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
)

// lateBody makes the stream reader late on purpose: its first Read waits
// until the server has written the whole response, and a little longer,
// then notes when it began.
type lateBody struct {
	io.ReadCloser
	written <-chan struct{}
	once    sync.Once
	start   *time.Time
}

func (b *lateBody) Read(p []byte) (int, error) {
	b.once.Do(func() {
		<-b.written
		time.Sleep(10 * time.Millisecond)
		*b.start = time.Now()
	})
	return b.ReadCloser.Read(p)
}

type lateTransport struct {
	http.RoundTripper
	written <-chan struct{}
	start   *time.Time
}

func (t lateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(r)
	if err == nil {
		resp.Body = &lateBody{ReadCloser: resp.Body, written: t.written, start: t.start}
	}
	return resp, err
}

// stampServer streams a whole vllm response per request and tells, through
// the returned function, when it has.
func stampServer(t *testing.T, h2c, tls bool) (*httptest.Server, func() <-chan struct{}) {
	var (
		mu      sync.Mutex
		written = make(chan struct{})
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(benchStream("vllm", 4))
		w.(http.Flusher).Flush()
		mu.Lock()
		close(written)
		mu.Unlock()
	}))
	if h2c {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	next := func() <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		written = make(chan struct{})
		return written
	}
	return srv, next
}

// stampRun runs requests through a client built with o until one is on a
// reused connection (Linux turns timestamping on asynchronously, so a
// process's first connection may have no kernel stamps), and returns it
// with when its body's first read began.
// kernelStampsDeadline bounds the wait for the kernel's first receive
// stamps. Turning SO_TIMESTAMPNS on enables the kernel's timestamping
// through deferred work (net_enable_timestamp), and segments that arrive
// before it runs carry no stamp; on a busy machine that work can wait well
// beyond a few requests, so the tests retry until the stamps come rather
// than a fixed number of times.
const kernelStampsDeadline = 30 * time.Second

func stampRun(t *testing.T, cfg promconfig.HTTPClientConfig, srv *httptest.Server, next func() <-chan struct{}, o ClientOptions) (Result, time.Time) {
	t.Helper()
	c, err := NewClient(&config.Target{Name: "t", URL: srv.URL, HTTPClientConfig: cfg}, o)
	if err != nil {
		t.Fatal(err)
	}
	var readStart time.Time
	be, _ := NewBackend("vllm")
	var res Result
	// Until a request reuses its connection and, where the kernel clock is
	// expected (not the user clock, not HTTP/2), the kernel stamps it: see
	// kernelStampsDeadline.
	deadline := time.Now().Add(kernelStampsDeadline)
	for i := 0; ; i++ {
		c.Transport = lateTransport{RoundTripper: c.Transport, written: next(), start: &readStart}
		p := &Prober{Backend: be, Client: c, Options: RequestOptions{BaseURL: srv.URL, Stream: true, Model: "m"}}
		res = p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 4}, time.Time{})
		if res.Outcome != OutcomeSuccess {
			t.Fatalf("request %d: %s %s", i, res.Outcome, res.Err)
		}
		c.Transport = c.Transport.(lateTransport).RoundTripper
		if i > 0 && res.Trace.ConnReused && (o.UserClock || o.H2C || res.Clock == ClockKernel) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return res, readStart
}

// TestKernelClockStampsArrival: a stream read late on purpose is stamped
// when its bytes arrived with the kernel clock, and when the late read
// returned with the user clock. On a reused connection the kernel clock's
// start is the request's write (after the connection was got, before the
// first token); the user clock's is the call.
func TestKernelClockStampsArrival(t *testing.T) {
	srv, next := stampServer(t, false, false)
	cfg := promconfig.DefaultHTTPClientConfig

	res, readStart := stampRun(t, cfg, srv, next, ClientOptions{Concurrency: 1})
	if res.Clock != ClockKernel {
		t.Fatalf("clock %q on a reused loopback TCP connection, want kernel", res.Clock)
	}
	if !res.FirstToken.Before(readStart) || !res.End.Before(readStart) {
		t.Errorf("kernel clock: first token %v and end %v after the late read began; want the arrival, before it",
			res.FirstToken.Sub(readStart), res.End.Sub(readStart))
	}
	// (httptrace's WroteRequest is no bound: it fires when the request
	// is in the transport's buffer, before the buffer goes to the socket.)
	if res.Sent.Before(res.Trace.GotConn) || !res.Sent.Before(res.FirstToken) {
		t.Errorf("kernel clock: start %v after the connection was got and %v after the first token; want between",
			res.Sent.Sub(res.Trace.GotConn), res.Sent.Sub(res.FirstToken))
	}

	res, readStart = stampRun(t, cfg, srv, next, ClientOptions{Concurrency: 1, UserClock: true})
	if res.Clock != ClockUser {
		t.Fatalf("clock %q with UserClock, want user", res.Clock)
	}
	if res.FirstToken.Before(readStart) {
		t.Errorf("user clock: first token %v before the late read began", readStart.Sub(res.FirstToken))
	}
	if !res.Sent.Before(res.Trace.GotConn) {
		t.Errorf("user clock: start %v after the connection was got; want the call", res.Sent.Sub(res.Trace.GotConn))
	}
}

// TestStartAtTransmit: on a reused connection the kernel clock's start is
// the kernel's transmit time of the request's first write, after that
// write began by the process's clock. Where the kernel gives no transmit
// stamp (the Writer taken away, as on a kernel that refuses the option)
// the start is when the write began, and the result, whose reads the
// kernel did stamp, says mixed.
func TestStartAtTransmit(t *testing.T) {
	srv, next := stampServer(t, false, false)
	c, err := NewClient(&config.Target{Name: "t", URL: srv.URL, HTTPClientConfig: promconfig.DefaultHTTPClientConfig}, ClientOptions{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	be, _ := NewBackend("vllm")
	p := &Prober{Backend: be, Client: c, Options: RequestOptions{BaseURL: srv.URL, Stream: true, Model: "m"}}
	run := func() Result {
		next()
		res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 4}, time.Time{})
		if res.Outcome != OutcomeSuccess {
			t.Fatalf("%s %s", res.Outcome, res.Err)
		}
		return res
	}
	var res Result
	for deadline := time.Now().Add(kernelStampsDeadline); !(res.Trace.ConnReused && res.Clock == ClockKernel) && time.Now().Before(deadline); {
		res = run()
		time.Sleep(time.Millisecond)
	}
	var sc *stampConn
	stampConns.Range(func(_, v any) bool {
		if c := v.(*stampConn); c.key.remote.String() == srv.Listener.Addr().String() {
			sc = c
		}
		return sc == nil
	})
	if sc == nil || sc.tx == nil || !res.Trace.ConnReused {
		t.Fatalf("stamped connection %v, reused %v: want one with transmit stamps, reused", sc, res.Trace.ConnReused)
	}
	wrote := clockBase.Add(time.Duration(sc.wrote.Load()))
	if res.Clock != ClockKernel || !res.Sent.After(wrote) || !res.Sent.Before(res.FirstToken) {
		t.Errorf("clock %q, start %v after the write began and %v before the first token; want kernel, both > 0",
			res.Clock, res.Sent.Sub(wrote), res.FirstToken.Sub(res.Sent))
	}

	sc.tx = nil // no transmit stamps from now on; the next request reuses the connection
	res = run()
	wrote = clockBase.Add(time.Duration(sc.wrote.Load()))
	if !res.Trace.ConnReused || res.Clock != ClockMixed || !res.Sent.Equal(wrote) {
		t.Errorf("without transmit stamps: reused %v, clock %q, start %v after the write began; want true, mixed, 0",
			res.Trace.ConnReused, res.Clock, res.Sent.Sub(wrote))
	}
}

// TestClockFallbacks: TLS keeps the kernel clock. HTTP/2 multiplexes responses on one connection, so
// its stamps are no response's own: the user clock. Through an HTTP
// proxy the connection is ours to the proxy and the kernel stamps the
// proxy's bytes as they reach the client, as the user clock would.
func TestClockFallbacks(t *testing.T) {
	t.Run("h2c", func(t *testing.T) {
		srv, next := stampServer(t, true, false)
		res, _ := stampRun(t, promconfig.DefaultHTTPClientConfig, srv, next, ClientOptions{Concurrency: 1, H2C: true})
		if res.Clock != ClockUser {
			t.Errorf("clock %q over HTTP/2, want user", res.Clock)
		}
	})
	t.Run("tls", func(t *testing.T) {
		// The TLS record that completes an event is completed by a TCP
		// read, whose stamp the event takes.
		srv, next := stampServer(t, false, true)
		cfg := promconfig.DefaultHTTPClientConfig
		cfg.TLSConfig.InsecureSkipVerify = true
		res, readStart := stampRun(t, cfg, srv, next, ClientOptions{Concurrency: 1})
		if res.Clock != ClockKernel || !res.FirstToken.Before(readStart) {
			t.Errorf("over TLS: clock %q, first token %v after the late read began; want kernel, before",
				res.Clock, res.FirstToken.Sub(readStart))
		}
	})
	t.Run("proxy", func(t *testing.T) {
		srv, next := stampServer(t, false, false)
		proxy := httptest.NewServer(&httputil.ReverseProxy{
			Rewrite:       func(r *httputil.ProxyRequest) { r.Out.URL = r.In.URL },
			FlushInterval: -1,
		})
		defer proxy.Close()
		u, _ := url.Parse(proxy.URL)
		cfg := promconfig.DefaultHTTPClientConfig
		cfg.ProxyURL = promconfig.URL{URL: u}
		res, readStart := stampRun(t, cfg, srv, next, ClientOptions{Concurrency: 1})
		if res.Clock != ClockKernel || !res.FirstToken.Before(readStart) {
			t.Errorf("through a proxy: clock %q, first token %v after the late read began; want kernel, before",
				res.Clock, res.FirstToken.Sub(readStart))
		}
	})
}

// TestStampedReadZeroAllocs: a kernel-stamped read and its clock reading
// allocate nothing, so the per-event cost stays what it was.
func TestStampedReadZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race; make test runs this without -race")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := dialStamped(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sc, ok := c.(*stampConn)
	if !ok || lookupStampConn(c) != sc {
		t.Fatalf("dialled %T, registered %v: want a registered *stampConn", c, lookupStampConn(c) != nil)
	}
	k := reqClock{c: sc}
	msg, buf := []byte("data: {}\n\n"), make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		srv.Write(msg)
		if _, err := sc.Read(buf); err != nil {
			t.Fatal(err)
		}
		k.read()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per stamped read", allocs)
	}
	c.Close()
	if lookupStampConn(c) != nil {
		t.Error("a closed connection is still registered")
	}
}
