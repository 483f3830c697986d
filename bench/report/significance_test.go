package report

import (
	"bytes"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// ciRun is a summary with intervals on its mean TTFT and mean ITL only.
func ciRun(ttft, itl float64) *bench.Summary {
	open := bench.Unknown
	lat := func(mean float64) bench.StatsCI {
		return bench.StatsCI{N: 1000, Mean: bench.Interval{Lo: mean - 2, Hi: mean + 2}, Median: open, P90: open, P95: open, P99: open}
	}
	s := &bench.Summary{Backend: "vllm", Completed: 1000, Duration: 10, RequestThroughput: 100}
	s.TTFT.Mean, s.ITL.Mean = ttft, itl
	s.CI = &bench.CI{Confidence: bench.Confidence, Method: bench.CIOrderStatistics,
		TTFT: lat(ttft), ITL: lat(itl), TPOT: lat(0), E2E: lat(0),
		RequestThroughput: open, OutputThroughput: open, TotalThroughput: open}
	return s
}

// TestCompareColoursOnlySignificant checks that the comparison colours a
// row only where bench.Compare found the difference significant, which
// one run a side never is: a TTFT 20 ms longer with ±2 ms intervals is
// shown with its change and "? (one run)", uncoloured, since one run
// cannot separate it from the drift between runs; the note says so.
func TestCompareColoursOnlySignificant(t *testing.T) {
	var b bytes.Buffer
	runs := []Run{{Name: "base", Summary: ciRun(100, 10)}, {Name: "new", Summary: ciRun(120, 10.5)}}
	if err := Write(&b, runs, Options{Now: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, tc := range []struct{ name, want string }{
		{"one run", `<tr><td>Mean TTFT \(ms\)</td><td class="num">100.00</td><td class="num">120.00</td><td class="num ">\+20.00</td><td class="num ">\+20.0%</td><td class="num">\? \(one run\)</td></tr>`},
		{"noise", `<tr><td>Mean ITL \(ms\)</td><td class="num">10.00 <span class="few"[^>]*>\(few samples\)</span></td><td class="num">10.50 <span class="few"[^>]*>\(few samples\)</span></td><td class="num ">\+0.50</td><td class="num ">\+5.0%</td><td class="num">\? \(one run\)</td></tr>`},
		{"untested", `<tr><td>Successful requests</td><td class="num">1000</td><td class="num">1000</td><td class="num ">\+0</td><td class="num ">\+0.0%</td><td></td></tr>`},
		{"note", `one run cannot separate a change from the drift between runs`},
	} {
		if !regexp.MustCompile(tc.want).MatchString(page) {
			t.Errorf("%s: the comparison lacks %s", tc.name, tc.want)
		}
	}
}

// TestCompareServerSameBucket: two runs whose server TTFT P50 estimates
// (bucket interpolations) fall in one bucket state no difference, but the
// bucket; estimates in different buckets show their difference.
func TestCompareServerSameBucket(t *testing.T) {
	withServer := func(p50, lo, hi float64) *bench.Summary {
		s := ciRun(100, 10)
		s.Server = []servermetrics.Report{{Source: "http://h/metrics", Engine: "vllm", PrefixHitRate: math.NaN(),
			Latencies: []servermetrics.Latency{{Kind: servermetrics.TTFT, Count: 10, Mean: p50,
				P50: servermetrics.Estimate{Value: p50, Lower: lo, Upper: hi}, P90: servermetrics.Estimate{Value: hi, Lower: lo, Upper: hi},
				P99: servermetrics.Estimate{Value: hi, Lower: lo, Upper: hi}}}}}
		return s
	}
	for _, tc := range []struct {
		name string
		cand *bench.Summary
		want string
	}{
		{"same bucket", withServer(0.197, 0.1, 0.25), `<tr><td>Server TTFT P50 \(ms, bucket estimate\)</td><td class="num">110.00</td><td class="num">197.00</td><td class="num" colspan="2">same bucket, \(100.00, 250.00\] ms</td><td></td></tr>`},
		{"other bucket", withServer(0.3, 0.25, 0.5), `<tr><td>Server TTFT P50 \(ms, bucket estimate\)</td><td class="num">110.00</td><td class="num">300.00</td><td class="num ">\+190.00</td>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			runs := []Run{{Name: "base", Summary: withServer(0.11, 0.1, 0.25)}, {Name: "new", Summary: tc.cand}}
			if err := Write(&b, runs, Options{Now: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}); err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(tc.want).MatchString(b.String()) {
				t.Errorf("the comparison lacks %s", tc.want)
			}
		})
	}
}
