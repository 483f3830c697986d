package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawGet sends GET /-/healthy on a new connection and reports whether it
// was answered 200.
func rawGet(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// holdServed opens n connections that the server has accepted and counts:
// each has had a request answered and is kept open, idle. A connection the
// server refused (closed as it was accepted, because some earlier one, such
// as the readiness poll's, was still counted) is dialled again: the answer,
// not the dial, is the server's word that it holds the connection.
func holdServed(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var held []net.Conn
	for attempts := 0; len(held) < n; attempts++ {
		if attempts == 100*n {
			t.Fatalf("only %d of %d connections served in %d attempts", len(held), n, attempts)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			c.Close()
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("GET /-/healthy on a held connection = %d, close %v", resp.StatusCode, resp.Close)
		}
		held = append(held, c)
	}
	return held
}

// --web.max-connections caps the binary's open connections: with the cap
// held by idle connections a new one is not served, and once they close
// one is. The held connections are known to be counted (holdServed), not
// merely dialled: a dial completes in the kernel's backlog, and the
// daemon may still count a connection the readiness poll has just closed.
func TestServeMaxConnections(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results")
	p := startDaemonKilled(t, diskFixture(t, results), "--web.max-connections=4")
	defer p.stop(t)
	held := holdServed(t, p.addr, 4)
	if rawGet(p.addr) {
		t.Errorf("a connection over --web.max-connections=4 was served")
	}
	for _, c := range held {
		c.Close()
	}
	// The daemon sees the closes asynchronously: it serves again once it
	// has seen one.
	deadline := time.Now().Add(10 * time.Second)
	for !rawGet(p.addr) {
		if time.Now().After(deadline) {
			t.Fatal("no connection served after the held ones closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A browser on another site cannot start a bench window or reload the
// config of the binary.
func TestServeRefusesCrossSite(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results")
	p := startDaemonKilled(t, diskFixture(t, results))
	defer p.stop(t)
	for _, tc := range []struct {
		path, ctype, origin string
		want                int
	}{
		{"/api/v1/benches", "text/plain", "http://evil.example", http.StatusForbidden},
		{"/api/v1/benches", "text/plain", "", http.StatusUnsupportedMediaType},
		{"/-/reload", "text/plain", "http://evil.example", http.StatusForbidden},
		{"/-/reload", "", "http://evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("POST", p.url(tc.path), strings.NewReader(`{"target":"sim","num_prompts":1}`))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := shortClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("POST %s (%q from %q) = %d, want %d", tc.path, tc.ctype, tc.origin, resp.StatusCode, tc.want)
		}
	}
	_, body := do(t, "GET", p.url("/api/v1/benches"), "")
	if strings.Contains(body, `"id"`) {
		t.Errorf("a refused request started a window: %s", body)
	}
	// Every reload logs one of these (exporter.Daemon.Reload).
	if log := p.stderr.String(); strings.Contains(log, "reload skipped") || strings.Contains(log, "Config reloaded") || strings.Contains(log, "Config reload failed") {
		t.Errorf("a refused request reloaded the config:\n%s", p.stderr)
	}
}
