package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/simulator"
)

// loadCounter wraps a server and records when each request to its
// generation endpoints started and when the first one ended (by the
// server's clock, to order events, never to time them), and how often
// /metrics was read.
type loadCounter struct {
	next http.Handler

	mu     sync.Mutex
	starts []time.Time
	// firstEnd is when the first generation request ended; metricsReads
	// counts GET /metrics.
	firstEnd     time.Time
	metricsReads int
}

func (c *loadCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.URL.Path, "completions") && !strings.Contains(r.URL.Path, "generate") {
		if r.URL.Path == "/metrics" {
			c.mu.Lock()
			c.metricsReads++
			c.mu.Unlock()
		}
		c.next.ServeHTTP(w, r)
		return
	}
	c.mu.Lock()
	first := len(c.starts) == 0
	c.starts = append(c.starts, time.Now())
	c.mu.Unlock()
	defer func() {
		if first {
			c.mu.Lock()
			c.firstEnd = time.Now()
			c.mu.Unlock()
		}
	}()
	c.next.ServeHTTP(w, r)
}

// startCountedSimulator serves the simulator behind a loadCounter.
func startCountedSimulator(t *testing.T, cfg simulator.Config) (*loadCounter, string) {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &loadCounter{next: sim.Handler()}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return c, "http://" + ln.Addr().String()
}

// hog holds one slot of the simulator with a request that runs until
// cancelled (30,000 tokens: a minute at TestBenchSLOSearchWaitsForIdle's
// 2 ms a token, so that a search on a loaded machine still finds the
// server busy; the simulator's 32,768-token context bounds it), as
// another client's long request or a queue an earlier point left would.
func hog(t *testing.T, url string) (cancel func()) {
	t.Helper()
	ctx, cancelCtx := context.WithCancel(context.Background())
	done := make(chan struct{})
	body := `{"model":"servingprobe-sim","prompt":"hi","max_tokens":30000,"ignore_eos":true,"stream":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	go func() {
		defer close(done)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}()
	var once sync.Once
	cancel = func() { once.Do(func() { cancelCtx(); <-done }) }
	t.Cleanup(cancel)
	return cancel
}

// TestBenchSLOSearchWaitsForIdle: before each point the search waits for
// the server to be back at its idle state (here its running and waiting
// gauges at zero), so that a point does not start on an earlier one's
// queue; llama-server still deferred 870 requests after a cancelled point
// while the search paused 2 s. A request of another client holds a slot
// until the search has read the gauges three times; no request of the
// search starts before it ends. Then, with the request held for good and
// --slo-idle-timeout 1s, every point says it started on a busy server,
// and so does the answer.
func TestBenchSLOSearchWaitsForIdle(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, 2*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 4
	counter, url := startCountedSimulator(t, cfg)
	release := hog(t, url)
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		// Released once the search has looked at the busy server.
		defer close(watched)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			counter.mu.Lock()
			n := counter.metricsReads
			counter.mu.Unlock()
			if n >= 3 {
				release()
				return
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-watched })
	dir := t.TempDir()
	args := func(out string, extra ...string) []string {
		return sampleSearchArgs(url, filepath.Join(dir, out), 4, append([]string{"--slo", "ttft:p99<=500ms", "--num-prompts", "20",
			"--slo-start", "20", "--slo-max-points", "2", "--sweep-cooldown", "0"}, extra...)...)
	}
	code, stdout, stderr := runCLI(t, args("a.jsonl")...)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	counter.mu.Lock()
	hogEnd, starts := counter.firstEnd, slices.Clone(counter.starts)
	counter.mu.Unlock()
	if hogEnd.IsZero() || len(starts) < 2 {
		t.Fatalf("the other client's request did not end (%v) or the search sent nothing (%d requests)", hogEnd, len(starts))
	}
	for i, s := range starts[1:] {
		if s.Before(hogEnd) {
			t.Errorf("the search's request %d started while the other client's request still ran", i+1)
		}
	}
	if strings.Contains(stdout, "not back at its idle state") {
		t.Errorf("the server came back, the answer says it did not:\n%s", stdout)
	}

	// Held for good: the wait ends at its bound and says so.
	hold := hog(t, url)
	defer hold()
	code, stdout, stderr = runCLI(t, args("b.jsonl", "--slo-idle-timeout", "1s")...)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs := readRecords(t, filepath.Join(dir, "b.jsonl"))
	for i, r := range recs {
		if sw, _ := r["sweep"].(map[string]any); sw["not_idle"] != true {
			t.Errorf("record %d: sweep %v, want not_idle", i+1, sw)
		}
	}
	if !strings.Contains(stdout, "The server was not back at its idle state within 1s before point 1, 2") || !strings.Contains(stdout, "server busy before") {
		t.Errorf("the answer does not say the points started on a busy server:\n%s", stdout)
	}
}
