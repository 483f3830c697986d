package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
)

// gatedSim is a simulator behind a gate: once closed, every POST gets a
// 503 without reaching the simulator, so that what it served stops
// growing and can be compared with the daemon's counters. It also keeps
// the simulator's own prompt counts of the embeddings it answered
// (usage.prompt_tokens), which it keeps no ground truth for.
type gatedSim struct {
	sim *simulator.Server
	url string

	mu       sync.Mutex
	closed   bool
	inFlight sync.WaitGroup
	// embeddings answered 200, and the prompt tokens their usage stated.
	embeddings, embeddingTokens int
}

func startGatedSim(t *testing.T, cfg simulator.Config) *gatedSim {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedSim{sim: sim}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	g.url = "http://" + ln.Addr().String()
	return g
}

func (g *gatedSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			http.Error(w, "gate closed", http.StatusServiceUnavailable)
			return
		}
		g.inFlight.Add(1) // under mu: close sees every request it let in
		g.mu.Unlock()
		defer g.inFlight.Done()
	}
	if r.URL.Path != "/v1/embeddings" {
		g.sim.Handler().ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	g.sim.Handler().ServeHTTP(rec, r)
	if rec.Code == http.StatusOK {
		var body struct {
			Usage struct {
				PromptTokens *int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err == nil && body.Usage.PromptTokens != nil {
			g.mu.Lock()
			g.embeddings++
			g.embeddingTokens += *body.Usage.PromptTokens
			g.mu.Unlock()
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// close shuts the gate and waits for the requests it let in.
func (g *gatedSim) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.inFlight.Wait()
}

// TestServeNewBackendModules: daemon modules on the anthropic,
// openai-responses and openai-embeddings backends probe the simulator's
// /v1/messages, /v1/responses and /v1/embeddings (one simulator each, so
// that each one's ground truth is one target's). Once every target has
// succeeded twice, the simulators stop serving; then, per target, the
// daemon's /metrics counts as many successes as the simulator served, its
// prompt and output token counters are the sums of the simulator's own
// counts (its per-request truths; for embeddings, which keep none, the
// usage it answered), and the histograms are the protocol's: TTFT, TPOT
// (one sample a success) and ITL (one a token after the first) for the
// two streams, and for embeddings E2E only, with no output tokens.
func TestServeNewBackendModules(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	backends := []string{"anthropic", "openai-responses", "openai-embeddings"}
	streaming := map[string]bool{"anthropic": true, "openai-responses": true}
	sims := map[string]*gatedSim{}
	urls := map[string]string{}
	for _, b := range backends {
		sims[b] = startGatedSim(t, cfg)
		urls[b] = sims[b].url
	}
	conf := writeShortModuleConfig(t, t.TempDir(), cfg.Model, urls)
	addr := freeAddr(t)
	startServe(t, "serve", "--config.file="+conf, "--web.listen-address="+addr)
	c := client{t: t, base: "http://" + addr}

	// scrape reads the daemon's series; nil before it listens.
	scrape := func() map[string]*daemonSeries {
		t.Helper()
		code, body := c.do("GET", "/metrics")
		if code != http.StatusOK {
			return nil
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("/metrics does not parse: %v", err)
		}
		return daemonTargets(t, fams)
	}
	success := func(s *daemonSeries) float64 {
		if s == nil {
			return 0
		}
		return s.requests[string(prober.OutcomeSuccess)]
	}
	// poll scrapes until done holds for every target (real sockets: 20 s).
	poll := func(what string, done func(b string, s *daemonSeries) bool) map[string]*daemonSeries {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ts, all := scrape(), true
			var notYet []string
			for _, b := range backends {
				if s := ts["sim-"+b]; !done(b, s) {
					all = false
					notYet = append(notYet, fmt.Sprintf("sim-%s (%v successes, requests %v)", b, success(s), s))
				}
			}
			if all {
				return ts
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 20 s, not %s: %v", what, notYet)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Two successes at least, so that the counters are sums.
	poll("every target succeeded twice", func(_ string, s *daemonSeries) bool { return success(s) >= 2 })
	served := map[string]int{}
	prompt, generated := map[string]int{}, map[string]int{}
	for _, b := range backends {
		g := sims[b]
		g.close()
		if !streaming[b] {
			g.mu.Lock()
			served[b], prompt[b] = g.embeddings, g.embeddingTokens
			g.mu.Unlock()
			if n := len(g.sim.Truths()); n != 0 {
				t.Errorf("sim-%s: %d truths; the simulator keeps none for embeddings (the check of it would be moot)", b, n)
			}
			continue
		}
		for _, tr := range g.sim.Truths() {
			if tr.Fault != simulator.FaultNone || tr.CompletionTokens == 0 {
				t.Errorf("sim-%s: request %s had fault %q, %d tokens: not a success the daemon should count", b, tr.RequestID, tr.Fault, tr.CompletionTokens)
				continue
			}
			served[b]++
			prompt[b] += tr.PromptTokens
			generated[b] += tr.CompletionTokens
		}
	}
	// The daemon counts a result after it has read the whole answer,
	// which can be after the simulator's handler returned: wait until it
	// has counted every request the simulators served (and no more, or
	// this times out), then read the series once more.
	poll("the daemon counted what the simulators served", func(b string, s *daemonSeries) bool { return success(s) == float64(served[b]) })
	ts := scrape()
	if ts == nil {
		t.Fatal("/metrics did not answer")
	}

	count := func(h *dto.Histogram) uint64 {
		if h == nil {
			return 0
		}
		return h.GetSampleCount()
	}
	for _, b := range backends {
		s := ts["sim-"+b]
		n := served[b]
		if n == 0 || success(s) != float64(n) {
			t.Errorf("sim-%s: %v successes, the simulator served %d", b, success(s), n)
			continue
		}
		t.Logf("sim-%s: %d served, %d prompt and %d generated tokens; daemon %v, %v and %v; E2E %d, TTFT %d, ITL %d samples",
			b, n, prompt[b], generated[b], success(s), s.promptTokens, s.genTokens, count(s.e2e), count(s.ttft), count(s.itl))
		if s.promptTokens != float64(prompt[b]) || prompt[b] == 0 {
			t.Errorf("sim-%s: servingprobe_prompt_tokens_total %v, the simulator counted %d over %d requests", b, s.promptTokens, prompt[b], n)
		}
		if s.genTokens != float64(generated[b]) {
			t.Errorf("sim-%s: servingprobe_generation_tokens_total %v, the simulator generated %d", b, s.genTokens, generated[b])
		}
		if count(s.e2e) != uint64(n) {
			t.Errorf("sim-%s: %d E2E samples, want one for each of %d successes", b, count(s.e2e), n)
		}
		if streaming[b] {
			if count(s.ttft) != uint64(n) || count(s.tpot) != uint64(n) || count(s.itl) == 0 {
				t.Errorf("sim-%s: TTFT %d, TPOT %d, ITL %d samples; want %d, %d and more than 0", b, count(s.ttft), count(s.tpot), count(s.itl), n, n)
			}
			// The stream's every output token after the first is an ITL
			// sample (n tokens an event give n samples).
			if count(s.itl) != uint64(generated[b]-n) {
				t.Errorf("sim-%s: %d ITL samples, want %d (output tokens after each request's first)", b, count(s.itl), generated[b]-n)
			}
		} else if count(s.ttft)+count(s.tpot)+count(s.itl) != 0 || generated[b] != 0 {
			t.Errorf("sim-%s: an embedding observed TTFT %d, TPOT %d, ITL %d times, generated %d tokens; it generates nothing",
				b, count(s.ttft), count(s.tpot), count(s.itl), generated[b])
		}
	}
}
