package prober

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

// keepAliveCloser is a loopback server that announces keep-alive on every
// response, as llama-server does (Keep-Alive: timeout=5), and closes the
// connection without a byte of answer when a second request arrives on it.
// It makes deterministic the race a real server that closes after each
// stream loses only some of the time.
func keepAliveCloser(t *testing.T) (*httptest.Server, func() int) {
	t.Helper()
	type connKey struct{}
	var (
		mu     sync.Mutex
		served = map[net.Conn]int{}
		conns  int
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(connKey{}).(net.Conn)
		mu.Lock()
		served[c]++
		n := served[c]
		mu.Unlock()
		if n > 1 {
			hc, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			hc.Close()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Connection", "keep-alive")
		w.Header().Set("Keep-Alive", "timeout=5, max=100")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		mu.Lock()
		conns++
		mu.Unlock()
		return context.WithValue(ctx, connKey{}, c)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return conns }
}

// TestRetryClosedKeepAlive: a server that closes each kept-alive
// connection when the next request arrives on it, without answering. Each
// request after the first is sent once more on a new connection, succeeds
// and says so (ConnRetries, a trace of the new connection); none fails
// connection_closed.
func TestRetryClosedKeepAlive(t *testing.T) {
	srv, conns := keepAliveCloser(t)
	p := &Prober{Client: &http.Client{Transport: &http.Transport{}}, Backend: openAIChat{}, Name: "openai-chat",
		Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true}}
	const n = 5
	for i := range n {
		res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 4}, time.Time{})
		if res.Outcome != OutcomeSuccess {
			t.Fatalf("request %d: outcome %s (%s), want success", i, res.Outcome, res.Err)
		}
		wantRetries := 1
		if i == 0 {
			wantRetries = 0
		}
		if res.ConnRetries != wantRetries {
			t.Errorf("request %d: ConnRetries = %d, want %d", i, res.ConnRetries, wantRetries)
		}
		if res.Trace.ConnReused {
			t.Errorf("request %d: trace says a reused connection; the answer came on a new one", i)
		}
		if res.OutputTokens != 1 {
			t.Errorf("request %d: %d output tokens, want 1", i, res.OutputTokens)
		}
	}
	if got := conns(); got != n {
		t.Errorf("%d connections for %d requests, want %d (one per request)", got, n, n)
	}
}

// TestNoRetryOnNewConnection: a new connection that closes before the
// answer is the server's failure, reported as connection_closed and not
// sent again (a server that drops every request would otherwise get each
// one twice).
func TestNoRetryOnNewConnection(t *testing.T) {
	var requests int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
	}))
	defer srv.Close()
	p := &Prober{Client: &http.Client{Transport: &http.Transport{}}, Backend: openAIChat{}, Name: "openai-chat",
		Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true}}
	res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 4}, time.Time{})
	if res.Outcome != OutcomeConnectionClosed || res.ConnRetries != 0 {
		t.Errorf("outcome %s, ConnRetries %d; want connection_closed, 0", res.Outcome, res.ConnRetries)
	}
	mu.Lock()
	defer mu.Unlock()
	if requests != 1 {
		t.Errorf("server saw %d requests, want 1", requests)
	}
}
