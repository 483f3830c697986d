package benchrun

import (
	"context"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/simulator"
)

// These SLO searches run against the simulator on loopback, through
// Prepare and Sweep as the CLI and the bench windows do; their answers are
// read from the sweep table's text, as a user reads them.

// startLoad is a load counter over the simulator's generation endpoints:
// the most requests in flight at once and the most started within one
// 100 ms window (by the server's clock, to bucket starts, never to time
// them).
type startLoad struct {
	next http.Handler

	mu                    sync.Mutex
	inFlight, maxInFlight int
	windows               map[int64]int
	maxStarts             int
}

func (c *startLoad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.URL.Path, "completions") && !strings.Contains(r.URL.Path, "generate") {
		c.next.ServeHTTP(w, r)
		return
	}
	c.mu.Lock()
	c.inFlight++
	c.maxInFlight = max(c.maxInFlight, c.inFlight)
	win := time.Now().UnixNano() / int64(100*time.Millisecond)
	c.windows[win]++
	c.maxStarts = max(c.maxStarts, c.windows[win])
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	c.next.ServeHTTP(w, r)
}

func (c *startLoad) peaks() (inFlight, starts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxInFlight, c.maxStarts
}

// serveSim serves the simulator with cfg on loopback, behind wrap when
// it is set.
func serveSim(t *testing.T, cfg simulator.Config, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = sim.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// searchSpec is bench --backend sglang --dataset-name random with 32
// input tokens and outputLen output tokens, --num-prompts prompts and
// --slo slo: a prompt count given fixes every point's size, so the
// points are not sized by samples.
func searchSpec(t *testing.T, url string, outputLen, prompts int, slo string, sweep func(*SweepSpec)) Spec {
	t.Helper()
	s := DefaultSpec()
	s.Backend, s.BaseURL, s.Dataset, s.Tokenizer = "sglang", url, "random", "../tokenizer/testdata/qwen3"
	s.RandomInputLen, s.RandomOutputLen, s.RandomRangeRatio = 32, outputLen, 1
	s.NumPrompts, s.ReadyCheckTimeout = prompts, 10*time.Second
	w := DefaultSweepSpec()
	w.Mode, w.By, w.PointSamples = bench.SweepSLO, bench.ByRequestRate, 0
	var err error
	if w.SLO, err = bench.ParseSLO(slo); err != nil {
		t.Fatal(err)
	}
	if sweep != nil {
		sweep(&w)
	}
	s.Sweep = &w
	return s
}

// runSearch prepares and runs s's search and returns its sweep table.
func runSearch(t *testing.T, s Spec) string {
	t.Helper()
	ctx := context.Background()
	p, err := Prepare(ctx, s, Env{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Sweep(ctx, Env{}, nil)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	var b strings.Builder
	if err := res.Table().Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// searchNumbers reads the capacity line and the answer of a search.
func searchNumbers(t *testing.T, table string) (saturation float64, peak int, answer float64) {
	t.Helper()
	m := regexp.MustCompile(`Completion capacity: ([\d.]+) req/s, measured by the concurrency ramp at (\d+) in flight`).FindStringSubmatch(table)
	if m == nil {
		t.Fatalf("no completion capacity line in:\n%s", table)
	}
	saturation, _ = strconv.ParseFloat(m[1], 64)
	peak, _ = strconv.Atoi(m[2])
	if a := regexp.MustCompile(`Highest request rate meeting the SLO: ([\d.]+) req/s`).FindStringSubmatch(table); a != nil {
		answer, _ = strconv.ParseFloat(a[1], 64)
	}
	return saturation, peak, answer
}

// TestSLOSearchNoFlood: the search finds the completion capacity by
// ramping the concurrency, not by sending every prompt at once (which put
// 1,250 requests in ollama's queue within 0.13 s). The documented bound
// (MaxRampConcurrency, searchConcurrency): the server never has more than
// twice the ramp's peak concurrency in flight, so no 100 ms window starts
// more than that plus the requests those slots complete in the window:
// with 4 slots, TTFT 20 ms and 7 steps of 5 ms, a request holds its slot
// at least 55 ms, so a slot completes at most 2 in 100 ms and a window
// starts at most 3 times the in-flight bound. The old all-at-once anchor
// started all 100 of a point's prompts in one window. The answer is
// strictly below the capacity the ramp measured.
func TestSLOSearchNoFlood(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 5*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 4
	counter := &startLoad{windows: map[int64]int{}}
	url := serveSim(t, cfg, func(h http.Handler) http.Handler { counter.next = h; return counter })
	table := runSearch(t, searchSpec(t, url, 8, 100, "ttft:p99<=200ms", func(w *SweepSpec) { w.Cooldown = 0 }))
	saturation, peak, answer := searchNumbers(t, table)
	inFlight, starts := counter.peaks()
	bound := 2 * peak
	if peak < 1 || peak > 8 || inFlight > bound || starts > 3*bound {
		t.Errorf("peak concurrency %d: the server saw %d in flight (bound %d) and %d started in 100 ms (bound %d)\n%s",
			peak, inFlight, bound, starts, 3*bound, table)
	}
	if !(answer > 0 && answer < saturation) {
		t.Errorf("answer %v req/s, completion capacity %v: want an answer strictly below it\n%s", answer, saturation, table)
	}
	t.Logf("peak %d in flight, %d started in a 100 ms window; capacity %.1f req/s, answer %.1f req/s", inFlight, starts, saturation, answer)
}

// TestSLOSearchFailuresCount: a server that answers 10% of its requests
// with a 503, fast, once passed a TTFT objective (53 of 557 failing). The
// default errors<=1% objective fails every point, and the answer names
// it; an SLO that allows 30% finds a rate.
func TestSLOSearchFailuresCount(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 4
	cfg.FaultRates = map[simulator.Fault]float64{simulator.Fault503: 0.1}
	cfg.Seed = 7
	url := serveSim(t, cfg, nil)
	three := func(w *SweepSpec) { w.Cooldown, w.MaxPoints = 0, 3 }
	table := runSearch(t, searchSpec(t, url, 4, 60, "ttft:p99<=500ms", three))
	if !strings.Contains(table, "No request rate tried meets the SLO") || !regexp.MustCompile(`Broke first: errors<=1% \([\d.]+% of \d+ requests failed\)`).MatchString(table) {
		t.Errorf("a server failing 10%% of its requests met the SLO, or the answer does not name the errors objective:\n%s", table)
	}
	table = runSearch(t, searchSpec(t, url, 4, 60, "ttft:p99<=500ms,errors<=30%", three))
	if !strings.Contains(table, "SLO search: ttft:p99<=500ms,errors<=30%") || !strings.Contains(table, "Highest request rate meeting the SLO") {
		t.Errorf("errors<=30%%: no answer:\n%s", table)
	}
}
