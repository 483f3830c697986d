package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// bruteRanks is QuantileRanks by the definition, over the whole binomial
// pmf: an independent check of binomialTails' window and its edges.
func bruteRanks(n int, q float64) (lo, hi int) {
	pmf := make([]float64, n+1)
	for k := range pmf {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(k + 1))
		c, _ := math.Lgamma(float64(n - k + 1))
		pmf[k] = math.Exp(a - b - c + float64(k)*math.Log(q) + float64(n-k)*math.Log1p(-q))
	}
	a := (1 - Confidence) / 2
	l := 0 // largest l with P(B <= l-1) <= a
	cdf := 0.0
	for k := 0; k <= n; k++ {
		cdf += pmf[k]
		if cdf > a {
			break
		}
		l = k + 1
	}
	u := n + 1 // smallest u with P(B >= u) <= a
	sf := 0.0
	for k := n; k >= 0; k-- {
		sf += pmf[k]
		if sf > a {
			break
		}
		u = k
	}
	return l - 1, u - 1
}

func TestQuantileRanks(t *testing.T) {
	for _, tc := range []struct {
		n      int
		q      float64
		lo, hi int
	}{
		// The textbook 95% interval of the median of 100 samples is
		// between the 40th and the 61st smallest (1-based).
		{100, 0.5, 39, 60},
		// Too few samples for an upper bound: it is the largest, open.
		{100, 0.99, 96, 100},
		{200, 0.99, 194, 200},
		{500, 0.99, 489, 499},
		{1000, 0.99, 982, 996},
		{0, 0.5, -1, 0},
		{1, 0.5, -1, 1},
	} {
		lo, hi := QuantileRanks(tc.n, tc.q)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("QuantileRanks(%d, %v) = [%d, %d], want [%d, %d]", tc.n, tc.q, lo, hi, tc.lo, tc.hi)
		}
	}
	for _, n := range []int{2, 5, 10, 37, 100, 333, 1000, 2500} {
		for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
			lo, hi := QuantileRanks(n, q)
			blo, bhi := bruteRanks(n, q)
			if lo != blo || hi != bhi {
				t.Errorf("QuantileRanks(%d, %v) = [%d, %d], by the definition [%d, %d]", n, q, lo, hi, blo, bhi)
			}
		}
	}
}

// TestQuantileRanksNormal checks the normal approximation used for large
// counts against the exact window just below its threshold: the ranks of
// a count on either side of it agree to a rank, scaled.
func TestQuantileRanksNormal(t *testing.T) {
	for _, q := range []float64{0.5, 0.99} {
		n := int(math.Ceil(1000 * 1000 / (q * (1 - q)))) // sd = 1000: still exact
		lo, hi := QuantileRanks(n, q)
		lo2, hi2 := QuantileRanks(n+2, q) // just over: the approximation
		if d := (lo2 - lo); d < 0 || d > 3 {
			t.Errorf("q=%v: lower rank %d at n=%d, %d at n=%d", q, lo, n, lo2, n+2)
		}
		if d := (hi2 - hi); d < 0 || d > 3 {
			t.Errorf("q=%v: upper rank %d at n=%d, %d at n=%d", q, hi, n, hi2, n+2)
		}
	}
}

// TestQuantileCICoverage checks by simulation that the 95% interval holds
// the true quantile 93-97% of the time: samples of a known distribution
// (exponential, whose q-quantile is -ln(1-q)), seeded, so that the result
// is the same on every run.
func TestQuantileCICoverage(t *testing.T) {
	const trials = 3000
	for _, tc := range []struct {
		n int
		q float64
	}{{1000, 0.5}, {1000, 0.9}, {1000, 0.95}, {2000, 0.99}} {
		t.Run(fmt.Sprintf("n=%d/q=%v", tc.n, tc.q), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.n)))
			truth := -math.Log1p(-tc.q)
			lo, hi := QuantileRanks(tc.n, tc.q)
			if lo < 0 || hi >= tc.n {
				t.Fatalf("QuantileRanks(%d, %v) = [%d, %d]: open", tc.n, tc.q, lo, hi)
			}
			xs := make([]float64, tc.n)
			held := 0
			for range trials {
				for i := range xs {
					xs[i] = r.ExpFloat64()
				}
				slices.Sort(xs)
				if xs[lo] <= truth && truth <= xs[hi] {
					held++
				}
			}
			cov := float64(held) / trials
			t.Logf("coverage %.4f", cov)
			if cov < 0.93 || cov > 0.97 {
				t.Errorf("coverage %.4f over %d trials, want 0.93 to 0.97", cov, trials)
			}
		})
	}
}

// TestStatsCISketch checks that a sketch's intervals hold the exact
// intervals of the same samples: the same ranks, each end widened by the
// sketch's error.
func TestStatsCISketch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	xs := make([]float64, 3000)
	sk := NewSketch(SketchRelativeError)
	for i := range xs {
		xs[i] = 0.05 + r.ExpFloat64()*0.02
		sk.Add(xs[i])
	}
	ex, sc := statsCI(exactOf(slices.Clone(xs))), statsCI(sk)
	for i, e := range []Interval{ex.Median, ex.P90, ex.P95, ex.P99} {
		s := []Interval{sc.Median, sc.P90, sc.P95, sc.P99}[i]
		if !e.Bounded() || !s.Bounded() {
			t.Fatalf("interval %d: exact %v, sketch %v: want both bounded", i, e, s)
		}
		if s.Lo > e.Lo || s.Hi < e.Hi {
			t.Errorf("interval %d: sketch %v does not hold exact %v", i, s, e)
		}
		if s.Hi-s.Lo > (e.Hi-e.Lo)+4*SketchRelativeError*e.Hi {
			t.Errorf("interval %d: sketch %v much wider than exact %v", i, s, e)
		}
	}
	if ex.Mean != sc.Mean && math.Abs(ex.Mean.Lo-sc.Mean.Lo) > 1e-9 {
		t.Errorf("mean intervals differ: exact %v, sketch %v", ex.Mean, sc.Mean)
	}
}

func TestFewSamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    float64
		iv   Interval
		want bool
	}{
		{"narrow", 100, Interval{95, 105}, false},
		{"at the bound", 100, Interval{90, 110}, false},
		{"wide", 100, Interval{85, 110}, true},
		{"open above", 100, Interval{95, math.Inf(1)}, true},
		{"open below", 100, Interval{math.Inf(-1), 101}, true},
		{"unknown", 100, Unknown, true},
		{"negative value", -100, Interval{-105, -95}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FewSamples(tc.v, tc.iv); got != tc.want {
				t.Errorf("FewSamples(%v, %v) = %v, want %v", tc.v, tc.iv, got, tc.want)
			}
		})
	}
}

func TestIntervalJSON(t *testing.T) {
	for _, iv := range []Interval{{1, 2}, {math.Inf(-1), 3}, {4, math.Inf(1)}, Unknown} {
		b, err := json.Marshal(iv)
		if err != nil {
			t.Fatal(err)
		}
		var back Interval
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if back != iv {
			t.Errorf("%v -> %s -> %v", iv, b, back)
		}
	}
	b, _ := json.Marshal(Unknown)
	if string(b) != "[null,null]" {
		t.Errorf("Marshal(Unknown) = %s, want [null,null]", b)
	}
}

// steadyRun is n successes sent every gap ms, each taking 40 to 60 ms to
// its first token and 8 to 12 ms to each of 3 more, drawn from a seeded
// source.
func steadyRun(n int, gapMs float64, seed uint64) ([]prober.Result, []datasets.Prompt) {
	return shiftedRun(n, gapMs, seed, 40)
}

// shiftedRun is steadyRun with the time to first token from ttftMs on.
func shiftedRun(n int, gapMs float64, seed uint64, ttftMs float64) ([]prober.Result, []datasets.Prompt) {
	r := rand.New(rand.NewPCG(seed, seed))
	var results []prober.Result
	rows := make([]datasets.Prompt, n)
	for i := range n {
		sent := float64(i) * gapMs
		first := sent + ttftMs + r.Float64()*20
		evs := []ev{{first, 1}}
		cur := first
		for k := 1; k < 4; k++ {
			cur += 8 + r.Float64()*4
			evs = append(evs, ev{cur, 1})
		}
		results = append(results, req(sent, sent, cur+1, 4, prober.OutcomeSuccess, "a b c d", "", evs...))
		rows[i] = datasets.Prompt{PromptLen: 10, OutputLen: 4}
	}
	return results, rows
}

// TestSummaryCI checks the intervals a summary carries: each holds its
// figure, the record writes them and ParseRecord reads them back, and the
// table's block shows them.
func TestSummaryCI(t *testing.T) {
	for _, stats := range []string{StatsExact, StatsSketch} {
		t.Run(stats, func(t *testing.T) {
			results, rows := steadyRun(1000, 5, 1)
			p := Params{Backend: "vllm", Dataset: "random", RequestRate: 200, Duration: 5060 * time.Millisecond, Stats: stats}
			s, err := Summarize(results, rows, p)
			if err != nil {
				t.Fatal(err)
			}
			c := s.CI
			if c == nil {
				t.Fatal("Summary.CI is nil")
			}
			wantMethod := map[string]string{StatsExact: CIOrderStatistics, StatsSketch: CISketch}[stats]
			if c.Method != wantMethod || c.Confidence != Confidence {
				t.Errorf("CI method %q confidence %v, want %q %v", c.Method, c.Confidence, wantMethod, Confidence)
			}
			for _, f := range []struct {
				name string
				v    float64
				iv   Interval
			}{
				{"mean ttft", s.TTFT.Mean, c.TTFT.Mean}, {"median ttft", s.TTFT.Median, c.TTFT.Median},
				{"p90 ttft", s.TTFT.P90, c.TTFT.P90}, {"p99 ttft", s.TTFT.P99, c.TTFT.P99},
				{"p99 e2e", s.E2ELatency.P99, c.E2E.P99}, {"median itl", s.ITL.Median, c.ITL.Median},
				{"request throughput", s.RequestThroughput, c.RequestThroughput},
				{"output throughput", s.OutputThroughput, c.OutputThroughput},
			} {
				if !f.iv.Bounded() || f.iv.Lo > f.v || f.iv.Hi < f.v {
					t.Errorf("%s = %v, interval %v does not hold it", f.name, f.v, f.iv)
				}
			}
			if c.TTFT.N != 1000 || c.ITL.N != 3000 {
				t.Errorf("counts: ttft %d itl %d, want 1000 3000", c.TTFT.N, c.ITL.N)
			}
			// A steady run: the throughput's interval is narrow.
			if FewSamples(s.RequestThroughput, c.RequestThroughput) {
				t.Errorf("request throughput %v interval %v: want narrow for a steady run", s.RequestThroughput, c.RequestThroughput)
			}
			line, err := s.Record(JSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseRecord(line)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c, back.CI); diff != "" {
				t.Errorf("CI read back (-written +read):\n%s", diff)
			}
			// The table's block reads the same from the live summary and
			// from the record read back, and the API's JSON carries the
			// same intervals.
			if live, read := ciBlock(t, &s), ciBlock(t, back); live != read || !strings.Contains(live, "P99 TTFT (ms):") {
				t.Errorf("the table's intervals differ between the live summary and its record:\n%s\n---\n%s", live, read)
			}
			js, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var api CI
			if err := json.Unmarshal(js, &api); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c, &api); diff != "" {
				t.Errorf("CI through the API's JSON (-written +read):\n%s", diff)
			}
			std, _ := s.Record(JSONOptions{StandardOnly: true})
			if back, _ := ParseRecord(std); back.CI != nil {
				t.Errorf("a bench_serving-only record read back with intervals %v", back.CI)
			}
		})
	}
}

// ciBlock is the table's block of intervals.
func ciBlock(t *testing.T, s *Summary) string {
	t.Helper()
	var b strings.Builder
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "Confidence Intervals")
	if i < 0 {
		t.Fatalf("the table has no intervals:\n%s", out)
	}
	out = out[i:]
	return out[:strings.Index(out, "Intervals:")]
}

// TestThroughputTally checks the windows' arithmetic: a steady rate gives
// a narrow interval around it, a run whose completions all fall in one
// window a wide one, a run too short to split none, and coarsening keeps
// every count.
func TestThroughputTally(t *testing.T) {
	var steady throughputTally
	for i := range 1000 {
		steady.add(float64(i)*0.01+0.005, 5, 10)
	}
	k, r, o, tot := steady.intervals(0, 10, 100, 1000, 1500)
	if k != ThroughputWindows {
		t.Fatalf("windows = %d, want %d", k, ThroughputWindows)
	}
	if r.Hi-r.Lo > 1e-9 || o.Hi-o.Lo > 1e-9 || tot.Hi-tot.Lo > 1e-9 {
		t.Errorf("steady intervals %v %v %v, want zero width", r, o, tot)
	}
	var burst throughputTally
	for range 1000 {
		burst.add(9.5, 5, 10)
	}
	_, r, _, _ = burst.intervals(0, 10, 100, 1000, 1500)
	if !FewSamples(100, r) {
		t.Errorf("burst interval %v, want wider than %v of 100", r, FewSamplesWidth)
	}
	if k, r, _, _ := burst.intervals(0, 0.5, 100, 1000, 1500); k != 0 || r.Known() {
		t.Errorf("a 0.5 s run: windows %d interval %v, want 0 and unknown", k, r)
	}
	var long throughputTally
	total := 0
	for i := range 200000 {
		long.add(float64(i)*0.05-3, 1, 2)
		total++
	}
	if len(long.slots) > maxThroughputSlots {
		t.Errorf("%d slots, want at most %d", len(long.slots), maxThroughputSlots)
	}
	sum := int64(0)
	for _, s := range long.slots {
		sum += s.requests
	}
	if sum != int64(total) {
		t.Errorf("coarsened tally counts %d, want %d", sum, total)
	}
}

// TestBoundedFrom checks the counts docs/compare.md gives: the fewest
// samples whose interval bounds each percentile on both sides.
func TestBoundedFrom(t *testing.T) {
	for q, want := range map[float64]int{0.5: 6, 0.9: 36, 0.95: 72, 0.99: 368, 0.999: 3688} {
		bounded := func(n int) bool { return EnoughSamples(n, q*100) }
		if !bounded(want) || bounded(want-1) {
			t.Errorf("q=%v: bounded at %d: %v, at %d: %v; want from %d on", q, want-1, bounded(want-1), want, bounded(want), want)
		}
	}
}
