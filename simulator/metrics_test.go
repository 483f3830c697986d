package simulator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// seq returns the token ids from, from+1, ..., from+n-1.
func seq(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func TestPrefixCache(t *testing.T) {
	shared := seq(100, 40) // two full 16-token blocks and 8 tokens
	for _, tc := range []struct {
		name      string
		blockSize int
		capacity  int
		prompts   [][]int
		want      []int
	}{
		{"first sight misses", 16, 100, [][]int{seq(0, 64)}, []int{0}},
		{"same prompt: all but the last block", 16, 100, [][]int{seq(0, 64), seq(0, 64)}, []int{0, 48}},
		{"same prompt one token longer: all four blocks", 16, 100, [][]int{seq(0, 64), seq(0, 65)}, []int{0, 64}},
		{"shared prefix, own suffix: whole shared blocks", 16, 100,
			[][]int{append(slices.Clone(shared), seq(1000, 30)...), append(slices.Clone(shared), seq(2000, 30)...)}, []int{0, 32}},
		{"a prefix differing in the first token shares nothing", 16, 100, [][]int{seq(0, 64), append([]int{7}, seq(1, 63)...)}, []int{0, 0}},
		{"shorter than a block never hits", 16, 100, [][]int{seq(0, 15), seq(0, 15)}, []int{0, 0}},
		{"token granular (sglang): all but the last token", 1, 1000, [][]int{seq(0, 40), seq(0, 40)}, []int{0, 39}},
		{"token granular: the common prefix", 1, 1000, [][]int{seq(0, 40), append(seq(0, 25), 9999)}, []int{0, 25}},
		{"LRU eviction drops the oldest blocks", 16, 4, [][]int{seq(0, 64), seq(500, 64), seq(0, 64)}, []int{0, 0, 0}},
		{"eviction drops a prompt's deepest block, keeping its prefix", 16, 5, [][]int{seq(0, 80), seq(500, 16), seq(0, 80)}, []int{0, 0, 64}},
		{"a hit refreshes its blocks", 16, 6, [][]int{seq(0, 48), seq(0, 48), seq(500, 32), seq(0, 48)}, []int{0, 32, 0, 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newPrefixCache(tc.blockSize, tc.capacity)
			var got []int
			for _, p := range tc.prompts {
				got = append(got, c.admit(p))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("hits = %v, want %v", got, tc.want)
			}
			if c.lru.Len() > tc.capacity || len(c.index) != c.lru.Len() {
				t.Errorf("cache holds %d blocks (index %d), capacity %d", c.lru.Len(), len(c.index), tc.capacity)
			}
			c.reset()
			if h := c.admit(tc.prompts[0]); h != 0 {
				t.Errorf("after reset the first prompt hit %d tokens", h)
			}
		})
	}
}

func TestPyFloat(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables: constants would add exactly
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0.0"}, {1, "1.0"}, {0.25, "0.25"}, {2560, "2560.0"}, {0.001, "0.001"},
		{1e-05, "1e-05"}, {123456, "123456.0"}, {1234567, "1.234567e+06"}, {1.7e9, "1.7e+09"},
		{math.Inf(1), "+Inf"}, {tenth + fifth, "0.30000000000000004"},
	} {
		if got := pyFloat(tc.v); got != tc.want {
			t.Errorf("pyFloat(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestHistogramBuckets(t *testing.T) {
	h := newHistogram([]float64{0, 0.1, 1})
	for _, v := range []float64{0, 0.1, 0.05, 1, 2} {
		h.observe(v)
	}
	// le is inclusive: 0 in the 0 bucket, 0.1 in 0.1's, 1 in 1's, 2 in +Inf.
	if want := []uint64{1, 2, 1, 1}; !slices.Equal(h.counts, want) {
		t.Errorf("counts = %v, want %v", h.counts, want)
	}
	// sglang's inter-token latency: 4 tokens of a 0.2 s chunk land in
	// 0.05's bucket, the sum gets 0.2 once.
	h = newHistogram([]float64{0.01, 0.1, 1})
	h.observeN(0.2/4, 4, 0.2)
	if want := []uint64{0, 4, 0, 0}; !slices.Equal(h.counts, want) || h.sum != 0.2 {
		t.Errorf("counts = %v sum %v, want %v and 0.2", h.counts, h.sum, want)
	}
}

func getMetrics(t *testing.T, c *http.Client, base string) (string, *servermetrics.Snapshot) {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	s, err := servermetrics.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, b)
	}
	return string(b), s
}

// TestMetricsExposition checks each name set's HELP and TYPE lines and
// label sets against the engine's source, that servermetrics reads every
// family it serves (no unknown name), and that after three sequential
// requests each histogram's count and sum, and each counter, equal the
// requests' ground truth.
func TestMetricsExposition(t *testing.T) {
	for _, tc := range []struct {
		names MetricsNames
		lines []string // from vllm/v1/metrics/loggers.py and sglang's collector.py
		kinds map[servermetrics.Kind]string
	}{
		{MetricsVLLM, []string{
			"# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n" +
				`vllm:num_requests_running{engine="0",model_name="servingprobe-sim"} 0.0`,
			"# HELP vllm:prefix_cache_queries Prefix cache queries, in terms of number of queried tokens.\n# TYPE vllm:prefix_cache_queries counter\n",
			"# TYPE vllm:time_to_first_token_seconds histogram\n" +
				`vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="servingprobe-sim"} `,
			`vllm:request_queue_time_seconds_bucket{engine="0",le="7680.0",model_name="servingprobe-sim"} 3.0`,
			"# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n",
		}, map[servermetrics.Kind]string{
			servermetrics.TTFT: "vllm:time_to_first_token_seconds", servermetrics.Queue: "vllm:request_queue_time_seconds",
			servermetrics.Prefill: "vllm:request_prefill_time_seconds", servermetrics.Decode: "vllm:request_decode_time_seconds",
			servermetrics.E2E: "vllm:e2e_request_latency_seconds", servermetrics.PerToken: "vllm:inter_token_latency_seconds",
		}},
		{MetricsSGLang, []string{
			"# HELP sglang:num_running_reqs The number of running requests.\n# TYPE sglang:num_running_reqs gauge\n" +
				`sglang:num_running_reqs{engine_type="unified",model_name="servingprobe-sim",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 0.0`,
			"# HELP sglang:cached_tokens Number of cached prompt tokens.\n# TYPE sglang:cached_tokens counter\n" +
				`sglang:cached_tokens_total{engine_type="unified",model_name="servingprobe-sim"} `,
			`sglang:queue_time_seconds_bucket{engine_type="unified",le="0.0",model_name="servingprobe-sim",moe_ep_rank="0",pp_rank="0",tp_rank="0"} `,
			"# HELP sglang:e2e_request_latency_seconds Histogram of End-to-end request latency in seconds\n",
		}, map[servermetrics.Kind]string{
			servermetrics.TTFT: "sglang:time_to_first_token_seconds", servermetrics.Queue: "sglang:queue_time_seconds",
			servermetrics.E2E: "sglang:e2e_request_latency_seconds", servermetrics.PerToken: "sglang:inter_token_latency_seconds",
		}},
	} {
		t.Run(string(tc.names), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MetricsNames = tc.names
			cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 2*time.Millisecond, 0, time.Millisecond, 0
			cfg.TokensPerChunk = 2
			s := newServer(t, cfg)
			ts := startLoopback(t, s)
			start, _ := getMetrics(t, ts.Client(), ts.URL)
			if strings.Contains(start, "_bucket") && !strings.Contains(start, "} 0.0\n") {
				t.Errorf("a fresh server's histograms are not empty:\n%s", start)
			}
			// The second and third prompts repeat the first: prefix hits.
			for range 3 {
				body := `{"prompt":[` + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(seq(10, 50))), ","), "[]") + `],"max_tokens":7,"ignore_eos":true,"stream":true}`
				readAll(t, post(t, ts.Client(), ts.URL+"/v1/completions", body))
			}
			text, snap := getMetrics(t, ts.Client(), ts.URL)
			for _, l := range tc.lines {
				if !strings.Contains(text, l) {
					t.Errorf("exposition lacks %q:\n%s", l, text)
				}
			}
			if len(snap.Unknown) != 0 {
				t.Errorf("servermetrics does not read %v", snap.Unknown)
			}
			truths := s.Truths()
			if len(truths) != 3 {
				t.Fatalf("%d truths, want 3", len(truths))
			}
			// The truths, reduced here on their own.
			var ttft, queue, prefill, decode, e2e, itlSum float64
			var prompt, gen, cached, itlCount int
			for _, tr := range truths {
				var first, last, prev time.Time
				for _, c := range tr.Chunks {
					if c.Tokens == 0 {
						continue
					}
					gen += c.Tokens
					if first.IsZero() {
						first = c.At
					} else {
						itlSum += c.At.Sub(prev).Seconds()
						if tc.names == MetricsSGLang {
							itlCount += c.Tokens
						} else {
							itlCount++
						}
					}
					prev, last = c.At, c.At
				}
				ttft += first.Sub(tr.Arrived).Seconds()
				queue += tr.Admitted.Sub(tr.Arrived).Seconds()
				prefill += first.Sub(tr.Admitted).Seconds()
				decode += last.Sub(first).Seconds()
				e2e += last.Sub(tr.Arrived).Seconds()
				prompt += tr.PromptTokens
				cached += tr.CachedTokens
			}
			if gen != 21 || prompt != 150 {
				t.Fatalf("truths hold %d generated and %d prompt tokens, want 21 and 150", gen, prompt)
			}
			// vLLM: blocks of 16, at most (50-1)/16 = 3 of them; sglang:
			// token by token, at most 49.
			wantCached := map[MetricsNames]int{MetricsVLLM: 2 * 48, MetricsSGLang: 2 * 49}[tc.names]
			if cached != wantCached {
				t.Errorf("truths' cached tokens %d, want %d", cached, wantCached)
			}
			sums := map[servermetrics.Kind]float64{
				servermetrics.TTFT: ttft, servermetrics.Queue: queue, servermetrics.Prefill: prefill,
				servermetrics.Decode: decode, servermetrics.E2E: e2e, servermetrics.PerToken: itlSum,
			}
			for k, name := range tc.kinds {
				h, ok := snap.Histograms[name]
				want := 3.0
				if k == servermetrics.PerToken {
					want = float64(itlCount)
				}
				// The server sums each request's gaps, then adds them; the
				// truths here are summed gap by gap: the same numbers in
				// another order, equal to rounding.
				if !ok || h.Count != want || math.Abs(h.Sum-sums[k]) > 1e-12 {
					t.Errorf("%s: count %v sum %v, want %v and %v (truth)", name, h.Count, h.Sum, want, sums[k])
				}
			}
			if len(snap.Histograms) != len(tc.kinds) {
				t.Errorf("%d histograms read, want %d", len(snap.Histograms), len(tc.kinds))
			}
			p := string(tc.names) + ":"
			wantCounters := map[string]float64{p + "prompt_tokens": 150, p + "generation_tokens": 21}
			if tc.names == MetricsVLLM {
				wantCounters["vllm:prefix_cache_queries"] = 150
				wantCounters["vllm:prefix_cache_hits"] = float64(cached)
				wantCounters["vllm:num_preemptions"] = 0
			} else {
				wantCounters["sglang:cached_tokens"] = float64(cached)
				wantCounters["sglang:num_retracted_requests"] = 0
			}
			// The completed-request counter, which live headroom reads.
			if n, _, ok := servermetrics.CompletedRequests(snap); !ok || n != 3 {
				t.Errorf("CompletedRequests = %v (stated %v), want 3", n, ok)
			}
			for n, v := range wantCounters {
				if got, ok := snap.Counters[n]; !ok || got != v {
					t.Errorf("counter %s = %v (present %v), want %v", n, got, ok, v)
				}
			}
			if g := servermetrics.GaugeValues(snap); g[servermetrics.Running] != 0 || g[servermetrics.Waiting] != 0 || g[servermetrics.KVUsage] != 0 {
				t.Errorf("gauges after the requests = %v, want zeros", g)
			}
			sc := s.Scrapes()
			if len(sc) != 2 {
				t.Errorf("%d scrapes logged, want 2", len(sc))
			}
			// A flushed cache hits nothing.
			readAll(t, post(t, ts.Client(), ts.URL+"/flush_cache", ""))
			body := `{"prompt":[` + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(seq(10, 50))), ","), "[]") + `],"max_tokens":1}`
			readAll(t, post(t, ts.Client(), ts.URL+"/v1/completions", body))
			if all := s.Truths(); all[len(all)-1].CachedTokens != 0 {
				t.Errorf("after /flush_cache the prompt hit %d tokens", all[len(all)-1].CachedTokens)
			}
		})
	}
}

// TestMetricsGaugesLive holds one request in its first token's wait under
// --sim.max-running-requests 1 and queues a second: /metrics reads one
// running, one waiting and the first request's KV blocks, then zeros once
// both are gone.
func TestMetricsGaugesLive(t *testing.T) {
	cfg := fastConfig()
	cfg.TTFT = time.Hour // held until cancelled
	cfg.MaxRunningRequests = 1
	cfg.KVCacheTokens = 1600
	s := newServer(t, cfg)
	ts := startLoopback(t, s)
	// Each request has its own context, so that the waiting one can leave
	// before the running one frees its slot.
	var ctxs [2]context.Context
	var cancels [2]context.CancelFunc
	var done [2]chan struct{}
	for i := range 2 {
		ctxs[i], cancels[i] = context.WithCancel(t.Context())
		done[i] = make(chan struct{})
		ctx := ctxs[i]
		if i == 1 {
			// The second is sent once the first holds the slot.
			for deadline := time.Now().Add(30 * time.Second); s.running.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		go func() {
			defer close(done[i])
			// 50 prompt ids + 30 output tokens = 80 tokens: 5 blocks of 16.
			body := `{"prompt":[` + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(seq(10, 50))), ","), "[]") + `],"max_tokens":30,"ignore_eos":true,"stream":true}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(body))
			if resp, err := ts.Client().Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	var g map[servermetrics.Kind]float64
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, snap := getMetrics(t, ts.Client(), ts.URL)
		g = servermetrics.GaugeValues(snap)
		if g[servermetrics.Waiting] == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := map[servermetrics.Kind]float64{servermetrics.Running: 1, servermetrics.Waiting: 1, servermetrics.KVUsage: 80.0 / 1600}
	for k, v := range want {
		if g[k] != v {
			t.Errorf("%s = %v, want %v", k, g[k], v)
		}
	}
	cancels[1]()
	<-done[1]
	// The client returns before the server has seen its connection close:
	// wait for the server to drop the waiting request, or freeing the slot
	// next could admit it first.
	for deadline := time.Now().Add(30 * time.Second); s.waiting.Load() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := s.waiting.Load(); n != 0 {
		t.Fatalf("the server still holds %d waiting requests after the client left", n)
	}
	cancels[0]()
	<-done[0]
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, snap := getMetrics(t, ts.Client(), ts.URL)
		g = servermetrics.GaugeValues(snap)
		if g[servermetrics.Running]+g[servermetrics.Waiting] == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if g[servermetrics.Running] != 0 || g[servermetrics.Waiting] != 0 || g[servermetrics.KVUsage] != 0 {
		t.Errorf("gauges after the clients left = %v, want zeros", g)
	}
	// Neither request sent a token, the second never got a slot: the queue
	// time of the first is all the histograms hold.
	_, snap := getMetrics(t, ts.Client(), ts.URL)
	if h := snap.Histograms["vllm:request_queue_time_seconds"]; h.Count != 1 {
		t.Errorf("queue observations %v, want 1 (the admitted request)", h.Count)
	}
	if h := snap.Histograms["vllm:time_to_first_token_seconds"]; h.Count != 0 {
		t.Errorf("TTFT observations %v, want 0", h.Count)
	}
}

// TestMetricsLabelEscaping: a label value (the model name) with a quote,
// a backslash, a newline, a tab and non-ASCII text reads back whole
// through Prometheus's own text parser.
func TestMetricsLabelEscaping(t *testing.T) {
	const name = "a\"b\\c\nd\te é"
	var b bytes.Buffer
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	sample(&b, "vllm:num_requests_running", [][2]string{{"model_name", name}}, 1)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatalf("%v in %q", err, b.String())
	}
	f := fams["vllm:num_requests_running"]
	if f == nil || len(f.Metric) != 1 || f.Metric[0].Label[0].GetValue() != name {
		t.Errorf("parsed %v, want model_name %q", f, name)
	}
}
