package prober

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

func TestNewClientTunesTransport(t *testing.T) {
	tgt := &config.Target{Name: "t", HTTPClientConfig: promconfig.DefaultHTTPClientConfig}
	c, err := NewClient(tgt, ClientOptions{Concurrency: 4096, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("Transport = %T, want *http.Transport", c.Transport)
	}
	if tr.MaxIdleConnsPerHost < 4096 || tr.MaxConnsPerHost != 0 || !tr.DisableCompression || tr.DisableKeepAlives {
		t.Errorf("transport: idle/host %d, conns/host %d, compression off %v, keep-alives off %v; want >= 4096, 0, true, false",
			tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost, tr.DisableCompression, tr.DisableKeepAlives)
	}
	if tr.Protocols == nil || !tr.Protocols.UnencryptedHTTP2() {
		t.Error("H2C: unencrypted HTTP/2 not enabled")
	}

	// With auth the transport is wrapped; h2c is refused rather than ignored.
	auth := &config.Target{Name: "a", HTTPClientConfig: promconfig.HTTPClientConfig{BearerToken: "secret"}}
	if _, err := NewClient(auth, ClientOptions{H2C: true}); err == nil {
		t.Error("NewClient(auth, H2C) succeeded, want an error")
	}
}

// TestNewConnectionPerRequest: --compat new-connection dials one TCP
// connection per request, with and without a bearer token and extra
// headers (which make prometheus/common wrap the transport), and the
// default reuses one; the user agent and the credentials still arrive.
func TestNewConnectionPerRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     promconfig.HTTPClientConfig
		newConn bool
		want    int64 // connections for 3 requests
	}{
		{"plain, new connection", promconfig.DefaultHTTPClientConfig, true, 3},
		{"bearer token and headers, new connection", promconfig.HTTPClientConfig{
			BearerToken: "sk-secret", FollowRedirects: true,
			HTTPHeaders: &promconfig.Headers{Headers: map[string]promconfig.Header{"X-Team": {Values: []string{"llm"}}}},
		}, true, 3},
		{"plain, reused", promconfig.DefaultHTTPClientConfig, false, 1},
		{"bearer token, reused", promconfig.HTTPClientConfig{BearerToken: "sk-secret", FollowRedirects: true}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.UserAgent() != "servingprobe-test" {
					http.Error(w, "user agent "+r.UserAgent(), http.StatusBadRequest)
					return
				}
				if tc.cfg.BearerToken != "" && r.Header.Get("Authorization") != "Bearer sk-secret" {
					http.Error(w, "no token", http.StatusUnauthorized)
					return
				}
				io.WriteString(w, "ok")
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			c, err := NewClient(&config.Target{Name: "t", HTTPClientConfig: tc.cfg},
				ClientOptions{Concurrency: 4, UserAgent: "servingprobe-test", NewConnection: tc.newConn})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				resp, err := c.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, b)
				}
			}
			if got := conns.Load(); got != tc.want {
				t.Errorf("%d TCP connections for 3 requests, want %d", got, tc.want)
			}
		})
	}
}

// TestDetectModelSeveral: with several models the first is used, as
// bench_serving does, and the caller is told which and why.
func TestDetectModelSeveral(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"llama3.2:1b"},{"id":"qwen3:0.6b"}]}`)
	}))
	defer srv.Close()
	m, err := DetectModel(t.Context(), srv.Client(), srv.URL)
	var several *SeveralModelsError
	if m != "llama3.2:1b" || !errors.As(err, &several) || len(several.All) != 2 {
		t.Fatalf("DetectModel = %q, %v; want the first model and a SeveralModelsError", m, err)
	}
	if !strings.Contains(err.Error(), `using the first, "llama3.2:1b"`) {
		t.Errorf("message %q does not say which model and why", err)
	}
}

// TestNewClientDialContext: a client given a dial hook makes every
// connection through it, whatever the URL's address, with or without the
// transport wrapped by a bearer token, so a test can serve it over
// in-memory connections in a synctest bubble; the token still arrives.
func TestNewClientDialContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  promconfig.HTTPClientConfig
	}{
		{"plain", promconfig.DefaultHTTPClientConfig},
		{"bearer token", promconfig.HTTPClientConfig{BearerToken: "sk-secret", FollowRedirects: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := llmtest.NewPipeListener()
				var dials atomic.Int64
				dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return l.Dial(ctx, network, addr)
				}
				var auth atomic.Value
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					auth.Store(r.Header.Get("Authorization"))
					io.WriteString(w, "ok")
				})}
				go func() { _ = srv.Serve(l) }()
				defer srv.Close()
				c, err := NewClient(&config.Target{Name: "t", HTTPClientConfig: tc.cfg}, ClientOptions{Concurrency: 1, DialContext: dial})
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseIdleConnections()
				resp, err := c.Get("http://127.0.0.1:1/") // refused, were it dialled on the network
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "ok" || dials.Load() != 1 {
					t.Errorf("body %q after %d dials, want ok after 1", b, dials.Load())
				}
				want := ""
				if tc.cfg.BearerToken != "" {
					want = "Bearer " + string(tc.cfg.BearerToken)
				}
				if got, _ := auth.Load().(string); got != want {
					t.Errorf("Authorization %q, want %q", got, want)
				}
			})
		})
	}
}
