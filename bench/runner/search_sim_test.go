package runner

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// These SLO searches run against the simulator in a synctest bubble over
// in-memory connections (serveSim), through Prepare and Sweep as the CLI
// and the bench windows do; their answers are read from the sweep table's
// text, as a user reads them.

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

// simServer is the simulator served over in-memory connections
// (llmtest.PipeListener), for a test inside a testing/synctest bubble:
// every latency is the simulator's and every clock the search reads is
// the bubble's, so what a search finds does not depend on how busy the
// machine is. env dials it; close ends it before the bubble does.
type simServer struct {
	url   string
	env   Env
	close func()
}

// serveSim serves the simulator with cfg, behind wrap when it is set.
// It must be called inside a bubble.
func serveSim(t *testing.T, cfg simulator.Config, wrap func(http.Handler) http.Handler) *simServer {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = sim.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	l := llmtest.NewPipeListener()
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	return &simServer{url: "http://sim.test", env: Env{DialContext: l.Dial}, close: func() { _ = srv.Close(); <-done }}
}

// simBenchSpec is bench --backend sglang --dataset-name random with 32
// input tokens and outputLen output tokens against url. The server's
// /metrics is not read: a search then judges the server idle by probing
// it, on the in-memory connections (its gauge reads would dial the
// network).
func simBenchSpec(url string, outputLen int) Spec {
	s := DefaultSpec()
	s.Backend, s.BaseURL, s.Dataset, s.Tokenizer = "sglang", url, "random", "../../tokenizer/testdata/qwen3"
	s.RandomInputLen, s.RandomOutputLen, s.RandomRangeRatio = 32, outputLen, 1
	s.ReadyCheckTimeout, s.NoServerMetrics = 10*time.Second, true
	return s
}

// searchSpec is simBenchSpec with --slo slo and, when prompts is not 0,
// --num-prompts prompts: a prompt count given fixes every point's size;
// without one, as on the command line, the points are sized by samples
// and the prompts are enough for them.
func searchSpec(t *testing.T, url string, outputLen, prompts int, slo string, sweep func(*SweepSpec)) Spec {
	t.Helper()
	s := simBenchSpec(url, outputLen)
	w := DefaultSweepSpec()
	w.Mode, w.By = bench.SweepSLO, bench.ByRequestRate
	var err error
	if w.SLO, err = bench.ParseSLO(slo); err != nil {
		t.Fatal(err)
	}
	if sweep != nil {
		sweep(&w)
	}
	if prompts > 0 {
		s.NumPrompts, w.PointSamples = prompts, 0
	} else {
		s.NumPrompts = w.PointPrompts()
	}
	s.Sweep = &w
	return s
}

// runSearch prepares and runs s's search against srv and returns its
// sweep table.
func runSearch(t *testing.T, srv *simServer, s Spec) string {
	t.Helper()
	_, table := runSearchResult(t, srv, s)
	return table
}

// runSearchResult is runSearch with the search's result.
func runSearchResult(t *testing.T, srv *simServer, s Spec) (*SweepResult, string) {
	t.Helper()
	ctx := context.Background()
	p, err := Prepare(ctx, s, srv.env)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Client.CloseIdleConnections()
	res, err := p.Sweep(ctx, srv.env, nil)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	var b strings.Builder
	if err := res.Table().Write(&b); err != nil {
		t.Fatal(err)
	}
	return res, b.String()
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
	synctest.Test(t, func(t *testing.T) {
		counter := &startLoad{windows: map[int64]int{}}
		srv := serveSim(t, cfg, func(h http.Handler) http.Handler { counter.next = h; return counter })
		defer srv.close()
		table := runSearch(t, srv, searchSpec(t, srv.url, 8, 100, "ttft:p99<=200ms", func(w *SweepSpec) { w.Cooldown = 0 }))
		saturation, peak, answer := searchNumbers(t, table)
		inFlight, starts := counter.peaks()
		bound := 2 * peak
		if peak < 1 || peak > 8 || inFlight > bound || starts > 3*bound {
			t.Errorf("peak concurrency %d: the server saw %d in flight (bound %d) and %d started in 100 ms (bound %d)\n%s",
				peak, inFlight, bound, starts, 3*bound, table)
		}
		// The server completes at most 4/0.055 = 72.7 req/s, first at 4
		// in flight; on the bubble's clock the ramp measures just that.
		if peak != 4 || saturation > 72.8 || saturation < 72.7/(1+rampGain) {
			t.Errorf("the ramp peaked at %d in flight, %v req/s; want 4 in flight and 66.1 to 72.7 req/s\n%s", peak, saturation, table)
		}
		if !(answer > 0 && answer < saturation) {
			t.Errorf("answer %v req/s, completion capacity %v: want an answer strictly below it\n%s", answer, saturation, table)
		}
		t.Logf("peak %d in flight, %d started in a 100 ms window; capacity %.1f req/s, answer %.1f req/s", inFlight, starts, saturation, answer)
	})
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
	synctest.Test(t, func(t *testing.T) {
		srv := serveSim(t, cfg, nil)
		defer srv.close()
		three := func(w *SweepSpec) { w.Cooldown, w.MaxPoints = 0, 3 }
		// No warmup: its one request draws the 10% of 503s like any
		// other, and a failed warmup ends the search with an error, as
		// bench_serving's does; which request draws one is fixed by the
		// seed and the order of the requests before it, not by what this
		// test guards.
		search := func(slo string) string {
			s := searchSpec(t, srv.url, 4, 60, slo, three)
			s.WarmupRequests = 0
			return runSearch(t, srv, s)
		}
		table := search("ttft:p99<=500ms")
		if !strings.Contains(table, "No request rate tried meets the SLO") || !regexp.MustCompile(`Broke first: errors<=1% \([\d.]+% of \d+ requests failed\)`).MatchString(table) {
			t.Errorf("a server failing 10%% of its requests met the SLO, or the answer does not name the errors objective:\n%s", table)
		}
		table = search("ttft:p99<=500ms,errors<=30%")
		if !strings.Contains(table, "SLO search: ttft:p99<=500ms,errors<=30%") || !strings.Contains(table, "Highest request rate meeting the SLO") {
			t.Errorf("errors<=30%%: no answer:\n%s", table)
		}
	})
}

// TestSLOSearchBySamples is the search a user runs without --num-prompts,
// against 8 slots, TTFT 20 ms, ITL 2 ms and 32 output tokens: a request
// holds its slot for 20 + 31×2 = 82 ms, so the server completes at most
// 8/0.082 = 97.6 req/s. Above that the queue grows for the whole point
// and the p99 TTFT breaks 200 ms within seconds. Below it (Poisson
// arrivals, the default), the wait for a slot is shorter than in an M/M/8
// queue with the same mean service time, where P(wait > t) is at most
// exp(-(97.6-λ)t): for the 180 ms of slack left by the 20 ms TTFT, that is
// under 1% for λ ≤ 97.6 - ln(100)/0.18 = 72 req/s. So the SLO's limit is
// between 72 and 97.6 req/s, and the answer, the highest passing point of
// a bracket within 10%, is at least 72/1.1 = 65. The search runs in a
// synctest bubble over in-memory connections, so the simulator's service
// times are exact whatever the machine's load. Its cost is bounded on what the points
// measured: the measured time of every point, plus their pauses, within
// 150 s.
func TestSLOSearchBySamples(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 8
	synctest.Test(t, func(t *testing.T) {
		srv := serveSim(t, cfg, nil)
		defer srv.close()
		url := srv.url
		res, table := runSearchResult(t, srv, searchSpec(t, url, 32, 0, "ttft:p99<=200ms", nil))
		m := regexp.MustCompile(`Highest request rate meeting the SLO: ([\d.]+) req/s`).FindStringSubmatch(table)
		if m == nil {
			t.Fatalf("no answer line in:\n%s", table)
		}
		got, _ := strconv.ParseFloat(m[1], 64)
		if got < 65 || got > 97.6 {
			t.Errorf("SLO search found %v req/s, want 65 to 97.6\n%s", got, table)
		}
		var measured time.Duration
		for i, p := range res.Points {
			measured += time.Duration(p.Summary.Duration * float64(time.Second))
			if i >= 2 && p.Info.Samples <= 0 {
				t.Errorf("point %d does not say how many samples decided it: %+v", i+1, p.Info)
			}
		}
		// Each point also pauses 1 s after its warmup and 2 s before it.
		cost := measured + time.Duration(len(res.Points))*3*time.Second
		if cost > 150*time.Second {
			t.Errorf("the search measured for %s over %d points (%s with pauses), want within 150 s\n%s", measured, len(res.Points), cost, table)
		}
		if !regexp.MustCompile(`\[\d+ samples`).MatchString(table) {
			t.Errorf("the sweep table does not say how many samples decided each point:\n%s", table)
		}
		t.Logf("SLO search: %v req/s in %d points, %s measured", got, len(res.Points), measured.Round(time.Second))

		// The answer is a rate the server sustains: strictly below the
		// completion capacity the ramp measured (the search once answered
		// the saturated throughput itself, 152.7 req/s, after a point of 520
		// requests whose queue had no time to grow), and a run four times as
		// long as a point's minimum holds the SLO at it.
		saturation, _, _ := searchNumbers(t, table)
		if !(got < saturation) {
			t.Errorf("the answer %v req/s is not below the completion capacity %v req/s", got, saturation)
		}
		if got < 65 {
			// Failed above already; 2000 requests at a rate the search
			// got wrong take 2000/got seconds of the bubble's clock and
			// as many real requests.
			return
		}
		s := simBenchSpec(url, 32)
		s.RequestRate, s.NumPrompts = got, 2000
		s.PercentileMetrics, _ = bench.ParsePercentileMetrics("ttft")
		s.MetricPercentiles, _ = bench.ParseMetricPercentiles("99")
		ctx := context.Background()
		p, err := Prepare(ctx, s, srv.env)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(ctx, srv.env)
		if err != nil {
			t.Fatalf("bench at the answer: %v", err)
		}
		if p99 := out.Summary.TTFT.P99; !(p99 > 0 && p99 <= 200) || out.Summary.Completed != 2000 {
			t.Errorf("2000 requests at the answer, %v req/s: p99 TTFT %v ms, %v completed; want within 200 ms", got, p99, out.Summary.Completed)
		}
	})
}

// TestSLOSearchSlowServerBudget: a server that completes about one
// request every 1.85 s (one slot, 300 ms TTFT, 31 × 50 ms decode steps:
// 0.54 req/s) cannot be searched to 10% in a 20 s budget; the search ends
// within it and states only the bracket its points measured.
func TestSLOSearchSlowServerBudget(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 300*time.Millisecond, 50*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 1
	synctest.Test(t, func(t *testing.T) {
		srv := serveSim(t, cfg, nil)
		defer srv.close()
		url := srv.url
		// The idle wait is on: in the bubble the server's gauges are not
		// read (simBenchSpec), so each wait sends a probe request, 1.85 s
		// of the budget. A point the wait and the warm-up leave no time
		// to end a request measures nothing, and must not be scored as
		// a failure or named in the answer.
		start := time.Now()
		res, table := runSearchResult(t, srv, searchSpec(t, url, 32, 0, "ttft:p99<=1s", func(w *SweepSpec) { w.Budget, w.Cooldown = 20*time.Second, 0 }))
		// The bubble's clock is the search's alone: the whole search,
		// its ready check and tokenizer load included, ends within the
		// budget, and so do the points' measured times.
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("the search took %s, over its 20 s budget", took)
		}
		var measured time.Duration
		held, failed := 0.0, 0.0
		for _, p := range res.Points {
			measured += time.Duration(p.Summary.Duration * float64(time.Second))
			if p.Info.Role != "" {
				continue
			}
			v := p.Info.Value
			if len(p.Info.SLO) > 0 && p.Info.Passed() { // as the record's "pass" says
				held = max(held, v)
			} else if failed == 0 || v < failed {
				failed = v
			}
		}
		if measured > 20*time.Second {
			t.Errorf("the points measured for %s, over the 20 s budget", measured)
		}
		// The requests the budget and the point caps cut in flight are
		// ours: canceled, never timeouts, not failed, out of the error
		// share, and the table says how many.
		cut := 0
		for _, p := range res.Points {
			s := p.Summary
			cut += s.Cut()
			if n := s.Outcomes[prober.OutcomeTimeout]; n > 0 {
				t.Errorf("point %d: %d requests cut as timeouts", p.Info.Index, n)
			}
			if s.ServerFailed() != 0 {
				t.Errorf("point %d: %d failed on a server that fails nothing", p.Info.Index, s.ServerFailed())
			}
			for _, v := range p.Info.SLO {
				if v.Metric == bench.MetricErrors && (v.Samples != s.Requests-s.Cut() || v.ValuePercent != 0 || !v.Pass) {
					t.Errorf("point %d: errors verdict %+v, want 0%% of its %d uncut requests", p.Info.Index, v, s.Requests-s.Cut())
				}
			}
			if n := s.Cut(); n > 0 && !strings.Contains(table, fmt.Sprintf("%d cut", n)) {
				t.Errorf("point %d cut %d requests; the table does not say so:\n%s", p.Info.Index, n, table)
			}
		}
		if cut == 0 {
			t.Errorf("no point was cut in flight: the test no longer measures a cut\n%s", table)
		}
		if strings.Contains(table, "Highest request rate meeting the SLO") {
			// An answer within budget is fine too; it must be a point's.
			return
		}
		if !strings.Contains(table, "budget (--slo-budget, slo_budget in a bench window: 20s) ran out") {
			t.Fatalf("no budget line in:\n%s", table)
		}
		if held > 0 && !strings.Contains(table, "The SLO held at "+bench.FormatValue(bench.ByRequestRate, held)) {
			t.Errorf("the answer does not state the highest point that held (%v):\n%s", held, table)
		}
		if held == 0 && !strings.Contains(table, "No point measured held the SLO") {
			t.Errorf("the answer claims a rate no point held:\n%s", table)
		}
		if failed == 0 && !strings.Contains(table, "no point measured failed it") {
			t.Errorf("the answer claims a rate no point failed:\n%s", table)
		}
		t.Logf("slow server: %d points, %s measured\n%s", len(res.Points), measured.Round(time.Second), table)
	})
}

// TestSLOSearchBoundedByOurLimit: a bench window paces every ramp step at
// its bench.max_request_rate and searches no higher (slo_max defaults to
// it). Against a server with far more room (256 slots) the ramp's
// "completion capacity" is that rate, ours; the answer must say the SLO
// held up to our limit, at least, and not give a rate below it as the
// server's capacity.
func TestSLOSearchBoundedByOurLimit(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 256
	synctest.Test(t, func(t *testing.T) {
		srv := serveSim(t, cfg, nil)
		defer srv.close()
		s := searchSpec(t, srv.url, 8, 0, "ttft:p99<=500ms", func(w *SweepSpec) { w.Cooldown, w.Max = 0, 20 })
		s.RequestRate = 20
		res, table := runSearchResult(t, srv, s)
		a := res.SearchAnswer
		if a.BoundedBy != bench.BoundedRequestRate || a.BoundLimit != 20 || a.Capacity != 20 || !a.LowerBound() {
			t.Errorf("bounded by %q at %v, capacity %v; want max_request_rate at 20, capacity 20\n%s", a.BoundedBy, a.BoundLimit, a.Capacity, table)
		}
		if !strings.Contains(table, "Request rate meeting the SLO: at least 20 req/s, bounded by the request rate limit, 20 req/s") {
			t.Errorf("the answer does not name the limit that bounded it:\n%s", table)
		}
		if strings.Contains(table, "Highest request rate meeting the SLO") {
			t.Errorf("a bounded answer is stated as the server's capacity:\n%s", table)
		}
	})
}

// TestSLOSearchSteadyErrors: a server that answers 5% of its requests
// with a 503 at every load, one at a time too. The search once walked
// down to a rate whose few requests happened to avoid them (1.8 req/s
// against a completion capacity of 88). Now it names the errors as
// independent of load and answers what the latency objective allows:
// a rate near the completion capacity, not a small fraction of it.
func TestSLOSearchSteadyErrors(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 8
	cfg.FaultRates = map[simulator.Fault]float64{simulator.Fault503: 0.05}
	cfg.Seed = 3
	synctest.Test(t, func(t *testing.T) {
		srv := serveSim(t, cfg, nil)
		defer srv.close()
		s := searchSpec(t, srv.url, 32, 0, "ttft:p99<=200ms", func(w *SweepSpec) { w.Cooldown = 0 })
		s.WarmupRequests = 0 // a failed warmup ends the search (see TestSLOSearchFailuresCount)
		res, table := runSearchResult(t, srv, s)
		e := res.SteadyErrors
		if e == nil || e.Outcomes["http_5xx"] == 0 || !(e.Percent > 1 && e.Percent < 15) {
			t.Fatalf("steady errors %+v; want about 5%% http_5xx\n%s", e, table)
		}
		if !regexp.MustCompile(`[\d.]+% of requests fail at every rate tried \(http_5xx: \d+\), independent of load`).MatchString(table) {
			t.Errorf("the answer does not name the load-independent errors:\n%s", table)
		}
		if a := res.SearchAnswer; !(a.Capacity > a.Saturation/2 && a.Capacity < a.Saturation) {
			t.Errorf("answer %v req/s against a completion capacity of %v: want more than half of it, below it\n%s", a.Capacity, a.Saturation, table)
		}
		if !strings.Contains(table, "Highest request rate meeting the latency objectives") {
			t.Errorf("the answer does not say which objectives it holds:\n%s", table)
		}
	})
}

// TestSLOSearchBoundedByPrompts: with 40 prompts a point, the ramp
// cannot fill 32 slots twice, so it stops at 16 in flight while the
// throughput of a server with 256 slots still rises: the completion
// capacity it measured is the prompt count's, and the answer below it
// is a lower bound that names num_prompts, not the server's capacity.
func TestSLOSearchBoundedByPrompts(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 256
	synctest.Test(t, func(t *testing.T) {
		srv := serveSim(t, cfg, nil)
		defer srv.close()
		res, table := runSearchResult(t, srv, searchSpec(t, srv.url, 8, 40, "ttft:p99<=500ms", func(w *SweepSpec) { w.Cooldown = 0 }))
		a := res.SearchAnswer
		if a.RampStop != rampPromptsWhy(40, 32) || a.PeakConcurrency != 16 {
			t.Errorf("the ramp stopped at %d in flight (%s), want at 16 for want of prompts\n%s", a.PeakConcurrency, a.RampStop, table)
		}
		if a.BoundedBy != bench.BoundedPrompts || a.BoundLimit != 40 || !a.LowerBound() || !(a.Capacity > 0) {
			t.Errorf("bounded by %q at %v, capacity %v; want num_prompts at 40\n%s", a.BoundedBy, a.BoundLimit, a.Capacity, table)
		}
		if !strings.Contains(table, "Request rate meeting the SLO: at least ") || !strings.Contains(table, "bounded by the prompt count, 40 (--num-prompts") {
			t.Errorf("the answer does not name the prompt count that bounded it:\n%s", table)
		}
		if strings.Contains(table, "Highest request rate meeting the SLO") {
			t.Errorf("a bounded answer is stated as the server's capacity:\n%s", table)
		}
	})
}

// TestSLOSearchSteadyState: a rate above what the server sustains fails
// its point even where the SLO is so loose (TTFT p90 within 60 s) that
// the percentiles of what completed hold: its queue kept growing, and
// the point ends as soon as that shows, after a few hundred requests
// rather than its 30 s of them. The simulator's 8 slots complete about
// 8/(20 ms + 7 × 2 ms) = 235 req/s; the search starts at 400.
func TestSLOSearchSteadyState(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	cfg.MaxRunningRequests = 8
	synctest.Test(t, func(t *testing.T) {
		counter := &startLoad{windows: map[int64]int{}}
		srv := serveSim(t, cfg, func(h http.Handler) http.Handler { counter.next = h; return counter })
		defer srv.close()
		res, table := runSearchResult(t, srv, searchSpec(t, srv.url, 8, 0, "ttft:p90<=60s", func(w *SweepSpec) {
			w.Cooldown, w.Start, w.MaxPoints = 0, 400, 4
		}))
		first := res.Points[0]
		if first.Info.Value != 400 || first.Info.Passed() || !(first.Info.Growing || first.Info.Ended == bench.EndedOverSaturated) {
			t.Fatalf("the point at 400 req/s: passed %v, growing %v, ended %q; want it failed on its growing queue\n%s",
				first.Info.Passed(), first.Info.Growing, first.Info.Ended, table)
		}
		if !bench.Passed(first.Info.SLO) {
			t.Errorf("the point at 400 req/s broke the loose SLO itself: the test no longer isolates the steady state\n%s", table)
		}
		if n := first.Summary.Requests; n > 1000 {
			t.Errorf("the over-saturated point sent %d requests before it stopped; want it stopped once its queue showed", n)
		}
		if a := res.SearchAnswer; a.Capacity > 235 || a.Capacity == 0 || !a.BrokeGrowing {
			t.Errorf("answer %v req/s, broke on its steady state %v; want one the server sustains (under 235), bounded by a growing queue\n%s",
				a.Capacity, a.BrokeGrowing, table)
		}
		t.Logf("the point at 400 req/s stopped after %d requests\n%s", first.Summary.Requests, table)
	})
}
