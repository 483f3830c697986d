package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/simulator"
)

// serverLatency is one histogram of the JSONL's server block.
type serverLatency struct {
	Metric string  `json:"metric"`
	Count  float64 `json:"count"`
	Mean   float64 `json:"mean"`
	P50    float64 `json:"p50"`
	P50B   struct {
		Lower float64  `json:"lower"`
		Upper *float64 `json:"upper"`
	} `json:"p50_bucket"`
	P90B struct {
		Lower float64  `json:"lower"`
		Upper *float64 `json:"upper"`
	} `json:"p90_bucket"`
	P99B struct {
		Lower float64  `json:"lower"`
		Upper *float64 `json:"upper"`
	} `json:"p99_bucket"`
}

// TestBenchServerMetricsSimulator runs bench against the built-in
// simulator, once with each name set, and holds every number of the
// Server metrics block to the simulator's ground truth (its per-request
// truths and the gauges each read of /metrics served):
//
//   - one running slot (--sim.max-running-requests 1) under four
//     concurrent clients: the requests queue at the server, one running
//     and three waiting, and each is admitted only once the one before
//     has sent its last token;
//   - the generated-shared-prefix dataset: two groups of four prompts
//     sharing a system prompt, so the prefix cache hits;
//   - each histogram's count is the requests' (or the gaps') and its mean
//     the truths' mean, in the JSONL and, to two decimals, in the table;
//     each percentile's bucket holds the truths' own quantile;
//   - the token counters equal the truths' sums and bench's totals, the
//     prefix-cache counters the truths' queries and hits;
//   - the gauge peaks and means are those of the reads the block used.
func TestBenchServerMetricsSimulator(t *testing.T) {
	for _, tc := range []struct {
		names   simulator.MetricsNames
		backend string
		kinds   []string // the JSONL's latency keys the engine has
	}{
		{simulator.MetricsVLLM, "vllm", []string{"ttft", "queue", "prefill", "decode", "e2e", "per_token"}},
		{simulator.MetricsSGLang, "sglang", []string{"ttft", "queue", "e2e", "per_token"}},
	} {
		t.Run(string(tc.names), func(t *testing.T) {
			cfg := simulator.DefaultConfig()
			cfg.MetricsNames = tc.names
			cfg.MaxRunningRequests = 1
			// About 0.4 s a request, so that the run spans several of
			// bench's one-second gauge reads while three requests wait.
			cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 20*time.Millisecond, 0, 25*time.Millisecond, 0
			cfg.TokensPerChunk = 2 // sglang counts a chunk's tokens, vLLM its gap
			sim, base := serveSimulator(t, cfg)

			out := filepath.Join(t.TempDir(), "out.jsonl")
			code, stdout, stderr := runCLI(t, "bench", "--backend", tc.backend, "--base-url", base,
				"--dataset-name", "generated-shared-prefix", "--tokenizer", "../../tokenizer/testdata/qwen3",
				"--gsp-num-groups", "2", "--gsp-prompts-per-group", "4", "--gsp-system-prompt-len", "200",
				"--gsp-question-len", "20", "--gsp-output-len", "32",
				"--request-rate", "inf", "--max-concurrency", "4", "--warmup-requests", "0",
				"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10")
			if code != 0 {
				t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			t.Logf("table:\n%s", stdout)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Completed         int `json:"completed"`
				TotalInputTokens  int `json:"total_input_tokens"`
				TotalOutputTokens int `json:"total_output_tokens"`
				Servingprobe      struct {
					Server map[string]json.RawMessage `json:"server"`
				} `json:"servingprobe"`
			}
			if err := json.Unmarshal([]byte(strings.ReplaceAll(string(b), "Infinity", "null")), &rec); err != nil {
				t.Fatalf("record: %v\n%s", err, b)
			}
			sv := rec.Servingprobe.Server
			num := func(key string) float64 {
				t.Helper()
				var v float64
				if err := json.Unmarshal(sv[key], &v); err != nil {
					t.Fatalf("server.%s = %s: %v", key, sv[key], err)
				}
				return v
			}

			// The ground truth: with no warmup, every request the
			// simulator served is one of the run's.
			truths := sim.Truths()
			if rec.Completed != 8 || len(truths) != 8 {
				t.Fatalf("%d completed, %d truths; want 8 of each", rec.Completed, len(truths))
			}
			values := map[string][]float64{}
			var prompt, generated, cached int
			for _, tr := range truths {
				var first, last, prev time.Time
				for _, c := range tr.Chunks {
					if c.Tokens == 0 {
						continue
					}
					if first.IsZero() {
						first = c.At
					} else {
						gap := c.At.Sub(prev).Seconds()
						if tc.names == simulator.MetricsSGLang {
							// sglang: the chunk's tokens, each gap/n.
							for range c.Tokens {
								values["per_token"] = append(values["per_token"], gap/float64(c.Tokens))
							}
						} else {
							values["per_token"] = append(values["per_token"], gap)
						}
					}
					prev, last = c.At, c.At
				}
				values["ttft"] = append(values["ttft"], first.Sub(tr.Arrived).Seconds())
				values["queue"] = append(values["queue"], tr.Admitted.Sub(tr.Arrived).Seconds())
				values["prefill"] = append(values["prefill"], first.Sub(tr.Admitted).Seconds())
				values["decode"] = append(values["decode"], last.Sub(first).Seconds())
				values["e2e"] = append(values["e2e"], last.Sub(tr.Arrived).Seconds())
				prompt += tr.PromptTokens
				generated += tr.CompletionTokens
				cached += tr.CachedTokens
			}

			// Queueing under one slot: admissions are serial, each after
			// the previous request's last token, and all but the first
			// request waited.
			byAdmission := slices.Clone(truths)
			slices.SortFunc(byAdmission, func(a, b simulator.Truth) int { return a.Admitted.Compare(b.Admitted) })
			waited := 0
			for i, tr := range byAdmission {
				if i > 0 {
					prevLast := byAdmission[i-1].Chunks[len(byAdmission[i-1].Chunks)-1].At
					for _, c := range byAdmission[i-1].Chunks {
						if c.Tokens > 0 {
							prevLast = c.At
						}
					}
					if tr.Admitted.Before(prevLast) {
						t.Errorf("request %d admitted before the one ahead sent its last token", i)
					}
				}
				if tr.Admitted.Sub(tr.Arrived) > 100*time.Millisecond {
					waited++
				}
			}
			if waited < 4 {
				t.Errorf("%d requests queued at the server over 100 ms, want at least 4 of 8 under one slot", waited)
			}

			if got := strings.Trim(string(sv["engine"]), `"`); got != string(tc.names) {
				t.Errorf("engine %q, want %q", got, tc.names)
			}
			for _, k := range tc.kinds {
				var l serverLatency
				if err := json.Unmarshal(sv[k+"_ms"], &l); err != nil || l.Metric == "" {
					t.Errorf("server.%s_ms = %s: %v", k, sv[k+"_ms"], err)
					continue
				}
				vs := values[k]
				var sum float64
				for _, v := range vs {
					sum += v
				}
				wantMean := sum / float64(len(vs)) * 1000
				// The server sums per request, then over requests: the
				// same numbers in another order, equal to rounding.
				if l.Count != float64(len(vs)) || math.Abs(l.Mean-wantMean) > 1e-9 {
					t.Errorf("%s: count %v mean %v ms, want %d and %v ms (truth)", l.Metric, l.Count, l.Mean, len(vs), wantMean)
				}
				sorted := slices.Sorted(slices.Values(vs))
				for _, q := range []struct {
					q      float64
					lower  float64
					upper  *float64
					what   string
					tablek int
				}{{0.5, l.P50B.Lower, l.P50B.Upper, "p50", 0}, {0.9, l.P90B.Lower, l.P90B.Upper, "p90", 1}, {0.99, l.P99B.Lower, l.P99B.Upper, "p99", 2}} {
					// histogram_quantile's bucket is the one holding the
					// ceil(q·n)-th smallest observation.
					x := sorted[int(math.Ceil(q.q*float64(len(sorted))))-1] * 1000
					if x <= q.lower-1e-9 && !(q.lower == 0 && x == 0) || (q.upper != nil && x > *q.upper+1e-9) {
						t.Errorf("%s %s bucket (%v, %v] does not hold the truth's %v ms", l.Metric, q.what, q.lower, q.upper, x)
					}
				}
			}
			if len(tc.kinds) == 4 {
				for _, k := range []string{"prefill_ms", "decode_ms"} {
					if _, ok := sv[k]; ok {
						t.Errorf("sglang has no %s, the block shows one", k)
					}
				}
			}

			if prompt != rec.TotalInputTokens || generated != rec.TotalOutputTokens {
				t.Errorf("truths hold %d prompt and %d generated tokens, bench %d and %d", prompt, generated, rec.TotalInputTokens, rec.TotalOutputTokens)
			}
			if cached == 0 {
				t.Errorf("the shared-prefix prompts hit no prefix cache")
			}
			wantCounts := map[string]float64{"prompt_tokens": float64(prompt), "generation_tokens": float64(generated), "preemptions": 0}
			if tc.names == simulator.MetricsVLLM {
				wantCounts["prefix_cache_queries"], wantCounts["prefix_cache_hits"] = float64(prompt), float64(cached)
			} else {
				wantCounts["cached_tokens"] = float64(cached)
			}
			for k, v := range wantCounts {
				if got := num(k); got != v {
					t.Errorf("server.%s = %v, want %v (truth)", k, got, v)
				}
			}
			if got, want := num("prefix_cache_hit_rate"), float64(cached)/float64(prompt); got != want {
				t.Errorf("prefix cache hit rate %v, want %v", got, want)
			}

			// The gauges: the block reads /metrics at the start, each
			// second, and at the end (the last read; an earlier end read
			// that found the server still counting is not used).
			scrapes := sim.Scrapes()
			n := int(num("samples"))
			if n < 4 || len(scrapes) < n {
				t.Fatalf("%d samples from %d reads, want at least 4 samples", n, len(scrapes))
			}
			used := append(slices.Clone(scrapes[:n-1]), scrapes[len(scrapes)-1])
			gauge := func(f func(simulator.Scrape) float64) (peak, mean float64) {
				for _, s := range used {
					v := f(s)
					peak = max(peak, v)
					mean += v
				}
				return peak, mean / float64(len(used))
			}
			for _, g := range []struct {
				key string
				f   func(simulator.Scrape) float64
			}{
				{"running", func(s simulator.Scrape) float64 { return float64(s.Running) }},
				{"waiting", func(s simulator.Scrape) float64 { return float64(s.Waiting) }},
				{"kv_cache_usage", func(s simulator.Scrape) float64 { return s.KVUsage }},
			} {
				peak, mean := gauge(g.f)
				if num(g.key+"_peak") != peak || math.Abs(num(g.key+"_mean")-mean) > 1e-12 {
					t.Errorf("%s peak/mean %v/%v, want %v/%v (the reads served)", g.key, num(g.key+"_peak"), num(g.key+"_mean"), peak, mean)
				}
			}
			// One slot, four clients: a read in the middle of the run
			// finds one running and three waiting.
			if num("running_peak") != 1 || num("waiting_peak") != 3 {
				t.Errorf("running/waiting peaks %v/%v, want 1/3", num("running_peak"), num("waiting_peak"))
			}

			// The table shows the JSONL's numbers.
			rows := map[string]string{
				"Engine:":                   string(tc.names),
				"Server prompt tokens:":     fmt.Sprintf("%d (ours %d)", prompt, rec.TotalInputTokens),
				"Server generation tokens:": fmt.Sprintf("%d (ours %d)", generated, rec.TotalOutputTokens),
				"Prefix cache hit rate:":    fmt.Sprintf("%.2f%%", float64(cached)/float64(prompt)*100),
				"Running requests peak:":    "1",
				"Waiting requests peak:":    "3",
				"Preemptions:":              "0",
				"Gauge samples:":            fmt.Sprint(n),
				"KV cache usage peak/mean:": fmt.Sprintf("%.2f%% / %.2f%%", num("kv_cache_usage_peak")*100, num("kv_cache_usage_mean")*100),
			}
			names := map[string]string{"ttft": "TTFT", "queue": "queue time", "prefill": "prefill time", "decode": "decode time", "e2e": "E2E", "per_token": "per-token time"}
			for _, k := range tc.kinds {
				var l serverLatency
				_ = json.Unmarshal(sv[k+"_ms"], &l)
				rows["Server "+names[k]+" mean (ms):"] = fmt.Sprintf("%.2f", l.Mean)
			}
			for label, want := range rows {
				m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + ` +(.+?) *$`).FindStringSubmatch(stdout)
				if m == nil || m[1] != want {
					t.Errorf("table %q = %v, want %q", label, m, want)
				}
			}
			if strings.Contains(stdout, "Metrics not read:") {
				t.Errorf("the block lists metrics it does not read:\n%s", stdout)
			}
		})
	}
}
