package bench

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// samples draws n latencies in seconds: a lognormal body around 10 ms with
// a tail, and a few zero gaps (tokens that arrived together).
func samples(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		switch {
		case i%97 == 0:
			out[i] = 0
		case i%13 == 0:
			out[i] = 0.2 * math.Exp(r.NormFloat64())
		default:
			out[i] = 0.01 * math.Exp(0.3*r.NormFloat64())
		}
	}
	return out
}

// TestSketchWithinError: every quantile the sketch reports is within its
// relative error of the sample at that rank, and within the error (plus
// the gap to the next sample) of NumPy's interpolated percentile; mean,
// std and max are the exact ones; memory stays bounded.
func TestSketchWithinError(t *testing.T) {
	vals := samples(200000, 1)
	sk := NewSketch(SketchRelativeError)
	for _, v := range vals {
		sk.Add(v)
	}
	sorted := slices.Sorted(slices.Values(vals))
	for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999} {
		rank := int(math.Round(q * float64(len(sorted)-1)))
		exact, got := sorted[rank], sk.Quantile(q)
		if exact == 0 {
			if got != 0 {
				t.Errorf("q%v: %v, want 0", q, got)
			}
			continue
		}
		if rel := math.Abs(got-exact) / exact; rel > SketchRelativeError {
			t.Errorf("q%v: sketch %.6g, sample %.6g: relative error %.4f > %v", q, got, exact, rel, SketchRelativeError)
		}
		np := percentile(sorted, q*100)
		if rel := math.Abs(got-np) / np; rel > SketchRelativeError+(sorted[min(rank+1, len(sorted)-1)]-exact)/exact {
			t.Errorf("q%v: sketch %.6g, NumPy %.6g", q, got, np)
		}
	}
	want, got := ComputeStats(vals), sk.Stats()
	for _, c := range []struct {
		name string
		a, b float64
	}{{"mean", want.Mean, got.Mean}, {"std", want.Std, got.Std}, {"max", want.Max, got.Max}} {
		if math.Abs(c.a-c.b) > 1e-9*math.Abs(c.a) {
			t.Errorf("%s: sketch %v, exact %v", c.name, c.b, c.a)
		}
	}
	for name, p := range map[string][2]float64{"median": {want.Median, got.Median}, "p99": {want.P99, got.P99}} {
		if math.Abs(p[0]-p[1])/p[0] > 2*SketchRelativeError {
			t.Errorf("%s: sketch %v, exact %v", name, p[1], p[0])
		}
	}
	// A microsecond to 15 minutes, 200,000 values: about a thousand
	// counters, whatever the count.
	for _, v := range []float64{1e-6, 900} {
		sk.Add(v)
	}
	if n := len(sk.counts); n > 1100 {
		t.Errorf("%d counters for values from 1 µs to 15 min", n)
	}
}

func TestSketchMerge(t *testing.T) {
	a, b, all := NewSketch(SketchRelativeError), NewSketch(SketchRelativeError), NewSketch(SketchRelativeError)
	for i, v := range samples(5000, 2) {
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
		all.Add(v)
	}
	a.Merge(b)
	if a.Count() != all.Count() || !slices.Equal(trimZeros(a.counts), trimZeros(all.counts)) || a.zeros != all.zeros {
		t.Fatalf("merged sketch differs from one fed everything")
	}
	if sa, sall := a.Stats(), all.Stats(); math.Abs(sa.Mean-sall.Mean) > 1e-9 || math.Abs(sa.Std-sall.Std) > 1e-9 || sa.Max != sall.Max || sa.P99 != sall.P99 {
		t.Errorf("merged stats %+v, want %+v", sa, sall)
	}
	empty := NewSketch(SketchRelativeError)
	if s := empty.Stats(); s != (Stats{}) || empty.Quantile(0.5) != 0 {
		t.Errorf("an empty sketch reports %+v", s)
	}
}

func trimZeros(c []uint64) []uint64 {
	lo, hi := 0, len(c)
	for lo < hi && c[lo] == 0 {
		lo++
	}
	for hi > lo && c[hi-1] == 0 {
		hi--
	}
	return c[lo:hi]
}

// TestAccumulatorSketch: with --stats=sketch the maxima and counts are
// exact (see TestSketchRunWithinError for the rest), the table and the record say which
// statistics they are, and the record reads back with the label.
func TestAccumulatorSketch(t *testing.T) {
	results, rows := fixture()
	exact, sk := exactAndSketch(t, results, rows, fixtureParams())
	if sk.ITLSamples != exact.ITLSamples || sk.ITL.Max != exact.ITL.Max || math.Abs(sk.ITL.Mean-exact.ITL.Mean) > 1e-9 {
		t.Errorf("sketch ITL %+v (%d samples), exact %+v (%d)", sk.ITL, sk.ITLSamples, exact.ITL, exact.ITLSamples)
	}
	if sk.TTFT.Max != exact.TTFT.Max || sk.E2ELatency.Max != exact.E2ELatency.Max || sk.Requests != exact.Requests || sk.Failed != exact.Failed {
		t.Errorf("sketch TTFT %+v E2E %+v, exact %+v %+v", sk.TTFT, sk.E2ELatency, exact.TTFT, exact.E2ELatency)
	}
	var table bytes.Buffer
	_ = sk.WriteTable(&table)
	if !strings.Contains(table.String(), "Latency statistics:") || !strings.Contains(table.String(), "sketch, within 1%; peaks on a 10 ms grid") {
		t.Errorf("the table does not say the statistics are a sketch:\n%s", table.String())
	}
	var plain bytes.Buffer
	_ = exact.WriteTable(&plain)
	if strings.Contains(plain.String(), "Latency statistics:") {
		t.Error("an exact run's table mentions the sketch")
	}
	line, err := sk.Record(JSONOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`"stats": "sketch", "stats_relative_error": 0.01`)) {
		t.Errorf("record lacks the stats label: %s", line)
	}
	back, err := ParseRecord(line)
	if err != nil || back.Stats != StatsSketch {
		t.Errorf("ParseRecord: %v, stats %q", err, back.Stats)
	}
}

// TestSketchMemoryFlat: under the sketch, the accumulator keeps no
// inter-token gap once a request is added, however many requests there
// are; exact statistics keep every one.
func TestSketchMemoryFlat(t *testing.T) {
	results, rows := fixture()
	for _, mode := range []string{StatsExact, StatsSketch} {
		p := fixtureParams()
		p.Stats = mode
		a := NewAccumulator(p)
		for i := range 3000 {
			a.Add(i, results[0], rows[0])
		}
		perReq := len(results[0].AppendITLs(nil, false))
		if perReq == 0 || results[0].Outcome != "success" {
			t.Fatalf("fixture result 0 has %d gaps (%s): the test needs a success with gaps", perReq, results[0].Outcome)
		}
		switch mode {
		case StatsSketch:
			if a.itl.len() != 0 || len(a.itl.chunks) > 1 || len(a.itl.wide) != 0 {
				t.Errorf("sketch: %d gaps kept (%d chunks, %d wide values) after 3,000 requests", a.itl.len(), len(a.itl.chunks), len(a.itl.wide))
			}
			k, ok := a.stats.(*sketchStats)
			if !ok {
				t.Fatalf("sketch: statistics are %T", a.stats)
			}
			if k.itl.Count() != 3000*perReq {
				t.Errorf("sketch holds %d gaps, want %d", k.itl.Count(), 3000*perReq)
			}
		default:
			if a.itl.len() != 3000*perReq {
				t.Errorf("exact: %d gaps kept, want %d", a.itl.len(), 3000*perReq)
			}
		}
	}
}

// TestDetailsNoTexts: details kept for a report or a plot hold the times
// and lengths but no copy of the outputs.
func TestDetailsNoTexts(t *testing.T) {
	results, rows := fixture()
	p := fixtureParams()
	p.Details, p.DetailsNoTexts = true, true
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Details
	if d == nil || len(d.SentTimes) != len(results) || len(d.OutputLens) != len(results) {
		t.Fatalf("details %+v", d)
	}
	for i, txt := range d.GeneratedTexts {
		if txt != "" {
			t.Errorf("request %d: text %q kept", i, txt)
		}
	}
	p.DetailsNoTexts = false
	full, _ := Summarize(results, rows, p)
	if !slices.ContainsFunc(full.Details.GeneratedTexts, func(s string) bool { return s != "" }) {
		t.Error("the fixture has no text: the test proves nothing")
	}
}

// sketchRun is a synthetic run of n requests: arrivals every 2 ms, a
// client queue of up to 5 ms, a lognormal TTFT around 50 ms, 10 to 60
// tokens 10 ms apart with jitter (some events carry two), one in twenty
// failed.
func sketchRun(n int) ([]prober.Result, []datasets.Prompt) {
	r := rand.New(rand.NewPCG(9, 9))
	results := make([]prober.Result, n)
	rows := make([]datasets.Prompt, n)
	for i := range results {
		sched := float64(2 * i)
		sent := sched + 5*r.Float64()
		cur := sent + 50*math.Exp(0.4*r.NormFloat64())
		var evs []ev
		out := 0
		for range 10 + r.IntN(50) {
			k := 1
			if r.IntN(10) == 0 {
				k = 2
			}
			evs = append(evs, ev{cur, k})
			out += k
			cur += 10 * math.Exp(0.2*r.NormFloat64())
		}
		outcome := prober.OutcomeSuccess
		if i%20 == 7 {
			outcome = prober.OutcomeHTTP5xx
		}
		results[i] = req(sched, sent, cur, out, outcome, "x", "", evs...)
		rows[i] = datasets.Prompt{PromptLen: 100, OutputLen: out}
	}
	return results, rows
}

// TestSketchRunWithinError: on a run of 5,000 requests, every percentile
// --stats=sketch reports, of every metric, is within the sketch's stated
// relative error of the exact samples around its rank (NumPy interpolates
// between two neighbours; the sketch reports one of them, within 1%);
// means, maxima and counts match the exact run, the concurrency to the
// last digits; the peaks, taken on a 10 ms grid, are within 2%, the
// concurrency never above the exact one, whatever the order of adding.
func TestSketchRunWithinError(t *testing.T) {
	results, rows := sketchRun(5000)
	p := fixtureParams()
	p.Duration = 11 * time.Second
	p.PercentileMetrics = []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2EL, MetricClientQueueTime, MetricE2ELIncludingClientQueue}
	p.MetricPercentiles = []float64{1, 25, 50, 90, 95, 99, 99.9}
	exact, sk := exactAndSketch(t, results, rows, p)
	// The exact samples, sorted, per metric.
	lists := map[string][]float64{}
	for _, r := range results {
		sm := r.Samples()
		lists[MetricClientQueueTime] = append(lists[MetricClientQueueTime], sm.Queue.Seconds())
		if r.Outcome != prober.OutcomeSuccess {
			continue
		}
		lists[MetricTTFT] = append(lists[MetricTTFT], sm.TTFT.Seconds())
		lists[MetricE2EL] = append(lists[MetricE2EL], sm.E2E.Seconds())
		lists[MetricE2ELIncludingClientQueue] = append(lists[MetricE2ELIncludingClientQueue], sm.E2E.Seconds()+sm.Queue.Seconds())
		if sm.TPOTSeconds >= 0 {
			lists[MetricTPOT] = append(lists[MetricTPOT], sm.TPOTSeconds)
		}
		lists[MetricITL] = r.AppendITLs(lists[MetricITL], false)
	}
	for _, l := range lists {
		slices.Sort(l)
	}
	if len(sk.Percentiles) != len(exact.Percentiles) {
		t.Fatalf("%d metrics, exact %d", len(sk.Percentiles), len(exact.Percentiles))
	}
	for i, ms := range sk.Percentiles {
		ex, sorted := exact.Percentiles[i], lists[ms.Metric]
		if len(sorted) < 100 {
			t.Fatalf("%s: %d samples", ms.Metric, len(sorted))
		}
		if rel := math.Abs(ms.Mean-ex.Mean) / ex.Mean; rel > 1e-9 {
			t.Errorf("%s mean %v, exact %v", ms.Metric, ms.Mean, ex.Mean)
		}
		for j, pv := range ms.Percentiles {
			vi := float64(len(sorted)-1) * pv.P / 100
			lo, hi := sorted[int(math.Floor(vi))]*1000, sorted[int(math.Ceil(vi))]*1000
			if pv.Value < lo*(1-SketchRelativeError) || pv.Value > hi*(1+SketchRelativeError) {
				t.Errorf("%s p%v: sketch %.6g, samples around the rank %.6g..%.6g (NumPy %.6g)", ms.Metric, pv.P, pv.Value, lo, hi, ex.Percentiles[j].Value)
			}
		}
	}
	for _, c := range []struct {
		name    string
		sk, exa Stats
	}{{"ttft", sk.TTFT, exact.TTFT}, {"tpot", sk.TPOT, exact.TPOT}, {"itl", sk.ITL, exact.ITL}, {"e2e", sk.E2ELatency, exact.E2ELatency},
		{"queue", sk.ClientQueue, exact.ClientQueue}, {"e2e incl. queue", sk.E2EIncludingQueue, exact.E2EIncludingQueue}} {
		if c.sk.Max != c.exa.Max || math.Abs(c.sk.Mean-c.exa.Mean) > 1e-9*c.exa.Mean || math.Abs(c.sk.Std-c.exa.Std) > 1e-6*c.exa.Std {
			t.Errorf("%s: sketch %+v, exact %+v", c.name, c.sk, c.exa)
		}
	}
	if sk.ITLSamples != exact.ITLSamples || sk.TPOTSamples != exact.TPOTSamples || sk.Requests != exact.Requests || sk.Failed != exact.Failed || sk.Completed != exact.Completed {
		t.Errorf("counts: sketch %d %d %d %d, exact %d %d %d %d", sk.ITLSamples, sk.TPOTSamples, sk.Requests, sk.Failed, exact.ITLSamples, exact.TPOTSamples, exact.Requests, exact.Failed)
	}
	if math.Abs(sk.Concurrency-exact.Concurrency) > 1e-12*exact.Concurrency {
		t.Errorf("concurrency %v, exact %v", sk.Concurrency, exact.Concurrency)
	}
	if sk.MaxConcurrentRequests > exact.MaxConcurrentRequests || float64(sk.MaxConcurrentRequests) < 0.98*float64(exact.MaxConcurrentRequests) {
		t.Errorf("peak concurrency %d, exact %d", sk.MaxConcurrentRequests, exact.MaxConcurrentRequests)
	}
	if math.Abs(sk.MaxOutputTokensPerS-exact.MaxOutputTokensPerS) > 0.02*exact.MaxOutputTokensPerS {
		t.Errorf("peak tokens/s %v, exact %v", sk.MaxOutputTokensPerS, exact.MaxOutputTokensPerS)
	}
	// Added in completion order (here reversed: every request is a new
	// earliest one, so the grid prepends each time, and its slots fall
	// elsewhere), the peaks keep the same bounds.
	p.Stats = StatsSketch
	rev := NewAccumulator(p)
	for i := len(results) - 1; i >= 0; i-- {
		rev.Add(i, results[i], rows[i])
	}
	back, err := rev.Summary(p.Duration)
	if err != nil {
		t.Fatal(err)
	}
	if back.MaxConcurrentRequests > exact.MaxConcurrentRequests || float64(back.MaxConcurrentRequests) < 0.98*float64(exact.MaxConcurrentRequests) ||
		math.Abs(back.MaxOutputTokensPerS-exact.MaxOutputTokensPerS) > 0.02*exact.MaxOutputTokensPerS {
		t.Errorf("peaks added in reverse %v, %d; exact %v, %d", back.MaxOutputTokensPerS, back.MaxConcurrentRequests, exact.MaxOutputTokensPerS, exact.MaxConcurrentRequests)
	}
	// bench_serving's concurrency buckets: seconds from the first request
	// sent instead of the first success's start, so within a request or two.
	p.Compat, _ = ParseCompat("bucket-concurrency")
	exact, sk = exactAndSketch(t, results, rows, p)
	if d := sk.MaxConcurrentRequests - exact.MaxConcurrentRequests; d < -2 || d > 2 || exact.MaxConcurrentRequests == 0 {
		t.Errorf("bucket concurrency %d, exact %d", sk.MaxConcurrentRequests, exact.MaxConcurrentRequests)
	}
}

// exactAndSketch summarizes a run with exact statistics and with the sketch.
func exactAndSketch(t *testing.T, results []prober.Result, rows []datasets.Prompt, p Params) (exact, sk Summary) {
	t.Helper()
	p.Stats = StatsExact
	exact, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	p.Stats = StatsSketch
	if sk, err = Summarize(results, rows, p); err != nil {
		t.Fatal(err)
	}
	return exact, sk
}
