package bench

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/servermetrics"
)

func TestServerBlock(t *testing.T) {
	s := &Summary{TotalInputTokens: 100, TotalOutputTokens: 50, TTFT: Stats{Median: 55, P90: 70, P99: 80}}
	est := func(v, lo, hi float64) servermetrics.Estimate {
		return servermetrics.Estimate{Value: v, Lower: lo, Upper: hi}
	}
	s.Server = []servermetrics.Report{{
		Source: "http://h/metrics", Engine: "vllm", PrefixHitRate: 0.25,
		Latencies: []servermetrics.Latency{{Kind: servermetrics.TTFT, Metric: "vllm:time_to_first_token_seconds", Count: 10, Mean: 0.05,
			P50: est(0.05, 0.04, 0.06), P90: est(0.075, 0.06, 0.08), P99: est(0.08, 0.08, math.Inf(1))}},
		Counters: []servermetrics.Count{{Kind: servermetrics.PromptTokens, Delta: 120}, {Kind: servermetrics.GenerationTokens, Delta: 50}},
		Gauges:   []servermetrics.GaugeStats{{Kind: servermetrics.KVUsage, Peak: 0.5, Mean: 0.25, Samples: 3}},
	}, {Source: "http://other/metrics", Missing: "no answer within 2s", PrefixHitRate: math.NaN()}}
	var b bytes.Buffer
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "disagreement") {
		t.Errorf("a disagreement within the server's bucket is stated:\n%s", b.String())
	}
	for _, want := range []string{
		"Server TTFT P50/P90/P99 (ms):            50.00 / 75.00 / > 80.00",
		"  from buckets (ms):                     (40.00, 60.00] / (60.00, 80.00] / > 80.00",
		"TTFT ours - server P50/P90/P99 (ms):     5.00 / -5.00 / 0.00",
		// P90: ours (70) lies in the server's bucket (60, 80]: the -5 is
		// the interpolation's, and no disagreement is stated. P99: the
		// server's bucket lies wholly above our 80 only past its lower
		// bound, which 80 is not.
		"Token counts:                            the server counted 20 more prompt tokens",
		"Prefix cache hit rate:                   25.00%",
		"KV cache usage peak/mean:                50.00% / 25.00%",
		"Not read:                                no answer within 2s",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	rec, err := s.Record(JSONOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"server": {"source": "http://h/metrics", "engine": "vllm", "ttft_ms": {"metric": "vllm:time_to_first_token_seconds", "count": 10.0, "mean": 50.0, "p50": 50.0, "p50_bucket": {"lower": 40.0, "upper": 60.0}`,
		`"p99_bucket": {"lower": 80.0, "upper": null}`,
		`"server_more": [{"source": "http://other/metrics", "missing": "no answer within 2s"}]`,
	} {
		if !strings.Contains(string(rec), want) {
			t.Errorf("record lacks %q:\n%s", want, rec)
		}
	}
}

// TestServerBlockFirstBucket: percentiles that all fall in a histogram's
// first bucket are said to be unresolved by its layout (vLLM's queue time
// starts at 300 ms), beside the exact mean; others are not.
func TestServerBlockFirstBucket(t *testing.T) {
	est := func(v, lo, hi float64) servermetrics.Estimate {
		return servermetrics.Estimate{Value: v, Lower: lo, Upper: hi}
	}
	s := &Summary{}
	s.Server = []servermetrics.Report{{
		Source: "http://h/metrics", Engine: "vllm", PrefixHitRate: math.NaN(),
		Latencies: []servermetrics.Latency{
			{Kind: servermetrics.Queue, Count: 8, Mean: 0.0002, P50: est(0.15, 0, 0.3), P90: est(0.27, 0, 0.3), P99: est(0.297, 0, 0.3)},
			{Kind: servermetrics.E2E, Count: 8, Mean: 0.2, P50: est(0.15, 0, 0.3), P90: est(0.27, 0, 0.3), P99: est(0.4, 0.3, 0.5)},
		},
	}}
	var b bytes.Buffer
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\n  resolution: +all in the first bucket, \(0, 300\.00\] ms; the mean \(0\.20\) is exact`)
	if n := len(re.FindAllString(b.String(), -1)); n != 1 {
		t.Errorf("%d resolution rows, want 1 (queue time, not E2E whose P99 left the first bucket):\n%s", n, b.String())
	}
	if i, j := strings.Index(b.String(), "Server queue time P50"), re.FindStringIndex(b.String()); i < 0 || j == nil || j[0] < i {
		t.Errorf("the resolution row does not follow the queue time's percentiles:\n%s", b.String())
	}
	// A P50 of 150 ms beside a mean of 0.2 ms is the first bucket's
	// interpolation: it prints as the bucket, never as 150.
	for _, want := range []string{
		"Server queue time P50/P90/P99 (ms):      ≤ 300.00 / ≤ 300.00 / ≤ 300.00",
		"Server E2E P50/P90/P99 (ms):             ≤ 300.00 / ≤ 300.00 / 400.00",
		"  resolution:                            P50 in the first bucket, (0, 300.00] ms, which its buckets cannot resolve; the mean (200.00) is exact",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "150.00") {
		t.Errorf("an interpolation inside the first bucket is printed as a value:\n%s", b.String())
	}
}

// TestServerDisagreement: a server percentile is said to exceed ours only
// where its bucket lies wholly above ours; within the bucket the two
// cannot be told apart and nothing is said.
func TestServerDisagreement(t *testing.T) {
	for _, tc := range []struct {
		name string
		ours float64
		e    servermetrics.Estimate
		want bool
	}{
		{"ours inside the bucket", 413, servermetrics.Estimate{Value: 0.5, Lower: 0.25, Upper: 0.5}, false},
		{"ours at the bucket's lower bound", 250, servermetrics.Estimate{Value: 0.3, Lower: 0.25, Upper: 0.5}, false},
		{"bucket wholly above", 180, servermetrics.Estimate{Value: 0.3, Lower: 0.25, Upper: 0.5}, true},
		{"first bucket", 0.1, servermetrics.Estimate{Value: 0.15, Lower: 0, Upper: 0.3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ServerAboveOurs(tc.ours, tc.e); got != tc.want {
				t.Errorf("ServerAboveOurs(%v, %+v) = %v, want %v", tc.ours, tc.e, got, tc.want)
			}
		})
	}
	s := &Summary{TTFT: Stats{Median: 180, P90: 413, P99: 600}}
	s.Server = []servermetrics.Report{{Source: "http://h/metrics", Engine: "vllm", PrefixHitRate: math.NaN(),
		Latencies: []servermetrics.Latency{{Kind: servermetrics.TTFT, Count: 10, Mean: 0.3,
			P50: servermetrics.Estimate{Value: 0.3, Lower: 0.25, Upper: 0.5}, P90: servermetrics.Estimate{Value: 0.5, Lower: 0.25, Upper: 0.5},
			P99: servermetrics.Estimate{Value: 0.75, Lower: 0.5, Upper: 1}}}}}
	var b bytes.Buffer
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "TTFT disagreement:"); got != 1 ||
		!strings.Contains(b.String(), "the server's P50 lies in (250.00, 500.00] ms, wholly above our 180.00 ms") {
		t.Errorf("want one disagreement, the P50's (the P90's 87 ms lie within its bucket):\n%s", b.String())
	}
}

// TestServerPromptCache: llama.cpp's prompt counter leaves out the tokens
// its prompt cache served. A server count below ours is put down to the
// cache, exactly when the responses' cached tokens make up the difference,
// and the same line comes back from the record; other engines keep the
// generic line.
func TestServerPromptCache(t *testing.T) {
	report := func(engine, metric string) servermetrics.Report {
		return servermetrics.Report{Source: "http://h/metrics", Engine: engine, PrefixHitRate: math.NaN(),
			Counters: []servermetrics.Count{{Kind: servermetrics.PromptTokens, Metric: metric, Delta: 58}}}
	}
	for _, tc := range []struct {
		name   string
		report servermetrics.Report
		cache  *CacheReport
		want   string
	}{
		{"llama.cpp, cached tokens stated", report("llamacpp", "llamacpp:prompt_tokens"), &CacheReport{TotalPromptTokens: 7613, TotalCachedTokens: 7555},
			"the server counted 7555 fewer prompt tokens than our completed requests: the 7555 tokens its prompt cache served, as the responses stated; its prompt counter leaves them out"},
		{"llama.cpp, no cached count", report("llamacpp", "llamacpp:prompt_tokens"), nil,
			"the server counted 7555 fewer prompt tokens than our completed requests: its prompt counter leaves out the tokens its prompt cache served, which it does not count"},
		{"llama.cpp, cached tokens that do not add up", report("llamacpp", "llamacpp:prompt_tokens"), &CacheReport{TotalPromptTokens: 7613, TotalCachedTokens: 7000},
			"its prompt counter leaves out the tokens its prompt cache served, which it does not count"},
		{"vllm", report("vllm", "vllm:prompt_tokens"), nil,
			"the server counted 7555 fewer prompt tokens than our completed requests (other traffic, failed requests, or another tokenization)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Summary{TotalInputTokens: 7613, Server: []servermetrics.Report{tc.report}}
			if tc.cache != nil {
				s.CacheReport = tc.cache
			}
			var b bytes.Buffer
			if err := s.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Fatalf("table lacks %q:\n%s", tc.want, b.String())
			}
			rec, err := s.Record(JSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			if err := back.WriteTable(&again); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(again.String(), "fewer prompt tokens"); got != 1 || !strings.Contains(again.String(), tc.want) {
				t.Errorf("the record read back says it %d times, want once as %q:\n%s", got, tc.want, again.String())
			}
		})
	}
}
