package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// shardRecords runs results as n shards (shard i has requests i, i+n,
// ...) with parameters p, each starting at base, and returns their
// records read back, as merge reads them.
func shardRecords(t *testing.T, results []prober.Result, rows []datasets.Prompt, p Params, n int, details bool) []*Summary {
	t.Helper()
	var out []*Summary
	for i := range n {
		q := p
		var k int
		for j := i; j < len(results); j += n {
			k++
		}
		q.Shard = &ShardInfo{RunID: "run1", Index: i, Count: n, Prompts: k, Planned: k}
		q.Details = details
		a := NewAccumulator(q)
		a.SetStart(base)
		for j, g := 0, i; g < len(results); j, g = j+1, g+n {
			a.Add(j, results[g], rows[g])
		}
		s, err := a.Summary(p.Duration)
		if err != nil {
			t.Fatal(err)
		}
		line, err := s.Record(JSONOptions{Details: details})
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseRecord(line)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, back)
	}
	// Given in any order.
	slices.Reverse(out)
	return out
}

func relClose(a, b, tol float64) bool {
	return a == b || math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// TestMergeDetailsIsTheSingleRun: three shards of a run, each with its
// details, merge into the figures of the run summarized in one process:
// counts and totals exactly, every latency statistic to the last digits
// (the details keep every time to the nanosecond), the details in the
// single run's order.
func TestMergeDetailsIsTheSingleRun(t *testing.T) {
	results, rows := sketchRun(900)
	p := fixtureParams()
	p.Duration = 3 * time.Second
	p.MaxConcurrency = 0
	p.PercentileMetrics = []string{MetricTTFT, MetricITL, MetricE2EL}
	p.MetricPercentiles = []float64{50, 99}
	single := p
	single.Details = true
	a := NewAccumulator(single)
	a.SetStart(base)
	for i := range results {
		a.Add(i, results[i], rows[i])
	}
	want, err := a.Summary(p.Duration)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Merge(shardRecords(t, results, rows, p, 3, true))
	if err != nil {
		t.Fatal(err)
	}
	if got.Merged == nil || got.Merged.From != MergedFromDetails || len(got.Merged.Shards) != 3 {
		t.Fatalf("Merged = %+v", got.Merged)
	}
	ints := []struct {
		name      string
		got, want int
	}{
		{"completed", got.Completed, want.Completed}, {"requests", got.Requests, want.Requests}, {"failed", got.Failed, want.Failed},
		{"total input", got.TotalInputTokens, want.TotalInputTokens}, {"total output", got.TotalOutputTokens, want.TotalOutputTokens},
		{"retokenized", got.TotalOutputTokensRetokenized, want.TotalOutputTokensRetokenized},
		{"itl samples", got.ITLSamples, want.ITLSamples}, {"tpot samples", got.TPOTSamples, want.TPOTSamples},
		{"peak concurrency", got.MaxConcurrentRequests, want.MaxConcurrentRequests},
	}
	for _, c := range ints {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		name      string
		got, want Stats
	}{{"ttft", got.TTFT, want.TTFT}, {"tpot", got.TPOT, want.TPOT}, {"itl", got.ITL, want.ITL}, {"e2e", got.E2ELatency, want.E2ELatency},
		{"queue", got.ClientQueue, want.ClientQueue}, {"e2e incl. queue", got.E2EIncludingQueue, want.E2EIncludingQueue}} {
		g, w := []float64{c.got.Mean, c.got.Median, c.got.Std, c.got.P90, c.got.P95, c.got.P99, c.got.Max}, []float64{c.want.Mean, c.want.Median, c.want.Std, c.want.P90, c.want.P95, c.want.P99, c.want.Max}
		for i := range g {
			if !relClose(g[i], w[i], 1e-9) {
				t.Errorf("%s = %+v, want %+v", c.name, c.got, c.want)
				break
			}
		}
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"duration", got.Duration, want.Duration}, {"output throughput", got.OutputThroughput, want.OutputThroughput},
		{"concurrency", got.Concurrency, want.Concurrency}, {"actual rate", float64(got.ActualRequestRate), float64(want.ActualRequestRate)},
		{"scheduled rate", float64(got.ScheduledRequestRate), float64(want.ScheduledRequestRate)}} {
		if !relClose(c.got, c.want, 1e-9) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !relClose(got.MaxOutputTokensPerS, want.MaxOutputTokensPerS, 0.02) {
		t.Errorf("peak tokens/s = %v, want %v", got.MaxOutputTokensPerS, want.MaxOutputTokensPerS)
	}
	if !slices.Equal(got.Details.InputLens, want.Details.InputLens) || !slices.Equal(got.Details.OutputLens, want.Details.OutputLens) ||
		!slices.Equal(got.Details.TTFTs, want.Details.TTFTs) || !slices.Equal(got.Details.Outcomes, want.Details.Outcomes) {
		t.Error("the merged details are not the single run's, in its order")
	}
	for i, m := range got.Percentiles {
		for j, pv := range m.Percentiles {
			if w := want.Percentiles[i].Percentiles[j].Value; !relClose(pv.Value, w, 1e-9) {
				t.Errorf("p%v %s = %v, want %v", pv.P, m.Metric, pv.Value, w)
			}
		}
	}
	var b strings.Builder
	if err := got.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"Merged run:", "Shard 0/3:", "Shard 2/3:", "exact, from every request's details"} {
		if !strings.Contains(b.String(), row) {
			t.Errorf("table lacks %q:\n%s", row, b.String())
		}
	}
	// The merged record reads back with its shards' lines.
	line, err := got.Record(JSONOptions{Details: true})
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	if back.Merged == nil || len(back.Merged.Shards) != 3 || back.Merged.Shards[1].Completed != got.Merged.Shards[1].Completed {
		t.Errorf("merged record read back: %+v", back.Merged)
	}
}

// TestMergeSketchesWithinError: the shards' sketches, merged, report
// every percentile within the sketch's relative error of the samples
// around its rank in the exact merge (NumPy interpolates between two
// neighbours; the sketch reports one, within its error), and exactly what
// one sketch of the whole run reports.
func TestMergeSketchesWithinError(t *testing.T) {
	results, rows := sketchRun(3000)
	p := fixtureParams()
	p.Duration = 7 * time.Second
	p.MaxConcurrency = 0
	exact, err := Merge(shardRecords(t, results, rows, p, 3, true))
	if err != nil {
		t.Fatal(err)
	}
	p.Stats = StatsSketch
	sk, err := Merge(shardRecords(t, results, rows, p, 3, false))
	if err != nil {
		t.Fatal(err)
	}
	if sk.Merged.From != MergedFromSketches || sk.Stats != StatsSketch {
		t.Fatalf("merged from %q, stats %q", sk.Merged.From, sk.Stats)
	}
	one, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	// The exact samples, sorted.
	lists := map[string][]float64{}
	for _, r := range results {
		sm := r.Samples()
		if r.Outcome != prober.OutcomeSuccess {
			continue
		}
		lists["ttft"] = append(lists["ttft"], sm.TTFT.Seconds()*1000)
		lists["e2e"] = append(lists["e2e"], sm.E2E.Seconds()*1000)
		lists["tpot"] = append(lists["tpot"], sm.TPOTSeconds*1000)
		for _, g := range r.AppendITLs(nil, false) {
			lists["itl"] = append(lists["itl"], g*1000)
		}
	}
	for _, c := range []struct {
		name          string
		sk, exa, once Stats
	}{{"ttft", sk.TTFT, exact.TTFT, one.TTFT}, {"tpot", sk.TPOT, exact.TPOT, one.TPOT}, {"itl", sk.ITL, exact.ITL, one.ITL}, {"e2e", sk.E2ELatency, exact.E2ELatency, one.E2ELatency}} {
		sorted := lists[c.name]
		slices.Sort(sorted)
		for _, q := range []struct {
			p           float64
			sk, ex, one float64
		}{{50, c.sk.Median, c.exa.Median, c.once.Median}, {90, c.sk.P90, c.exa.P90, c.once.P90}, {95, c.sk.P95, c.exa.P95, c.once.P95}, {99, c.sk.P99, c.exa.P99, c.once.P99}} {
			vi := float64(len(sorted)-1) * q.p / 100
			lo, hi := sorted[int(math.Floor(vi))], sorted[int(math.Ceil(vi))]
			if q.sk < lo*(1-SketchRelativeError) || q.sk > hi*(1+SketchRelativeError) {
				t.Errorf("%s p%v: merged sketches %.6g, exact merge %.6g (samples around the rank %.6g..%.6g)", c.name, q.p, q.sk, q.ex, lo, hi)
			}
			if q.sk != q.one {
				t.Errorf("%s p%v: merged sketches %.6g, one sketch of the run %.6g", c.name, q.p, q.sk, q.one)
			}
		}
		if !relClose(c.sk.Mean, c.exa.Mean, 1e-9) || c.sk.Max != c.exa.Max {
			t.Errorf("%s: merged sketches %+v, exact merge %+v", c.name, c.sk, c.exa)
		}
	}
	if sk.Completed != exact.Completed || sk.TotalOutputTokens != exact.TotalOutputTokens || sk.ITLSamples != exact.ITLSamples {
		t.Errorf("counts: sketches %d %d %d, exact %d %d %d", sk.Completed, sk.TotalOutputTokens, sk.ITLSamples, exact.Completed, exact.TotalOutputTokens, exact.ITLSamples)
	}
	if !relClose(sk.Concurrency, exact.Concurrency, 1e-9) {
		t.Errorf("concurrency %v, exact %v", sk.Concurrency, exact.Concurrency)
	}
}

// TestMergeRefuses: records of different runs, a shard twice, shards
// missing, and a shard with neither details nor sketches.
func TestMergeRefuses(t *testing.T) {
	results, rows := sketchRun(30)
	p := fixtureParams()
	recs := shardRecords(t, results, rows, p, 3, true) // indices 2, 1, 0
	other := *recs[0]
	sh := *other.Shard
	sh.RunID = "run2"
	other.Shard = &sh
	noDetails := *recs[1]
	noDetails.Details = nil
	for _, tc := range []struct {
		name string
		in   []*Summary
		want string
	}{
		{"missing", recs[:1], "run run1: shards 0/3, 1/3 missing"},
		{"twice", []*Summary{recs[0], recs[0], recs[1]}, "shard 2/3 of run run1 is given twice"},
		{"other run", []*Summary{recs[1], &other, recs[2]}, "shards of different runs"},
		{"no details", []*Summary{recs[0], &noDetails, recs[2]}, "shard 1/3 has neither per-request details"},
		{"not a shard", []*Summary{{}}, "not a shard's record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Merge() = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestShardRecordKeys: a shard's record carries its shard object; a run
// in one process has no such key.
func TestShardRecordKeys(t *testing.T) {
	results, rows := fixture()
	p := fixtureParams()
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := s.Record(JSONOptions{})
	if strings.Contains(string(line), `"shard"`) || strings.Contains(string(line), `"merged"`) {
		t.Errorf("an unsharded record has shard keys: %s", line)
	}
	start := base.Add(250 * time.Millisecond)
	p.Shard = &ShardInfo{RunID: "abc", Index: 1, Count: 2, StartAt: base}
	a := NewAccumulator(p)
	a.SetStart(start)
	for i := range results {
		a.Add(i, results[i], rows[i])
	}
	s, _ = a.Summary(p.Duration)
	line, _ = s.Record(JSONOptions{})
	for _, want := range []string{`"shard": {"run_id": "abc", "index": 1, "count": 2`, `"start_offset": 0.25, "late": true`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("record lacks %s: %s", want, line)
		}
	}
	var b strings.Builder
	_ = s.WriteTable(&b)
	if !strings.Contains(b.String(), "+0.250 (late)") {
		t.Errorf("the table hides the late start:\n%s", b.String())
	}
}
