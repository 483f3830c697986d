package exporter

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const serverConfig = `
targets:
  - name: a
    url: http://127.0.0.1:1
    backend: vllm
    model: m
    timeout: 7s
    modules: [short]
modules:
  short:
    dataset: fixed
    prompt: hello
`

// serveLimited serves a daemon (not running its probes) under l on
// loopback and returns its address.
func serveLimited(t *testing.T, l ServerLimits, extra func(d *Daemon)) (*Daemon, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(path, []byte(serverConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{ConfigFile: path, BuildProbe: testBuilder(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(d)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := d.NewServer(l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return d, ln.Addr().String()
}

// dial opens a raw connection with a generous safety deadline: the
// assertions wait on the server's answer, and the deadline only keeps a
// broken server from hanging the test.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c (EOF or reset), as
// opposed to the safety deadline passing.
func closedByServer(c net.Conn) (bool, error) {
	_, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, err
	}
	return true, err
}

// A POST whose body stalls is cut off at ReadTimeout: the handler's read
// fails and the connection is closed.
func TestSlowBodyIsCutOff(t *testing.T) {
	readErr := make(chan error, 1)
	_, addr := serveLimited(t, ServerLimits{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 100 * time.Millisecond, IdleTimeout: time.Minute}, func(d *Daemon) {
		d.Handle("POST /slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			readErr <- err
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
			}
		}), "", "")
	})
	c := dial(t, addr)
	if _, err := io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-readErr:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("reading the stalled body: err = %v, want a timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stalled body was still being read after 20 s: no body deadline")
	}
	if closed, err := closedByServer(c); !closed {
		t.Errorf("connection of the stalled body still open: %v", err)
	}
}

// Connections that send nothing, and keep-alive connections left idle,
// are closed by the server.
func TestIdleConnectionsClosed(t *testing.T) {
	_, addr := serveLimited(t, ServerLimits{ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond}, nil)
	silent := dial(t, addr)
	if closed, err := closedByServer(silent); !closed {
		t.Errorf("a connection that sends nothing is still open: %v", err)
	}
	c := dial(t, addr)
	if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("GET /-/healthy = %d, close %v: want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	if _, err := io.ReadAll(br); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("an idle keep-alive connection is still open: %v", err)
		}
	}
}

// At MaxConnections open connections, a further one is closed at once;
// when one closes, a new one is served.
func TestConnectionCap(t *testing.T) {
	_, addr := serveLimited(t, ServerLimits{ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute, MaxConnections: 2}, nil)
	held := []net.Conn{dial(t, addr), dial(t, addr)}
	get := func() (int, error) {
		c := dial(t, addr)
		if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(); err == nil {
		t.Errorf("third connection over a cap of 2 was served (HTTP %d)", code)
	}
	held[0].Close()
	// The server sees the close asynchronously: retry until it has.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, err := get()
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after one of the 2 closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWriteBudget(t *testing.T) {
	d, _ := serveLimited(t, DefaultServerLimits, nil)
	l := ServerLimits{WriteTimeout: time.Minute, DownloadTimeout: 5 * time.Minute}
	for _, tc := range []struct {
		method, target string
		want           time.Duration
	}{
		{"GET", "/metrics", time.Minute},
		{"POST", "/api/v1/benches", time.Minute},
		{"GET", "/probe?target=a", time.Minute + 7*time.Second},
		{"GET", "/debug/pprof/profile?seconds=90", time.Minute + 90*time.Second},
		{"GET", "/debug/pprof/profile", time.Minute + 30*time.Second},
		{"GET", "/api/v1/benches/0123456789abcdef01234567/report", 5 * time.Minute},
	} {
		u, _ := url.Parse(tc.target)
		r := &http.Request{Method: tc.method, URL: u}
		if got := d.writeBudget(r, l); got != tc.want {
			t.Errorf("writeBudget(%s %s) = %s, want %s", tc.method, tc.target, got, tc.want)
		}
	}
}

// The cap is exact for a burst: connections dialled at once, all before any
// sends a request, are counted as they are accepted, so exactly
// MaxConnections of them are served, whatever the order the goroutines run
// in.
func TestConnectionCapBurst(t *testing.T) {
	const capN, burst = 4, 12
	_, addr := serveLimited(t, ServerLimits{ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute, MaxConnections: capN}, nil)
	conns := make([]net.Conn, burst)
	dialed := make(chan error, burst)
	for i := range conns {
		go func() {
			c, err := net.Dial("tcp", addr)
			conns[i] = c
			dialed <- err
		}()
	}
	for range burst {
		if err := <-dialed; err != nil {
			t.Fatal(err)
		}
	}
	served := 0
	for _, c := range conns {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			continue
		}
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
			served++
		}
	}
	if served != capN {
		t.Errorf("%d of a burst of %d connections served under a cap of %d, want exactly %d", served, burst, capN, capN)
	}
}
