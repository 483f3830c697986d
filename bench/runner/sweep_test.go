package runner

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// TestSLOSearch drives the search with a server whose SLO holds exactly up
// to limit, and checks the answer, its precision and the points tried:
// the last is the answer's second run, which confirms it.
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
			capacity: 48, bound: 52, tried: []float64{8, 16, 32, 64, 48, 56, 52, 48}},
		{name: "bracket down", by: bench.ByRequestRate, limit: 3, start: 16, max: 1024, precision: 0.1, maxPoints: 20,
			capacity: 3, bound: 3.25, tried: []float64{16, 8, 4, 2, 3, 3.5, 3.25, 3}},
		{name: "holds up to the max", by: bench.ByRequestRate, limit: 1e9, start: 1, max: 10, precision: 0.1, maxPoints: 20,
			capacity: 10, bound: 0, tried: []float64{1, 2, 4, 8, 10}},
		{name: "nothing holds down to the floor", by: bench.ByRequestRate, limit: 0.01, start: 1, max: 10, precision: 0.1, maxPoints: 20,
			capacity: 0, bound: 1.0 / 64, tried: []float64{1, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625}},
		{name: "stops at max points", by: bench.ByRequestRate, limit: 50, start: 8, max: 1024, precision: 0.001, maxPoints: 5,
			capacity: 48, bound: 64, tried: []float64{8, 16, 32, 64, 48}, exhausted: true},
		{name: "concurrency is whole", by: bench.ByMaxConcurrency, limit: 13, start: 4, max: 256, precision: 0.01, maxPoints: 20,
			capacity: 13, bound: 14, tried: []float64{4, 8, 16, 12, 14, 13, 13}},
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
			if res.Confirmed != (!tc.exhausted && tc.capacity > 0 && tc.bound > 0) || res.Unstable {
				t.Errorf("confirmed %v unstable %v: want the bracketed answer confirmed", res.Confirmed, res.Unstable)
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
			r := &SweepResult{Spec: SweepSpec{Mode: bench.SweepSLO, Budget: 20 * time.Second}, Points: tc.points,
				SearchAnswer: bench.SearchAnswer{Capacity: 99, Bound: 100, GridPoints: 3, PointCount: len(tc.points), Budget: 20 * time.Second}}
			r.stopped()
			r.OverBudget = tc.name == "out of budget"
			got := r.Words()
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
// measures one request at a time, ramps the concurrency until the
// throughput stops rising, and searches strictly below the completion
// capacity the ramp measured, on a log scale down to the synchronous rate.
// The fake server completes min(c×sync, thr) req/s with c in flight.
func TestSLOSearchFromAnchors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sync, thr  float64
		limit      float64
		maxPoints  int // rate points, the anchors aside
		wantAtMost int // rate points run
		wantPeak   int // the concurrency that reached the capacity
	}{
		{name: "knee near the throughput", sync: 12, thr: 97.6, limit: 92, maxPoints: 20, wantAtMost: 4, wantPeak: 8},
		{name: "knee far below", sync: 12, thr: 97.6, limit: 15, maxPoints: 20, wantAtMost: 9, wantPeak: 8},
		{name: "knee below the synchronous rate", sync: 12, thr: 97.6, limit: 4, maxPoints: 20, wantAtMost: 11, wantPeak: 8},
		// The synchronous rate is 4% below the first point: the search
		// steps down by the precision, not to the synchronous rate,
		// which would fail as the first point did.
		{name: "synchronous rate within a precision step", sync: 1.25, thr: 1.43, limit: 1.2, maxPoints: 20, wantAtMost: 3, wantPeak: 2},
		{name: "one slot: no range between the anchors", sync: 0.5, thr: 0.5, limit: 0.45, maxPoints: 20, wantAtMost: 6, wantPeak: 1},
		// An SLO that holds up to the capacity is still answered below
		// it: a rate at or above it queues without end.
		{name: "holds at the capacity", sync: 12, thr: 97.6, limit: 1000, maxPoints: 20, wantAtMost: 2, wantPeak: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 0.1, Max: 1024, MaxPoints: tc.maxPoints,
				SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}}
			res := &SweepResult{Spec: w}
			var tried []float64
			var roles []string
			maxConc := 0
			run := func(v float64, role string, _ int) (*SweepPoint, error) {
				roles = append(roles, role)
				switch role {
				case "synchronous":
					v = tc.sync
				case "ramp":
					maxConc = max(maxConc, int(v))
					v = min(v*tc.sync, tc.thr)
				default:
					tried = append(tried, v)
				}
				pt := SweepPoint{Summary: &bench.Summary{RequestThroughput: v, Requests: 10, Completed: 10, TTFT: bench.Stats{Median: 50}},
					Info: bench.SweepInfo{Mode: w.Mode, By: w.By, Index: len(res.Points) + 1, Value: v, Role: role,
						SLO: []bench.Verdict{{Objective: w.SLO[0], Pass: v <= tc.limit}}}}
				res.Points = append(res.Points, pt)
				return &pt, nil
			}
			if err := (&Prepared{}).search(w, bench.ByRequestRate, res, run); err != nil {
				t.Fatal(err)
			}
			if len(roles) < 3 || roles[0] != "synchronous" || roles[1] != "ramp" || len(tried) == 0 {
				t.Fatalf("roles %q, tried %v: want the synchronous anchor, then the ramp", roles, tried)
			}
			if res.Saturation != tc.thr || res.PeakConcurrency != tc.wantPeak {
				t.Errorf("saturation %v at %d, want %v at %d", res.Saturation, res.PeakConcurrency, tc.thr, tc.wantPeak)
			}
			// The ramp stops one doubling past the peak: the most in
			// flight is twice the peak concurrency, as documented.
			if maxConc > searchConcurrency(rampStep{Concurrency: res.PeakConcurrency}) {
				t.Errorf("the ramp reached %d in flight, over twice the peak %d", maxConc, res.PeakConcurrency)
			}
			if !(res.Capacity > 0 && res.Capacity < res.Saturation && res.Capacity <= tc.limit && res.Bound > min(tc.limit, res.Capacity)) {
				t.Errorf("capacity %v, bound %v: want below the completion capacity %v and the limit %v (tried %v)", res.Capacity, res.Bound, res.Saturation, tc.limit, tried)
			}
			for _, v := range tried {
				if v >= res.Saturation {
					t.Errorf("tried %v req/s, at or above the completion capacity %v", v, res.Saturation)
				}
			}
			if rel := (res.Bound - res.Capacity) / res.Capacity; rel > w.Precision*(1+1e-9) {
				t.Errorf("bracket [%v, %v] is %.3f wide", res.Capacity, res.Bound, rel)
			}
			if !res.Confirmed || tried[len(tried)-1] != res.Capacity {
				t.Errorf("the answer %v was not run a second time (tried %v)", res.Capacity, tried)
			}
			if len(tried) > tc.wantAtMost {
				t.Errorf("%d rate points (%v), want at most %d", len(tried), tried, tc.wantAtMost)
			}
		})
	}
}

// TestSLOSearchTooFewBelow: a search sized by samples goes no lower than
// the rate at which a point completes 10 requests within its time (a slow
// server's search once spent its budget on points of one request each).
func TestSLOSearchTooFewBelow(t *testing.T) {
	w := SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 0.1, Start: 2, Max: 1024, MaxPoints: 20,
		PointSamples: 10, PointTime: 30 * time.Second, SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}}
	res := &SweepResult{Spec: w}
	var tried []float64
	run := func(v float64, role string, _ int) (*SweepPoint, error) {
		tried = append(tried, v)
		pt := SweepPoint{Summary: &bench.Summary{Requests: 10}, Info: bench.SweepInfo{Mode: w.Mode, By: w.By, Index: len(res.Points) + 1, Value: v,
			SLO: []bench.Verdict{{Objective: w.SLO[0], Pass: false}}}}
		res.Points = append(res.Points, pt)
		return &pt, nil
	}
	if err := (&Prepared{}).search(w, bench.ByRequestRate, res, run); err != nil {
		t.Fatal(err)
	}
	// 10 requests in 30 s: 1/3 req/s. 2, 1 and 0.5 are tried, 0.25 not.
	if !slices.Equal(tried, []float64{2, 1, 0.5}) || res.Capacity != 0 || res.TooFewBelow != 10.0/30 {
		t.Errorf("tried %v, capacity %v, too few below %v", tried, res.Capacity, res.TooFewBelow)
	}
	if got := res.Words(); !strings.Contains(got, "Lower rates were not tried: below 0.3333 req/s a point completes fewer than 10 requests within --slo-point-time (30s)") {
		t.Errorf("answer %q", got)
	}
}

// TestSLOSearchConfirmationCutByBudget: a second run the budget cut short
// (an ollama search's confirmed its answer on 4 requests) confirms
// nothing: the search ends over budget, with only what it measured.
func TestSLOSearchConfirmationCutByBudget(t *testing.T) {
	w := SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 0.1, Start: 8, Max: 1024, MaxPoints: 20,
		SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}}
	res := &SweepResult{Spec: w}
	runs := map[float64]int{}
	run := func(v float64, role string, _ int) (*SweepPoint, error) {
		runs[v]++
		pt := SweepPoint{Summary: &bench.Summary{Requests: 10}, Info: bench.SweepInfo{Mode: w.Mode, By: w.By, Index: len(res.Points) + 1, Value: v,
			SLO: []bench.Verdict{{Objective: w.SLO[0], Pass: v <= 50}}}}
		if runs[v] > 1 {
			pt.Info.Ended = bench.EndedBudget
		}
		res.Points = append(res.Points, pt)
		return &pt, nil
	}
	if err := (&Prepared{}).search(w, bench.ByRequestRate, res, run); !errors.Is(err, errBudget) || res.Confirmed {
		t.Errorf("search = %v, confirmed %v: want the budget's end and no confirmation", err, res.Confirmed)
	}
}

// TestSLOSearchDisagreement: an answer that fails its second run is a
// bound, and the search goes on below it; a second such failure means the
// server's verdicts vary more than the precision, and the search gives no
// answer (Unstable), which the answer's words say without a number.
func TestSLOSearchDisagreement(t *testing.T) {
	for _, tc := range []struct {
		name string
		// flaky: values whose second run fails.
		flaky                []float64
		capacity             float64
		unstable             bool
		disagreements        int
		answerHas, answerNot string
	}{
		{name: "steady", capacity: 48, answerHas: "Highest request rate meeting the SLO: 48 req/s (held twice"},
		{name: "one flaky answer", flaky: []float64{48}, capacity: 44, disagreements: 1, answerHas: "Highest request rate meeting the SLO: 44 req/s (held twice"},
		{name: "two flaky answers", flaky: []float64{48, 44}, unstable: true, disagreements: 2, answerHas: "No stable answer", answerNot: "Highest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 0.1, Start: 8, Max: 1024, MaxPoints: 20,
				SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}}
			res := &SweepResult{Spec: w}
			runs := map[float64]int{}
			run := func(v float64, role string, _ int) (*SweepPoint, error) {
				runs[v]++
				pass := v <= 50 && !(runs[v] > 1 && slices.Contains(tc.flaky, v))
				pt := SweepPoint{Summary: &bench.Summary{Requests: 10}, Info: bench.SweepInfo{Mode: w.Mode, By: w.By, Index: len(res.Points) + 1, Value: v,
					SLO: []bench.Verdict{{Objective: w.SLO[0], Pass: pass}}}}
				res.Points = append(res.Points, pt)
				return &pt, nil
			}
			if err := (&Prepared{}).search(w, bench.ByRequestRate, res, run); err != nil {
				t.Fatal(err)
			}
			if res.Unstable != tc.unstable || res.Disagreements != tc.disagreements || (!tc.unstable && (res.Capacity != tc.capacity || !res.Confirmed)) {
				t.Errorf("unstable %v disagreements %d capacity %v confirmed %v; want %v %d %v", res.Unstable, res.Disagreements, res.Capacity, res.Confirmed,
					tc.unstable, tc.disagreements, tc.capacity)
			}
			got := res.Words()
			if !strings.Contains(got, tc.answerHas) || (tc.answerNot != "" && strings.Contains(got, tc.answerNot)) {
				t.Errorf("answer %q: want %q, not %q", got, tc.answerHas, tc.answerNot)
			}
		})
	}
}

// TestRampNext: the ramp doubles the concurrency while the throughput
// rises by at least 10%, and stops when it does not, when the median
// TTFT explodes, when requests fail, or at its cap.
func TestRampNext(t *testing.T) {
	st := func(c int, thr, ttft, errPct float64) rampStep {
		return rampStep{Concurrency: c, Throughput: thr, TTFTMedianMs: ttft, ErrorPercent: errPct, Waiting: -1}
	}
	queued := func(s rampStep, waiting float64) rampStep { s.Waiting = waiting; return s }
	for _, tc := range []struct {
		name  string
		steps []rampStep
		next  int
		why   string
	}{
		{"nothing yet", nil, 1, ""},
		{"after one at a time", []rampStep{st(1, 10, 50, 0)}, 2, ""},
		{"rising", []rampStep{st(1, 10, 50, 0), st(2, 19, 52, 0), st(4, 30, 60, 0)}, 8, ""},
		{"flat", []rampStep{st(1, 10, 50, 0), st(2, 19, 52, 0), st(4, 20, 60, 0)}, 0, "stopped rising at concurrency 4"},
		{"fell", []rampStep{st(1, 10, 50, 0), st(2, 8, 52, 0)}, 0, "stopped rising at concurrency 2"},
		{"latency exploded", []rampStep{st(1, 10, 50, 0), st(2, 19, 1500, 0)}, 0, "30 times one request's"},
		{"requests failed", []rampStep{st(1, 10, 50, 0), st(2, 19, 52, 50)}, 0, "50% of the requests at concurrency 2 failed"},
		{"none completed", []rampStep{st(1, 0, 0, 0)}, 0, "no request completed at concurrency 1"},
		{"the server queued half", []rampStep{st(1, 10, 50, 0), queued(st(2, 19, 52, 0), 0), queued(st(4, 30, 60, 0), 2)}, 0, "the server queued 2 of the 4 requests in flight"},
		{"the server queued less than half", []rampStep{st(1, 10, 50, 0), queued(st(2, 19, 52, 0), 0), queued(st(4, 30, 60, 0), 1)}, 8, ""},
		{"at the cap", []rampStep{st(128, 10, 50, 0), st(MaxRampConcurrency, 19, 52, 0)}, 0, "cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, why := rampNext(tc.steps, MaxRampConcurrency)
			if next != tc.next || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
				t.Errorf("rampNext = %d, %q; want %d, %q", next, why, tc.next, tc.why)
			}
		})
	}
	// A run's own max concurrency caps the ramp.
	if next, why := rampNext([]rampStep{st(1, 10, 50, 0), st(2, 19, 52, 0)}, 2); next != 0 || !strings.Contains(why, "cap (2)") {
		t.Errorf("under a max concurrency of 2: rampNext = %d, %q", next, why)
	}
	if rampLimit(0) != MaxRampConcurrency || rampLimit(64) != 64 || rampLimit(1000) != MaxRampConcurrency {
		t.Errorf("rampLimit: %d %d %d", rampLimit(0), rampLimit(64), rampLimit(1000))
	}
	// The peak is the highest throughput, reached at the lowest
	// concurrency within 10% of it: 21 at 16 is 20 at 8 and noise.
	peak := rampPeak([]rampStep{st(1, 5, 50, 0), st(2, 10, 52, 0), st(4, 15, 60, 0), st(8, 20, 99, 0), st(16, 21, 200, 0)})
	if peak.Concurrency != 8 || peak.Throughput != 21 || searchConcurrency(peak) != 16 {
		t.Errorf("peak %+v, search concurrency %d: want 21 req/s at 8, 16", peak, searchConcurrency(peak))
	}
}

// TestSummaryAgreesWithTable: the answer's statements about the points
// are the table's result column read back. An interrupted search whose
// table printed "pass" at one point and "FAIL" at another once said "No
// point measured held the SLO; no point measured failed it": its passing
// and failing points were anchors, which the answer skipped and the table
// did not. Now both read searchVerdict.
func TestSummaryAgreesWithTable(t *testing.T) {
	slo := bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}
	pt := func(i int, v float64, role string, pass bool) SweepPoint {
		return SweepPoint{Summary: &bench.Summary{Requests: 10, Completed: 10, RequestThroughput: v},
			Info: bench.SweepInfo{Mode: bench.SweepSLO, By: bench.ByRequestRate, Index: i, Value: v, Role: role,
				SLO: []bench.Verdict{{Objective: slo[0], Pass: pass, ValueMs: map[bool]float64{true: 50, false: 150}[pass], Samples: 10}}}}
	}
	for _, pts := range [][]SweepPoint{
		{pt(1, 5, "synchronous", true), pt(2, 90, "ramp", false)},
		{pt(1, 5, "synchronous", true), pt(2, 9, "ramp", true), pt(3, 8, "", true), pt(4, 8.5, "", false)},
		{pt(1, 5, "", false)},
		{pt(1, 5, "", true), pt(2, 7, "", true)},
	} {
		r := &SweepResult{Spec: SweepSpec{Mode: bench.SweepSLO, SLO: slo}, Points: pts}
		r.stopped()
		var b strings.Builder
		if err := r.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		table := b.String()
		// The rows' result words, read back from the printed table.
		held, failedAt := 0.0, 0.0
		for _, p := range pts {
			row := regexp.MustCompile(`(?m)^\s*` + strconv.Itoa(p.Info.Index) + ` .*$`).FindString(table)
			switch {
			case strings.HasSuffix(strings.Fields(row)[len(strings.Fields(row))-1], "pass") || strings.Contains(row, "  pass"):
				held = max(held, p.Info.Value)
			case strings.Contains(row, "FAIL"):
				if failedAt == 0 || p.Info.Value < failedAt {
					failedAt = p.Info.Value
				}
			}
		}
		answer := r.Words()
		wantHeld := "No point measured held the SLO"
		if held > 0 {
			wantHeld = "The SLO held at " + bench.FormatValue(bench.ByRequestRate, held)
		}
		wantFailed := "no point measured failed it"
		if failedAt > 0 {
			wantFailed = "it failed at " + bench.FormatValue(bench.ByRequestRate, failedAt)
		}
		if !strings.Contains(answer, wantHeld) || !strings.Contains(answer, wantFailed) {
			t.Errorf("the table says held %v, failed %v; the answer:\n%s\ntable:\n%s", held, failedAt, answer, table)
		}
	}
}

// TestIdleStates: the queue gauges decide when the server exposes them;
// a probe's TTFT decides against the one-at-a-time baseline otherwise.
func TestIdleStates(t *testing.T) {
	for _, tc := range []struct {
		g    map[servermetrics.Kind]float64
		want idleState
	}{
		{map[servermetrics.Kind]float64{}, idleUnknown},
		{map[servermetrics.Kind]float64{servermetrics.KVUsage: 0.5}, idleUnknown},
		{map[servermetrics.Kind]float64{servermetrics.Running: 0, servermetrics.Waiting: 0}, idleYes},
		{map[servermetrics.Kind]float64{servermetrics.Running: 0}, idleYes},
		{map[servermetrics.Kind]float64{servermetrics.Running: 0, servermetrics.Waiting: 870}, idleBusy},
		{map[servermetrics.Kind]float64{servermetrics.Running: 1}, idleBusy},
	} {
		if got := gaugesIdle(tc.g); got != tc.want {
			t.Errorf("gaugesIdle(%v) = %v, want %v", tc.g, got, tc.want)
		}
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		ttft, base time.Duration
		want       idleState
	}{
		{0, 20 * ms, idleUnknown},
		{80 * ms, 20 * ms, idleYes},
		{91 * ms, 20 * ms, idleBusy},
		{35 * time.Second, 20 * ms, idleBusy},
	} {
		if got := probeIdle(tc.ttft, tc.base); got != tc.want {
			t.Errorf("probeIdle(%s, %s) = %v, want %v", tc.ttft, tc.base, got, tc.want)
		}
	}
}

// TestSLOSearchExhaustedClimbing: a search whose SLO still held at every
// point when it ran its most points has no failing end: its answer is a
// lower bound, named by the point limit, as every other limit of ours.
func TestSLOSearchExhaustedClimbing(t *testing.T) {
	w := SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 0.1, Start: 2, Max: 1024, MaxPoints: 3,
		SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}}}
	res := &SweepResult{Spec: w}
	run := func(v float64, role string, _ int) (*SweepPoint, error) {
		pt := SweepPoint{Summary: &bench.Summary{Requests: 10}, Info: bench.SweepInfo{Mode: w.Mode, By: w.By, Index: len(res.Points) + 1, Value: v,
			SLO: []bench.Verdict{{Objective: w.SLO[0], Pass: true}}}}
		res.Points = append(res.Points, pt)
		return &pt, nil
	}
	if err := (&Prepared{}).search(w, bench.ByRequestRate, res, run); err != nil {
		t.Fatal(err)
	}
	if res.Capacity != 8 || res.Bound != 0 || !res.Exhausted || res.BoundedBy != bench.BoundedMaxPoints || res.BoundLimit != 3 || !res.LowerBound() {
		t.Errorf("capacity %v, bound %v, exhausted %v, bounded by %q at %v; want at least 8, by slo_max_points at 3",
			res.Capacity, res.Bound, res.Exhausted, res.BoundedBy, res.BoundLimit)
	}
	if got := res.Words(); !strings.Contains(got, "at least 8 req/s, bounded by the most points a search runs, 3") {
		t.Errorf("answer %q", got)
	}
}
