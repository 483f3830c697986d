package bench

import (
	"testing"
	"time"
)

// TestMergeCI checks that the merge of a run's shards carries the single
// run's intervals: from details, the same order statistics; from
// sketches, intervals that hold the single run's figures.
func TestMergeCI(t *testing.T) {
	results, rows := sketchRun(900)
	p := fixtureParams()
	p.Duration = 3 * time.Second
	p.MaxConcurrency = 0
	a := NewAccumulator(p)
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
	if got.CI == nil {
		t.Fatal("the merged summary has no intervals")
	}
	for _, c := range []struct {
		name      string
		got, want Interval
	}{
		{"ttft p99", got.CI.TTFT.P99, want.CI.TTFT.P99}, {"itl median", got.CI.ITL.Median, want.CI.ITL.Median},
		{"e2e p90", got.CI.E2E.P90, want.CI.E2E.P90}, {"ttft mean", got.CI.TTFT.Mean, want.CI.TTFT.Mean},
		{"request throughput", got.CI.RequestThroughput, want.CI.RequestThroughput},
	} {
		if !relClose(c.got.Lo, c.want.Lo, 1e-9) || !relClose(c.got.Hi, c.want.Hi, 1e-9) {
			t.Errorf("merged %s interval %v, single run's %v", c.name, c.got, c.want)
		}
	}
	ps := p
	ps.Stats = StatsSketch
	sk, err := Merge(shardRecords(t, results, rows, ps, 3, false))
	if err != nil {
		t.Fatal(err)
	}
	if sk.CI == nil || sk.CI.Method != CISketch {
		t.Fatalf("merged from sketches: CI %+v, want method %s", sk.CI, CISketch)
	}
	if iv := sk.CI.TTFT.P99; !iv.Bounded() || iv.Lo > want.TTFT.P99 || iv.Hi < want.TTFT.P99 {
		t.Errorf("merged from sketches: P99 TTFT interval %v does not hold the single run's %v", iv, want.TTFT.P99)
	}
}
