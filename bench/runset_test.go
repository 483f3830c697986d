package bench

import (
	"math"
	"testing"
)

// TestSpread: the coefficient of variation of the runs' values, NaN where
// it is not defined.
func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		runs []float64
		want float64
	}{
		{[]float64{90, 100, 110}, 0.1},
		{[]float64{5, 5}, 0},
		{[]float64{100}, math.NaN()},
		{[]float64{-1, 1}, math.NaN()},
		{[]float64{1, math.NaN()}, math.NaN()},
	} {
		got := Spread(tc.runs)
		if (math.IsNaN(tc.want) != math.IsNaN(got)) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
			t.Errorf("Spread(%v) = %v, want %v", tc.runs, got, tc.want)
		}
	}
}

// TestAcrossRuns: each figure's runs, mean and spread over one side's
// runs, as a comparison shows the side.
func TestAcrossRuns(t *testing.T) {
	runs := []*Summary{{}, {}, {}}
	for i, ms := range []float64{90, 100, 110} {
		runs[i].TTFT.Median = ms
		runs[i].OutputThroughput = 1000 + float64(i)
	}
	var found bool
	for _, f := range AcrossRuns(runs) {
		if f.Figure != "ttft:median" {
			continue
		}
		found = true
		if len(f.Runs) != 3 || f.Mean != 100 || math.Abs(f.Spread-0.1) > 1e-12 {
			t.Errorf("ttft:median across runs = %+v, want runs 90, 100, 110, mean 100, spread 0.1", f)
		}
	}
	if !found {
		t.Error("AcrossRuns has no ttft:median")
	}
}
