package prober

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
)

// w3cTraceparent is the W3C Trace Context format of a version-00 header
// with the sampled flag, written out independently of TraceIDOf.
var w3cTraceparent = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`)

func TestTraceIDOf(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tc := range []struct{ in, want string }{
		{"00-" + id + "-00f067aa0ba902b7-01", id},
		{"00-" + id + "-00f067aa0ba902b7-00", id}, // not sampled: still the request's trace
		{"01-" + id + "-00f067aa0ba902b7-01-more", id},
		{"00-" + id + "-00f067aa0ba902b7-01-more", ""}, // version 00 has nothing after the flags
		{"01-" + id + "-00f067aa0ba902b7-01x", ""},
		{"ff-" + id + "-00f067aa0ba902b7-01", ""},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ""}, // upper case
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"00-" + id + "-0000000000000000-01", ""},
		{"00-" + id + "-00f067aa0ba902b7", ""},
		{"", ""},
	} {
		if got := TraceIDOf(tc.in); got != tc.want {
			t.Errorf("TraceIDOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for range 1000 {
		h, id := newTraceparent()
		if m := w3cTraceparent.FindStringSubmatch(h); m == nil || m[1] != id || TraceIDOf(h) != id {
			t.Fatalf("newTraceparent() = %q, %q: not a valid header with that trace id", h, id)
		}
	}
}

// captureServer answers every chat request with a short stream and keeps
// the traceparent headers each request carried.
func captureServer(t *testing.T) (*httptest.Server, func() [][]string) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen [][]string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Values("traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]string { mu.Lock(); defer mu.Unlock(); return append([][]string(nil), seen...) }
}

// TestTraceparentSent: every request carries one valid traceparent with a
// trace id of its own, and the Result records the id the server saw.
// A module's own traceparent is sent as given and its id recorded; a
// target's no_traceparent, or an http_client_config header that would
// make ours a second one, sends none of ours.
func TestTraceparentSent(t *testing.T) {
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name    string
		target  config.Target
		module  config.Module
		want    func(t *testing.T, sent []string, res Result)
		nTraces int // distinct trace ids over the requests
	}{
		{name: "default", nTraces: 5, want: func(t *testing.T, sent []string, res Result) {
			m := w3cTraceparent.FindStringSubmatch(sent[0])
			if len(sent) != 1 || m == nil {
				t.Fatalf("traceparent sent = %q, want one in the W3C format", sent)
			}
			if res.TraceID != m[1] {
				t.Errorf("Result.TraceID = %q, the server saw %q", res.TraceID, m[1])
			}
		}},
		{name: "module header kept", module: config.Module{Headers: map[string]string{"traceparent": own}}, nTraces: 1,
			want: func(t *testing.T, sent []string, res Result) {
				if len(sent) != 1 || sent[0] != own || res.TraceID != "0af7651916cd43dd8448eb211c80319c" {
					t.Errorf("traceparent sent = %q, Result.TraceID %q, want the module's alone and its id", sent, res.TraceID)
				}
			}},
		{name: "no_traceparent", target: config.Target{NoTraceparent: true}, want: func(t *testing.T, sent []string, res Result) {
			if len(sent) != 0 || res.TraceID != "" {
				t.Errorf("traceparent sent = %q, Result.TraceID %q, want none", sent, res.TraceID)
			}
		}},
		{name: "http_client_config header", target: config.Target{HTTPClientConfig: promconfig.HTTPClientConfig{
			HTTPHeaders: &promconfig.Headers{Headers: map[string]promconfig.Header{"Traceparent": {Values: []string{own}}}}}},
			nTraces: 1, want: func(t *testing.T, sent []string, res Result) {
				if len(sent) != 1 || sent[0] != own {
					t.Errorf("traceparent sent = %q, want the client config's alone", sent)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := captureServer(t)
			tgt := tc.target
			tgt.URL = srv.URL
			client, err := NewClient(&tgt, ClientOptions{Concurrency: 1})
			if err != nil {
				t.Fatal(err)
			}
			o := ModuleOptions(tgt, tc.module)
			o.Model = "m"
			p := &Prober{Client: client, Backend: openAIChat{}, Name: "openai-chat", Options: o}
			const n = 5
			traces := map[string]bool{}
			for i := range n {
				res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 4}, time.Time{})
				if res.Outcome != OutcomeSuccess {
					t.Fatalf("request %d: %s (%s)", i, res.Outcome, res.Err)
				}
				s := seen()
				tc.want(t, s[len(s)-1], res)
				if len(s[len(s)-1]) == 1 {
					traces[TraceIDOf(s[len(s)-1][0])] = true
				}
			}
			if len(traces) != tc.nTraces {
				t.Errorf("%d distinct trace ids over %d requests, want %d", len(traces), n, tc.nTraces)
			}
		})
	}
}

// TestRetryKeepsTraceparent: a request sent again on a new connection
// (a kept-alive connection closed under it) is the same request: it
// carries the same traceparent, and the Result its trace id.
func TestRetryKeepsTraceparent(t *testing.T) {
	srv, _ := keepAliveCloser(t)
	var (
		mu   sync.Mutex
		seen []string
	)
	inner := srv.Config.Handler
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("traceparent"))
		mu.Unlock()
		inner.ServeHTTP(w, r)
	})
	p := &Prober{Client: &http.Client{Transport: &http.Transport{}}, Backend: openAIChat{}, Name: "openai-chat",
		Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true}}
	p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 4}, time.Time{})
	res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 4}, time.Time{})
	if res.ConnRetries != 1 || res.Outcome != OutcomeSuccess {
		t.Fatalf("second request: %d retries, %s; want one retry and success", res.ConnRetries, res.Outcome)
	}
	mu.Lock()
	defer mu.Unlock()
	last := seen[len(seen)-1]
	if TraceIDOf(last) != res.TraceID || res.TraceID == "" {
		t.Errorf("retry sent traceparent %q, Result.TraceID %q: want the same trace", last, res.TraceID)
	}
	for _, h := range seen[1 : len(seen)-1] {
		if h != last {
			t.Errorf("the first attempt sent %q, the retry %q: want the same header", h, last)
		}
	}
}

func BenchmarkNewTraceparent(b *testing.B) {
	for b.Loop() {
		newTraceparent()
	}
}
