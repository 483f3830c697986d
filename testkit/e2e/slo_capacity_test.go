//go:build capacity

package e2e

// The SLO search against a real engine is a capacity measurement: on a
// machine whose cores the rest of the test run shares, the engine's speed
// moves with whatever compiles beside it (ollama on two shared cores went
// from 5.9 to 1.0 req/s between two searches a minute apart). So this file
// builds only with -tags capacity, and `make test` runs it in a step of
// its own after the main `go test`, when nothing else of ours runs.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// burstCounter sits in front of a server and counts the generation
// requests that reach it: the most in flight at once, and the most that
// started within one 100 ms window.
type burstCounter struct {
	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	windows     map[int64]int
	maxStarts   int
	requests    int
}

func (c *burstCounter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		win := time.Now().UnixNano() / int64(100*time.Millisecond)
		c.mu.Lock()
		c.requests++
		c.inFlight++
		c.maxInFlight = max(c.maxInFlight, c.inFlight)
		c.windows[win]++
		c.maxStarts = max(c.maxStarts, c.windows[win])
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.inFlight--
			c.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// reset starts a new count (for the next search) and returns the last.
func (c *burstCounter) reset() (maxInFlight, maxStarts, requests int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maxInFlight, maxStarts, requests = c.maxInFlight, c.maxStarts, c.requests
	c.maxInFlight, c.maxStarts, c.requests, c.windows = 0, 0, 0, map[int64]int{}
	return maxInFlight, maxStarts, requests
}

// searchBudget is what the issue asks of a search against ollama: an
// answer within 5 minutes. It is the context deadline of each search (the
// process is killed at it), and the search's own --slo-budget.
const searchBudget = 5 * time.Minute

// searchPrecision is the precision the searches state. With the default
// 10%, two searches of ollama on a busy 2-core machine two minutes apart
// answered 1.334 and 1.53 req/s: each answer was its own completion
// capacity over 1.1 (1.468 and 1.683 req/s), and the capacity itself moved
// by 15% between them, with the machine's load. A capacity answer cannot
// be more precise than the server's speed is steady. The searches state
// 25% and the test holds them to it; it holds while ollama's speed stays
// within that between the searches, which on a machine shared with other
// builds it often does not (from one search to the next, one request at a
// time went from 1.27 to 2.28 req/s; docs/slo-search.md has the runs):
// hence the step of its own.
const searchPrecision = 0.25

var (
	capacityLine = regexp.MustCompile(`Completion capacity: ([\d.]+) req/s, measured by the concurrency ramp at (\d+) in flight`)
	answerLine   = regexp.MustCompile(`Highest request rate meeting the SLO: ([\d.]+) req/s \(held twice; (?:it breaks by|below the completion capacity,) ([\d.]+) req/s; the limit is within (\d+)% of the answer\)`)
)

// TestSLOSearchOllamaCapacity runs the SLO search against a real engine,
// ollama with 4 parallel slots on the CPU, twice in a row, through a proxy
// that counts what reaches ollama. Each search must answer (a rate that
// held twice, not "No stable answer") within searchBudget; the two answers'
// brackets [answer, bound) must overlap, which is what "within the stated
// precision" means for two searches of an unchanged server; ollama must
// answer a one-token generation within 5 s after each search; and ollama
// must never hold more than twice the ramp's peak concurrency (the bound
// docs/slo-search.md states), where the old all-at-once anchor put 1,250
// requests in ollama's queue within 0.13 s.
//
// The requests are as short as a generation gets (16 tokens in, 1 out) so
// that a point collects its samples in seconds even on a slow machine, and
// the objective is the TTFT's 90th percentile within 4 s: one request at a
// time takes under 1 s here even with the machine loaded (measured: 0.8 s
// median at a load average of 18 on 2 cores), so the limit is set by the
// queue, as a capacity answer should be, not by the machine's idle speed.
func TestSLOSearchOllamaCapacity(t *testing.T) {
	o := llmtest.StartOllama(t, "OLLAMA_NUM_PARALLEL=4")
	// The first request loads the model.
	if err := o.Healthy(3 * time.Minute); err != nil {
		t.Fatalf("ollama does not answer before the search: %v", err)
	}
	bin := binary(t)
	u, err := neturl.Parse(o.URL)
	if err != nil {
		t.Fatal(err)
	}
	counter := &burstCounter{windows: map[int64]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	// A point that ends cancels its requests in flight: not an error of
	// the proxy's worth a log line each.
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	proxy := httptest.NewServer(counter.wrap(rp))
	t.Cleanup(proxy.Close)

	type answer struct {
		rate, bound, capacity float64
		peak                  int
	}
	var answers []answer
	for i := 1; i <= 2; i++ {
		out := filepath.Join(t.TempDir(), "slo.jsonl")
		ctx, cancel := context.WithTimeout(context.Background(), searchBudget)
		cmd := exec.CommandContext(ctx, bin, "bench", "--backend", "vllm", "--base-url", proxy.URL, "--model", llmtest.OllamaModel,
			"--tokenizer", "../../tokenizer/testdata/qwen3", "--dataset-name", "random",
			"--random-input-len", "16", "--random-output-len", "1", "--slo", "ttft:p90<=4s",
			"--slo-precision", strconv.FormatFloat(searchPrecision, 'g', -1, 64), "--slo-budget", searchBudget.String(), "--output-file", out, "--disable-tqdm")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		runErr := cmd.Run()
		took := time.Since(start)
		ctxErr := ctx.Err()
		cancel()
		inFlight, starts, requests := counter.reset()
		table := stdout.String()
		if k := strings.LastIndex(table, "SLO search"); k > 0 {
			table = table[k:]
		}
		// Health first: a search that flooded ollama fails here too.
		if err := o.Healthy(5 * time.Second); err != nil {
			t.Errorf("search %d: ollama does not answer a probe within 5 s after the search: %v", i, err)
		}
		if ctxErr != nil {
			t.Fatalf("search %d: no answer within %s (killed); ollama held at most %d requests at once\n%s\nstderr:\n%s",
				i, searchBudget, inFlight, table, logTail(stderr.String(), 20))
		}
		if runErr != nil {
			t.Fatalf("search %d: bench failed: %v\n%s\nstderr:\n%s", i, runErr, table, logTail(stderr.String(), 20))
		}
		c := capacityLine.FindStringSubmatch(table)
		if c == nil {
			t.Fatalf("search %d: no completion capacity line:\n%s", i, table)
		}
		var ans answer
		ans.capacity, _ = strconv.ParseFloat(c[1], 64)
		ans.peak, _ = strconv.Atoi(c[2])
		// The documented bound on what reaches the server, whether the
		// search answered or not.
		if bound := 2 * ans.peak; inFlight > bound {
			t.Errorf("search %d: ollama held %d requests at once, more than twice the ramp's peak concurrency (%d)", i, inFlight, ans.peak)
		}
		a := answerLine.FindStringSubmatch(table)
		if a == nil {
			t.Fatalf("search %d: no confirmed answer after %s (ollama held at most %d requests at once, %d started in 100 ms):\n%s",
				i, took.Round(time.Second), inFlight, starts, table)
		}
		ans.rate, _ = strconv.ParseFloat(a[1], 64)
		ans.bound, _ = strconv.ParseFloat(a[2], 64)
		if !(ans.rate > 0 && ans.rate < ans.bound && ans.bound <= ans.capacity) {
			t.Errorf("search %d: answer %v req/s, bound %v, capacity %v: want 0 < answer < bound <= capacity", i, ans.rate, ans.bound, ans.capacity)
		}
		answers = append(answers, ans)
		t.Logf("search %d: %v req/s [bound %v], capacity %v req/s at %d in flight; %s; %d requests, at most %d in flight and %d started in 100 ms\n%s",
			i, ans.rate, ans.bound, ans.capacity, ans.peak, took.Round(time.Second), requests, inFlight, starts, table)
	}
	a, b := answers[0], answers[1]
	if !(a.rate < b.bound && b.rate < a.bound) {
		// The completion capacities say whether ollama itself changed
		// between the searches (its speed moves with the machine's load).
		t.Errorf("the two searches disagree beyond their stated precision: [%v, %v) and [%v, %v) req/s; ollama's completion capacity went from %v to %v req/s (%+.0f%%)",
			a.rate, a.bound, b.rate, b.bound, a.capacity, b.capacity, 100*(b.capacity/a.capacity-1))
	}
}

// logTail is the end of a log, for a failure message, with its length
// (compare_ollama_test.go has a plain lastLines).
func logTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n") + fmt.Sprintf("\n(%d lines)", len(lines))
}
