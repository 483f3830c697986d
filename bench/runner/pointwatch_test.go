package runner

import (
	"testing"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/prober"
)

func TestBrokenAt(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		n    int
		want int
	}{
		// p99 of 1000: the rank floor(999×0.99) = 989, so the 11 highest
		// above the bound put the sample at 989 above it.
		{99, 1000, 11},
		{99, 100, 2},
		{90, 100, 11},
		{50, 21, 11},
		{99, 1, 1},
	} {
		if got := brokenAt(tc.p, tc.n); got != tc.want {
			t.Errorf("brokenAt(%v, %d) = %d, want %d", tc.p, tc.n, got, tc.want)
		}
	}
	// Never decreasing in n, so that a tally broken at its target is
	// broken at every count below it.
	for _, p := range []float64{50, 90, 99, 99.9} {
		for n := 1; n < 3000; n++ {
			if brokenAt(p, n+1) < brokenAt(p, n) {
				t.Fatalf("brokenAt(%v, %d) = %d > brokenAt(%v, %d) = %d", p, n, brokenAt(p, n), p, n+1, brokenAt(p, n+1))
			}
		}
	}
	if got := tailTarget(99, 10); got != 1000 {
		t.Errorf("tailTarget(99, 10) = %d, want 1000", got)
	}
	if got := tailTarget(90, 10); got != 100 {
		t.Errorf("tailTarget(90, 10) = %d, want 100", got)
	}
}

// TestBrokenAtAgreesWithSummary: with brokenAt(p, n) samples above a
// bound, the summary's percentile is above it.
func TestBrokenAtAgreesWithSummary(t *testing.T) {
	for _, n := range []int{20, 100, 500, 1000} {
		for _, p := range []float64{50, 90, 99} {
			k := brokenAt(p, n)
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = 1
				if i >= n-k {
					vals[i] = 3 // above the bound 2
				}
			}
			if got := percentileOf(vals, p); !(got > 2) {
				t.Errorf("n %d p%v: %d above the bound give a percentile of %v, want above 2", n, p, k, got)
			}
		}
	}
}

// percentileOf is NumPy's linear percentile of sorted values, the method
// the summary uses (bench's percentileAt).
func percentileOf(sorted []float64, p float64) float64 {
	vi := float64(len(sorted)-1) * p / 100
	lo := int(vi)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	g := vi - float64(lo)
	return sorted[lo] + (sorted[lo+1]-sorted[lo])*g
}

func TestDecide(t *testing.T) {
	ttft := bench.Objective{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 200}
	errs := bench.Objective{Metric: bench.MetricErrors, MaxPercent: 1}
	for _, tc := range []struct {
		name  string
		ts    []tally
		sized bool
		want  string
		hard  bool
	}{
		{"nothing yet", []tally{{obj: ttft, target: 1000}}, true, "", false},
		{"broken beyond saving", []tally{{obj: ttft, target: 1000, samples: 40, over: 11}}, true, bench.EndedBroken, true},
		{"ten over: the remaining samples can save it", []tally{{obj: ttft, target: 1000, samples: 40, over: 10}}, true, "", false},
		{"broken in a fixed-size point too", []tally{{obj: ttft, target: 120, samples: 30, over: 3}}, false, bench.EndedBroken, true},
		{"fixed size never ends early on a pass", []tally{{obj: ttft, target: 120, samples: 120}}, false, "", false},
		{"target reached", []tally{{obj: ttft, target: 1000, samples: 1000, over: 9}}, true, bench.EndedSamples, false},
		{"clear pass at the minimum", []tally{{obj: ttft, target: 1000, samples: 500, over: 2}}, true, bench.EndedSamples, false},
		{"close call goes on", []tally{{obj: ttft, target: 1000, samples: 500, over: 4}}, true, "", false},
		{"below the minimum", []tally{{obj: ttft, target: 1000, samples: 499}}, true, "", false},
		{"every objective must suffice", []tally{{obj: ttft, target: 1000, samples: 1000}, {obj: bench.Objective{Metric: bench.MetricE2EL, Percentile: 99, MaxMs: 1000}, target: 1000, samples: 499}}, true, "", false},
		{"no target: never decided", []tally{{obj: bench.Objective{Metric: bench.MetricITL, Percentile: 99, MaxMs: 1}, samples: 5000, over: 4000}}, false, "", false},
		// errors<=1% of a 1000-request point: 10 failures may pass, the
		// 11th breaks it whatever the rest do.
		{"errors: eleven failed", []tally{{obj: ttft, target: 1000, samples: 40}, {obj: errs, target: 1000, samples: 60, over: 11}}, true, bench.EndedBroken, true},
		{"errors: ten failed can still pass", []tally{{obj: ttft, target: 1000, samples: 40}, {obj: errs, target: 1000, samples: 60, over: 10}}, true, "", false},
		{"errors: a clear pass needs few failures", []tally{{obj: ttft, target: 1000, samples: 600}, {obj: errs, target: 1000, samples: 600, over: 4}}, true, "", false},
		{"errors: clear", []tally{{obj: ttft, target: 1000, samples: 600}, {obj: errs, target: 1000, samples: 600, over: 2}}, true, bench.EndedSamples, false},
		{"errors<=0%: one failure breaks", []tally{{obj: bench.Objective{Metric: bench.MetricErrors}, target: 100, samples: 3, over: 1}}, false, bench.EndedBroken, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, hard := decide(tc.ts, tc.sized)
			if got != tc.want || hard != tc.hard {
				t.Errorf("decide = %q, %v; want %q, %v", got, hard, tc.want, tc.hard)
			}
		})
	}
}

func TestGrowing(t *testing.T) {
	ramp := func(n int, from, to float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = from + (to-from)*float64(i)/float64(n-1)
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		v     []float64
		floor float64
		want  bool
	}{
		{"steady", ramp(90, 0.05, 0.06), 0.2, false},
		{"grows past the floor", ramp(90, 0.05, 2), 0.2, true},
		{"grows below the floor", ramp(90, 0.01, 0.1), 0.2, false},
		{"too few samples", ramp(30, 0.05, 2), 0.2, false},
	} {
		if got := growing(tc.v, tc.floor); got != tc.want {
			t.Errorf("%s: growing = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSettled: a point ends early on its samples only once its waits, in
// the order scheduled, show a queue that does not grow; a rate just above
// the completion capacity passes its first few hundred requests while its
// queue grows slowly.
func TestSettled(t *testing.T) {
	ramp := func(n int, from, to float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = from + (to-from)*float64(i)/float64(n-1)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		v    []float64
		want bool
	}{
		{"steady", ramp(90, 0.05, 0.06), true},
		{"slowly growing", ramp(600, 0.02, 0.15), false},
		{"grows by noise only", ramp(90, 0.001, 0.004), true},
		{"too few to tell", ramp(59, 0.05, 0.05), false},
	} {
		if got := settled(tc.v, 0.005); got != tc.want {
			t.Errorf("%s: settled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestNewPointWatchErrors: the errors objective plans as many requests as
// the most demanding percentile, and a failed request counts against it
// and ends the point once the failures are beyond saving.
func TestNewPointWatchErrors(t *testing.T) {
	slo := bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 200}, {Metric: bench.MetricErrors, MaxPercent: 1}}
	w := newPointWatch(slo, 10, 5000)
	if w.ts[1].target != w.ts[0].target || w.ts[0].target != 1000 {
		t.Fatalf("targets %d, %d: want 1000 each", w.ts[0].target, w.ts[1].target)
	}
	var cause error
	w.begin(func(err error) { cause = err })
	for i := range 11 {
		w.add(&prober.Result{Outcome: prober.OutcomeServerError})
		if got := w.result(); (i < 10) != (got == "") {
			t.Fatalf("after %d failures: ended %q", i+1, got)
		}
	}
	if w.result() != bench.EndedBroken || cause == nil || !w.halt.Load() {
		t.Errorf("ended %q, cause %v: want the point broken and cancelled", w.result(), cause)
	}
	// A request the run cancelled itself is not the server's failure.
	w = newPointWatch(slo, 10, 5000)
	for range 20 {
		w.add(&prober.Result{Outcome: prober.OutcomeCanceled})
	}
	if w.result() != "" || w.ts[1].samples != 0 {
		t.Errorf("cancelled requests counted: ended %q, %d samples", w.result(), w.ts[1].samples)
	}
}

// TestNewPointWatchValid: the valid objective plans as many judged answers
// as the most demanding percentile; an answer that failed a check counts
// against it, one that passed every check or was not judged (a failed
// request) does not, and the point ends once the invalid answers are
// beyond what the objective allows of its target.
func TestNewPointWatchValid(t *testing.T) {
	slo := bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 200}, {Metric: bench.MetricValid, MinPercent: 99}, {Metric: bench.MetricErrors, MaxPercent: 100}}
	w := newPointWatch(slo, 10, 5000)
	if w.ts[1].target != 1000 || w.ts[1].allowed() != 10 {
		t.Fatalf("valid target %d, allowed %d: want 1000 and 10", w.ts[1].target, w.ts[1].allowed())
	}
	var cause error
	w.begin(func(err error) { cause = err })
	ok := prober.Result{Outcome: prober.OutcomeSuccess, Checks: []prober.CheckResult{{Check: prober.CheckRegex, Result: prober.CheckPass}}}
	bad := prober.Result{Outcome: prober.OutcomeSuccess, Checks: []prober.CheckResult{{Check: prober.CheckRegex, Result: prober.CheckPass}, {Check: prober.CheckJSONSchema, Result: prober.CheckError}}}
	w.add(&ok)
	w.add(&prober.Result{Outcome: prober.OutcomeServerError})
	if w.ts[1].samples != 1 || w.ts[1].over != 0 {
		t.Fatalf("after a valid answer and a failed request: %d samples, %d over; want 1, 0", w.ts[1].samples, w.ts[1].over)
	}
	for i := range 11 {
		w.add(&bad)
		if got := w.result(); (i < 10) != (got == "") {
			t.Fatalf("after %d invalid answers: ended %q", i+1, got)
		}
	}
	if w.result() != bench.EndedBroken || cause == nil {
		t.Errorf("ended %q, cause %v: want the point broken and cancelled", w.result(), cause)
	}
}

// TestKeptGrowing: a point's queue kept growing when the median wait of
// its last third is at least twice its first third's and longer by more
// than noise; a steady one, one that grows by noise, and one too short to
// tell did not.
func TestKeptGrowing(t *testing.T) {
	ramp := func(n int, from, to float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = from + (to-from)*float64(i)/float64(n-1)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		v    []float64
		want bool
	}{
		{"steady", ramp(90, 0.05, 0.06), false},
		{"within the SLO but doubling", ramp(30, 0.05, 0.3), true},
		{"rising by half", ramp(300, 0.1, 0.15), false},
		{"grows by noise only", ramp(90, 0.001, 0.004), false},
		{"too few to tell", ramp(29, 0.05, 2), false},
		{"a slow last third cannot be told from growth", append(ramp(60, 0.05, 0.06), ramp(30, 0.5, 0.5)...), true},
		{"a slow spell in the middle", append(append(ramp(30, 0.05, 0.05), ramp(30, 1, 1)...), ramp(30, 0.2, 0.2)...), false},
	} {
		if got := keptGrowing(tc.v, waitNoise); got != tc.want {
			t.Errorf("%s: keptGrowing = %v, want %v", tc.name, got, tc.want)
		}
	}
}
