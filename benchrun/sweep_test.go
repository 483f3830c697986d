package benchrun

import (
	"slices"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/bench"
)

// TestSLOSearch drives the search with a server whose SLO holds exactly up
// to limit, and checks the answer, its precision and the points tried.
func TestSLOSearch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		by         string
		limit      float64 // the SLO holds at or below it
		start, max float64
		precision  float64
		maxPoints  int
		// want: the capacity and bound found, and the values tried in
		// order (nil: not checked).
		capacity, bound float64
		tried           []float64
		exhausted       bool
	}{
		{name: "bracket up then bisect", by: bench.ByRequestRate, limit: 50, start: 8, max: 1024, precision: 0.1, maxPoints: 20,
			capacity: 48, bound: 52, tried: []float64{8, 16, 32, 64, 48, 56, 52}},
		{name: "bracket down", by: bench.ByRequestRate, limit: 3, start: 16, max: 1024, precision: 0.1, maxPoints: 20,
			capacity: 3, bound: 3.25, tried: []float64{16, 8, 4, 2, 3, 3.5, 3.25}},
		{name: "holds up to the max", by: bench.ByRequestRate, limit: 1e9, start: 1, max: 10, precision: 0.1, maxPoints: 20,
			capacity: 10, bound: 0, tried: []float64{1, 2, 4, 8, 10}},
		{name: "nothing holds down to the floor", by: bench.ByRequestRate, limit: 0.01, start: 1, max: 10, precision: 0.1, maxPoints: 20,
			capacity: 0, bound: 1.0 / 64, tried: []float64{1, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625}},
		{name: "stops at max points", by: bench.ByRequestRate, limit: 50, start: 8, max: 1024, precision: 0.001, maxPoints: 5,
			capacity: 48, bound: 64, tried: []float64{8, 16, 32, 64, 48}, exhausted: true},
		{name: "concurrency is whole", by: bench.ByMaxConcurrency, limit: 13, start: 4, max: 256, precision: 0.01, maxPoints: 20,
			capacity: 13, bound: 14, tried: []float64{4, 8, 16, 12, 14, 13}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := SweepSpec{Mode: bench.SweepSLO, By: tc.by, Precision: tc.precision, Start: tc.start, Max: tc.max, MaxPoints: tc.maxPoints,
				SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}}
			res := &SweepResult{Spec: w}
			var tried []float64
			run := func(v float64, role string, _ int) (*SweepPoint, error) {
				tried = append(tried, v)
				pass := v <= tc.limit
				pt := SweepPoint{Info: bench.SweepInfo{Mode: w.Mode, By: tc.by, Index: len(res.Points) + 1, Value: v,
					SLO: []bench.Verdict{{Objective: w.SLO[0], Pass: pass}}}}
				res.Points = append(res.Points, pt)
				return &pt, nil
			}
			if err := (&Prepared{}).search(w, tc.by, res, run); err != nil {
				t.Fatal(err)
			}
			if res.Capacity != tc.capacity || res.Bound != tc.bound || res.Exhausted != tc.exhausted {
				t.Errorf("capacity %v bound %v exhausted %v, want %v %v %v (tried %v)", res.Capacity, res.Bound, res.Exhausted, tc.capacity, tc.bound, tc.exhausted, tried)
			}
			if tc.tried != nil && !slices.Equal(tried, tc.tried) {
				t.Errorf("tried %v, want %v", tried, tc.tried)
			}
			// The answer honours the stated precision unless the search
			// ran out of points or hit an end of the range.
			if !tc.exhausted && res.Capacity > 0 && res.Bound > 0 {
				if rel := (res.Bound - res.Capacity) / res.Capacity; rel > tc.precision && !(tc.by == bench.ByMaxConcurrency && res.Bound-res.Capacity <= 1) {
					t.Errorf("bracket [%v, %v] is %.3f wide, precision %v", res.Capacity, res.Bound, rel, tc.precision)
				}
			}
			if tc.capacity > 0 && tc.limit < 1e9 && !(res.Capacity <= tc.limit && (res.Bound == 0 || res.Bound > tc.limit)) {
				t.Errorf("the limit %v is not inside [%v, %v)", tc.limit, res.Capacity, res.Bound)
			}
			if res.GridPoints < len(tried) && tc.precision <= 0.1 && !tc.exhausted && res.Bound > 0 && res.Capacity > 0 {
				t.Errorf("a grid at the same precision would run %d points, fewer than the %d the search ran", res.GridPoints, len(tried))
			}
		})
	}
}

func TestGridPoints(t *testing.T) {
	pts := func(vs ...float64) []SweepPoint {
		var out []SweepPoint
		for _, v := range vs {
			out = append(out, SweepPoint{Info: bench.SweepInfo{Value: v}})
		}
		return out
	}
	for _, tc := range []struct {
		pts       []SweepPoint
		precision float64
		want      int
	}{
		{nil, 0.1, 0},
		{pts(10), 0.1, 1},
		// 8..64 in steps of 1.1: ln 8 / ln 1.1 = 21.8 steps, 23 points.
		{pts(8, 64, 32), 0.1, 23},
		{pts(1, 2), 1, 2},
		// Every point at one value: one grid point.
		{pts(5, 5), 0.1, 1},
	} {
		if got := gridPoints(tc.pts, tc.precision); got != tc.want {
			t.Errorf("gridPoints(%v values, %v) = %d, want %d", len(tc.pts), tc.precision, got, tc.want)
		}
	}
}

// TestInterruptedSearchAnswer: a search stopped before its answer (Ctrl-C
// after seven passing points printed "No request rate tried meets the SLO
// (the lowest, 0 req/s, did not)" and a grid of 0 points) says only what
// its points measured.
func TestInterruptedSearchAnswer(t *testing.T) {
	pass := []bench.Verdict{{Pass: true}}
	fail := []bench.Verdict{{Pass: false}}
	pt := func(v float64, vs []bench.Verdict) SweepPoint {
		return SweepPoint{Info: bench.SweepInfo{By: bench.ByRequestRate, Value: v, SLO: vs}, Summary: &bench.Summary{Requests: 10}}
	}
	for _, tc := range []struct {
		name   string
		points []SweepPoint
		want   []string
	}{
		{"seven passing", []SweepPoint{pt(1, pass), pt(2, pass), pt(4, pass), pt(8, pass), pt(16, pass), pt(32, pass), pt(64, pass)},
			[]string{"interrupted after 7 points", "The SLO held at 64 req/s", "no point measured failed it"}},
		{"bracketed", []SweepPoint{pt(1, pass), pt(8, fail), pt(4, pass), pt(6, fail)},
			[]string{"The SLO held at 4 req/s", "it failed at 6 req/s"}},
		{"none passed", []SweepPoint{pt(1, fail)}, []string{"No point measured held the SLO; it failed at 1 req/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &SweepResult{Spec: SweepSpec{Mode: bench.SweepSLO}, Points: tc.points, Capacity: 99, Bound: 100, GridPoints: 3}
			r.stopped()
			got := r.Answer(bench.ByRequestRate)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("answer %q lacks %q", got, w)
				}
			}
			if strings.Contains(got, "0 req/s, did not") || strings.Contains(got, "fixed grid") {
				t.Errorf("answer %q states what was not measured", got)
			}
		})
	}
}
