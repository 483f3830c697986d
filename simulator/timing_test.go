package simulator

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// timedConfig has exact latencies: no jitter.
func timedConfig() Config {
	c := DefaultConfig()
	c.TTFT = 100 * time.Millisecond
	c.PrefillPerToken = time.Millisecond
	c.ITL = 10 * time.Millisecond
	c.TTFTJitter, c.ITLJitter = 0, 0
	return c
}

// serveRecorded runs one request through the handler in the calling
// goroutine (inside a synctest bubble time is virtual, so truth is exact).
func serveRecorded(s *Server, ctx context.Context, path, id, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)).WithContext(ctx)
	req.Header.Set(RequestIDHeader, id)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return w
}

type chunkAt struct {
	Kind   string
	Offset time.Duration
	Tokens int
}

func offsets(tr Truth) []chunkAt {
	var out []chunkAt
	for _, c := range tr.Chunks {
		out = append(out, chunkAt{c.Kind.String(), c.At.Sub(tr.Arrived), c.Tokens})
	}
	return out
}

func TestLatencyModel(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		path   string
		body   string
		want   []chunkAt
	}{
		{
			// "Hello world" in Qwen3's chat template is 10 prompt tokens
			// (TestPromptTokensExact).
			name: "chat per-token flush", path: "/v1/chat/completions",
			body: `{"messages":[{"role":"user","content":"Hello world"}],"max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
			want: []chunkAt{
				{"role", 110 * ms, 0}, {"token", 110 * ms, 1}, {"token", 120 * ms, 1}, {"token", 130 * ms, 1},
				{"token", 140 * ms, 1}, {"usage", 140 * ms, 0}, {"done", 140 * ms, 0},
			},
		},
		{
			name: "speculative chunks", path: "/generate",
			mutate: func(c *Config) { c.TokensPerChunk = 3 },
			body:   `{"input_ids":[1,2,3,4,5],"sampling_params":{"max_new_tokens":7,"ignore_eos":true},"stream":true}`,
			want: []chunkAt{
				{"token", 105 * ms, 3}, {"token", 115 * ms, 3}, {"token", 125 * ms, 1}, {"done", 125 * ms, 0},
			},
		},
		{
			name: "coalesced holds everything to the end", path: "/v1/completions",
			mutate: func(c *Config) { c.Coalesce = true },
			body:   `{"prompt":[1],"max_tokens":3,"ignore_eos":true,"stream":true}`,
			want: []chunkAt{
				{"token", 121 * ms, 1}, {"token", 121 * ms, 1}, {"token", 121 * ms, 1}, {"done", 121 * ms, 0},
			},
		},
		{
			name: "coalesced with a tiny buffer flushes every event", path: "/v1/completions",
			mutate: func(c *Config) { c.Coalesce, c.CoalesceBytes = true, 1 },
			body:   `{"prompt":[1],"max_tokens":3,"ignore_eos":true,"stream":true}`,
			want: []chunkAt{
				{"token", 101 * ms, 1}, {"token", 111 * ms, 1}, {"token", 121 * ms, 1}, {"done", 121 * ms, 0},
			},
		},
		{
			name: "non-streaming waits out the decode", path: "/v1/completions",
			body: `{"prompt":[1,2],"max_tokens":5,"ignore_eos":true}`,
			want: []chunkAt{{"body", 142 * ms, 5}},
		},
		{
			name: "zero ITL", path: "/v2/models/ensemble/generate_stream",
			mutate: func(c *Config) { c.ITL = 0 },
			body:   `{"text_input":"","max_tokens":3,"end_id":-1}`,
			want:   []chunkAt{{"token", 100 * ms, 1}, {"token", 100 * ms, 1}, {"token", 100 * ms, 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := timedConfig()
				if tc.mutate != nil {
					tc.mutate(&cfg)
				}
				s := newServer(t, cfg)
				w := serveRecorded(s, context.Background(), tc.path, "r", tc.body)
				if w.Code != 200 {
					t.Fatalf("status %d: %s", w.Code, w.Body)
				}
				tr, ok := s.Truth("r")
				if !ok {
					t.Fatal("no truth recorded")
				}
				if diff := cmp.Diff(tc.want, offsets(tr)); diff != "" {
					t.Errorf("chunk times (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestQueueing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := timedConfig()
		cfg.MaxRunningRequests = 1
		s := newServer(t, cfg)
		body := `{"prompt":[1],"max_tokens":5,"ignore_eos":true,"stream":true}`
		var wg sync.WaitGroup
		for _, id := range []string{"first", "second"} {
			wg.Go(func() { serveRecorded(s, context.Background(), "/v1/completions", id, body) })
			synctest.Wait() // "first" holds the slot before "second" arrives
		}
		wg.Wait()
		a, _ := s.Truth("first")
		b, _ := s.Truth("second")
		// first: TTFT 101ms, then 4 steps of 10ms; second waits for it.
		if got, want := a.Finished.Sub(a.Arrived), 141*time.Millisecond; got != want {
			t.Errorf("first took %v, want %v", got, want)
		}
		if !b.Admitted.Equal(a.Finished) {
			t.Errorf("second admitted at %v, want when first finished (%v)", b.Admitted.Sub(a.Arrived), a.Finished.Sub(a.Arrived))
		}
		ttft, _ := b.TTFT()
		if want := 141*time.Millisecond + 101*time.Millisecond; ttft != want {
			t.Errorf("queued TTFT = %v, want %v", ttft, want)
		}
	})
}

func TestITLPerRunningRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := timedConfig()
		cfg.ITLPerRunningRequest = 5 * time.Millisecond
		s := newServer(t, cfg)
		body := `{"prompt":[1],"max_tokens":3,"ignore_eos":true,"stream":true}`
		var wg sync.WaitGroup
		for _, id := range []string{"a", "b"} {
			wg.Go(func() { serveRecorded(s, context.Background(), "/v1/completions", id, body) })
		}
		wg.Wait()
		tr, _ := s.Truth("a")
		if diff := cmp.Diff([]time.Duration{15 * time.Millisecond, 15 * time.Millisecond}, tr.ITLs()); diff != "" {
			t.Errorf("ITLs with 2 running (-want +got):\n%s", diff)
		}
	})
}

func TestCancellationStopsHandler(t *testing.T) {
	for _, fault := range []string{"", string(FaultStallBeforeHeaders), string(FaultStallAfterHeaders), string(FaultStallMidStream)} {
		t.Run("fault="+fault, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newServer(t, timedConfig())
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(`{"prompt":[1],"max_tokens":1000,"ignore_eos":true,"stream":true}`)).WithContext(ctx)
					req.Header.Set(FaultHeader, fault)
					req.Header.Set(RequestIDHeader, "c")
					s.Handler().ServeHTTP(httptest.NewRecorder(), req)
				}()
				time.Sleep(time.Second)
				start := time.Now()
				cancel()
				<-done
				if d := time.Since(start); d != 0 {
					t.Errorf("handler took %v of virtual time to stop", d)
				}
				if tr, ok := s.Truth("c"); !ok || tr.Finished.Sub(tr.Arrived) != time.Second {
					t.Errorf("truth %v finished after %v, want 1s", ok, tr.Finished.Sub(tr.Arrived))
				}
			})
		})
	}
}

// TestClientSeesConfiguredTiming runs a real HTTP client over an in-memory
// connection: on virtual time, the client's TTFT and ITL equal the model's
// and the server's ground truth exactly.
func TestClientSeesConfiguredTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, timedConfig())
		l := llmtest.NewPipeListener()
		srv := &http.Server{Handler: s.Handler()}
		go srv.Serve(l)
		tr := &http.Transport{DialContext: l.Dial}
		client := &http.Client{Transport: tr}
		defer func() {
			tr.CloseIdleConnections()
			srv.Close()
		}()

		req, _ := http.NewRequest(http.MethodPost, "http://sim/v1/chat/completions",
			strings.NewReader(`{"messages":[{"role":"user","content":"Hello world"}],"max_tokens":4,"ignore_eos":true,"stream":true}`))
		req.Header.Set(RequestIDHeader, "pipe")
		sent := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var arrivals []time.Duration
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"content":" `) {
				arrivals = append(arrivals, time.Since(sent))
			}
		}
		resp.Body.Close()
		ms := time.Millisecond
		// 10 prompt tokens ("Hello world" in Qwen3's chat template, see
		// TestPromptTokensExact): TTFT 110ms, then 10ms steps.
		if diff := cmp.Diff([]time.Duration{110 * ms, 120 * ms, 130 * ms, 140 * ms}, arrivals); diff != "" {
			t.Errorf("client token arrival times (-want +got):\n%s", diff)
		}
		truth, err := s.WaitTruth(context.Background(), "pipe")
		if err != nil {
			t.Fatal(err)
		}
		if ttft, _ := truth.TTFT(); ttft != 110*ms {
			t.Errorf("server TTFT = %v, want 110ms", ttft)
		}
	})
}
