package benchrun

import (
	"slices"
	"strings"
	"testing"
	"time"

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
	over := func(v float64) SweepPoint {
		p := pt(v, pass)
		p.Info.Ended = bench.EndedOverSaturated
		return p
	}
	anchor := func(v float64) SweepPoint {
		p := pt(v, pass)
		p.Info.Role = "throughput"
		return p
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
		{"out of budget", []SweepPoint{pt(1, pass), pt(8, fail), pt(4, pass)},
			[]string{"budget (--slo-budget, slo_budget in a bench window: 20s) ran out after 3 points", "The SLO held at 4 req/s", "it failed at 8 req/s"}},
		{"an over-saturated point failed", []SweepPoint{pt(1, pass), over(8)},
			[]string{"The SLO held at 1 req/s", "it failed at 8 req/s"}},
		{"the anchors are no answer", []SweepPoint{anchor(5), anchor(90), pt(90, fail)},
			[]string{"No point measured held the SLO; it failed at 90 req/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &SweepResult{Spec: SweepSpec{Mode: bench.SweepSLO, Budget: 20 * time.Second}, Points: tc.points, Capacity: 99, Bound: 100, GridPoints: 3}
			r.stopped()
			r.OverBudget = tc.name == "out of budget"
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

// TestSLOSearchFromAnchors: by request rate with no start, the search
// measures one request at a time and the saturated throughput, starts at
// the throughput and brackets between the two on a log scale.
func TestSLOSearchFromAnchors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sync, thr  float64
		limit      float64
		maxPoints  int // rate points, the anchors aside
		wantAtMost int // rate points run
	}{
		{name: "knee near the throughput", sync: 12, thr: 97.6, limit: 85, maxPoints: 20, wantAtMost: 6},
		{name: "knee far below", sync: 12, thr: 97.6, limit: 15, maxPoints: 20, wantAtMost: 8},
		{name: "knee below the synchronous rate", sync: 12, thr: 97.6, limit: 4, maxPoints: 20, wantAtMost: 10},
		{name: "one slot: no range between the anchors", sync: 0.5, thr: 0.5, limit: 0.45, maxPoints: 20, wantAtMost: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 0.1, Max: 1024, MaxPoints: tc.maxPoints,
				SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}}
			res := &SweepResult{Spec: w}
			var tried []float64
			var roles []string
			run := func(v float64, role string, _ int) (*SweepPoint, error) {
				roles = append(roles, role)
				switch role {
				case "synchronous":
					v = tc.sync
				case "throughput":
					v = tc.thr
				default:
					tried = append(tried, v)
				}
				pt := SweepPoint{Summary: &bench.Summary{}, Info: bench.SweepInfo{Mode: w.Mode, By: w.By, Index: len(res.Points) + 1, Value: v, Role: role,
					SLO: []bench.Verdict{{Objective: w.SLO[0], Pass: v <= tc.limit}}}}
				res.Points = append(res.Points, pt)
				return &pt, nil
			}
			if err := (&Prepared{}).search(w, bench.ByRequestRate, res, run); err != nil {
				t.Fatal(err)
			}
			if len(roles) < 3 || roles[0] != "synchronous" || roles[1] != "throughput" || tried[0] != tc.thr {
				t.Fatalf("roles %q, tried %v: want the two anchors, then the throughput", roles, tried)
			}
			if !(res.Capacity > 0 && res.Capacity <= tc.limit && res.Bound > tc.limit) {
				t.Errorf("capacity %v, bound %v: the limit %v is not inside (tried %v)", res.Capacity, res.Bound, tc.limit, tried)
			}
			if rel := (res.Bound - res.Capacity) / res.Capacity; rel > w.Precision {
				t.Errorf("bracket [%v, %v] is %.3f wide", res.Capacity, res.Bound, rel)
			}
			if len(tried) > tc.wantAtMost {
				t.Errorf("%d rate points (%v), want at most %d", len(tried), tried, tc.wantAtMost)
			}
			if res.GridPoints < len(tried) {
				t.Errorf("grid %d points, fewer than the search's %d", res.GridPoints, len(tried))
			}
		})
	}
}
