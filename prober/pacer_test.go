package prober

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

func TestPacers(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	mustGamma := func(g *Gamma, err error) *Gamma {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	mustTrace := func(p *TraceReplay, err error) *TraceReplay {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	type step struct {
		elapsed time.Duration
		sent    uint64
		wait    time.Duration
		stop    bool
	}
	for _, tc := range []struct {
		name  string
		pacer Pacer
		steps []step
	}{
		// Everything is due at the start.
		{"constant burst", Constant{Rate: inf}, []step{
			{0, 0, 0, false},
			{time.Second, 1e6, -time.Second, false},
		}},
		{"constant zero rate is a burst", Constant{}, []step{{5 * time.Second, 7, -5 * time.Second, false}}},
		{"constant 1/s", Constant{Rate: 1}, []step{
			{0, 0, 0, false},
			{0, 1, time.Second, false},
			{500 * time.Millisecond, 1, 500 * time.Millisecond, false},
			{time.Second, 1, 0, false},
			{time.Second, 2, time.Second, false},
			// Late by 1.5 s: the wait is negative, the schedule unchanged.
			{3500 * time.Millisecond, 2, -1500 * time.Millisecond, false},
			{3500 * time.Millisecond, 4, 500 * time.Millisecond, false},
		}},
		{"constant 3/s rounds to the nanosecond", Constant{Rate: 3}, []step{
			{0, 1, 333333333, false},
			{0, 2, 666666667, false},
			{0, 3, time.Second, false},
		}},
		{"gamma infinite burstiness is constant", mustGamma(NewGamma(4, inf, 1)), []step{
			{0, 0, 0, false},
			{0, 1, 250 * time.Millisecond, false},
			{0, 8, 2 * time.Second, false},
			{time.Second, 2, -500 * time.Millisecond, false},
		}},
		{"poisson infinite rate is a burst", mustGamma(NewPoisson(inf, 1)), []step{
			{0, 0, 0, false},
			{2 * time.Second, 100, -2 * time.Second, false},
		}},
		{"linear ramp 1 to 3 over 3 requests", mustGamma(NewRamp(RampLinear, 1, 3, 3, inf, 1)), []step{
			{0, 0, 0, false},
			// Gap before request 1 at progress 1/2: 2 req/s.
			{0, 1, 500 * time.Millisecond, false},
			// Then at 3 req/s, and after the end the rate stays at 3.
			{0, 2, 833333333, false},
			{0, 3, 1166666667, false},
		}},
		{"exponential ramp 1 to 4 over 3 requests", mustGamma(NewRamp(RampExponential, 1, 4, 3, inf, 1)), []step{
			{0, 1, 500 * time.Millisecond, false},
			{0, 2, 750 * time.Millisecond, false},
		}},
		{"trace", mustTrace(NewTraceReplay([]time.Duration{10 * time.Second, 10 * time.Second, 12 * time.Second}, 0)), []step{
			{0, 0, 0, false},
			{0, 1, 0, false},
			{time.Second, 2, time.Second, false},
			{time.Second, 3, 0, true},
		}},
		{"trace slowed down", mustTrace(NewTraceReplay([]time.Duration{0, time.Second}, 2.5)), []step{
			{0, 1, 2500 * time.Millisecond, false},
		}},
		{"max duration", MaxDuration{Pacer: Constant{Rate: 2}, Max: time.Second}, []step{
			{0, 1, 500 * time.Millisecond, false},
			// Due at 1 s: not before the cap.
			{0, 2, 0, true},
			// Due at 0.5 s and the caller is late: still sent.
			{1200 * time.Millisecond, 1, -700 * time.Millisecond, false},
		}},
		// A burst is all due at 0, before any cap.
		{"max duration on a burst", MaxDuration{Pacer: Constant{}, Max: time.Second}, []step{
			{2 * time.Second, 50, -2 * time.Second, false},
		}},
		{"max duration of zero", MaxDuration{Pacer: Constant{}}, []step{
			{0, 0, 0, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range tc.steps {
				wait, stop := tc.pacer.Pace(s.elapsed, s.sent)
				if wait != s.wait || stop != s.stop {
					t.Errorf("Pace(%v, %d) = (%v, %v), want (%v, %v)", s.elapsed, s.sent, wait, stop, s.wait, s.stop)
				}
			}
		})
	}
}

func TestPacerErrors(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"poisson zero rate", second(NewPoisson(0, 1))},
		{"gamma NaN burstiness", second(NewGamma(1, math.NaN(), 1))},
		{"gamma zero burstiness", second(NewGamma(1, 0, 1))},
		{"ramp infinite end", second(NewRamp(RampLinear, 1, inf, 10, 1, 1))},
		{"ramp zero start", second(NewRamp(RampLinear, 0, 1, 10, 1, 1))},
		{"ramp no total", second(NewRamp(RampLinear, 1, 2, 0, 1, 1))},
		{"ramp unknown strategy", second(NewRamp("sine", 1, 2, 10, 1, 1))},
		{"trace unsorted", second(NewTraceReplay([]time.Duration{2, 1}, 1))},
		{"trace negative slowdown", second(NewTraceReplay(nil, -1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Errorf("constructor error = nil, want an error")
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

// The schedule of a random pacer is a function of the seed and the count
// only: asking in any order, and at any elapsed time, gives the same plan.
func TestGammaScheduleIsReproducible(t *testing.T) {
	t.Parallel()
	plan := func(g *Gamma, n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			w, _ := g.Pace(0, uint64(i))
			out[i] = w
		}
		return out
	}
	a, _ := NewGamma(100, 0.5, 7)
	b, _ := NewGamma(100, 0.5, 7)
	want := plan(a, 50)
	for _, i := range []uint64{49, 3, 3, 10, 0, 49} {
		elapsed := 123 * time.Millisecond
		w, _ := b.Pace(elapsed, i)
		if got := w + elapsed; got != want[i] {
			t.Errorf("Pace(%v, %d) planned %v, want %v", elapsed, i, got, want[i])
		}
	}
	for i := 1; i < len(want); i++ {
		if want[i] < want[i-1] {
			t.Fatalf("schedule goes backwards at %d: %v", i, want)
		}
	}
}

// Gap statistics over many draws: mean 1/rate and squared coefficient of
// variation 1/burstiness (1 for Poisson). Seeds are fixed, so the test is
// deterministic; the tolerances are several standard errors wide.
func TestGammaGapDistribution(t *testing.T) {
	t.Parallel()
	const rate, n = 50.0, 200_000
	for _, shape := range []float64{0.25, 0.5, 1, 2, 8} {
		g, err := NewGamma(rate, shape, 42)
		if err != nil {
			t.Fatal(err)
		}
		var sum, sumSq float64
		for i := uint64(1); i <= n; i++ {
			gap := g.gap(i)
			sum += gap
			sumSq += gap * gap
		}
		mean := sum / n
		cv2 := (sumSq/n - mean*mean) / (mean * mean)
		if math.Abs(mean*rate-1) > 0.02 {
			t.Errorf("burstiness %v: mean gap %v, want %v", shape, mean, 1/rate)
		}
		if math.Abs(cv2*shape-1) > 0.06 {
			t.Errorf("burstiness %v: squared coefficient of variation %v, want %v", shape, cv2, 1/shape)
		}
	}
}

// runPaced sends as a benchmark dispatcher does, in virtual time, and
// returns each send's offset from the start and the pacer's planned offset.
// lag is extra dispatcher work after each send (a slow loop).
func runPaced(p Pacer, lag func(i uint64) time.Duration) (sentAt, planned []time.Duration) {
	start := time.Now()
	for i := uint64(0); ; i++ {
		elapsed := time.Since(start)
		wait, stop := p.Pace(elapsed, i)
		if stop {
			return sentAt, planned
		}
		if wait > 0 {
			time.Sleep(wait)
		}
		sentAt = append(sentAt, time.Since(start))
		planned = append(planned, elapsed+wait)
		if lag != nil {
			time.Sleep(lag(i))
		}
	}
}

func TestPoissonVirtualTime(t *testing.T) {
	t.Parallel()
	const rate, span = 1000.0, 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		g, err := NewPoisson(rate, 1)
		if err != nil {
			t.Fatal(err)
		}
		sentAt, planned := runPaced(MaxDuration{Pacer: g, Max: span}, nil)
		want := rate * span.Seconds()
		if n := float64(len(sentAt)); math.Abs(n-want) > 0.01*want {
			t.Errorf("sent %v requests in %v at %v req/s, want within 1%% of %v", n, span, rate, want)
		}
		for i := range sentAt {
			if sentAt[i] != planned[i] {
				t.Fatalf("request %d sent at %v, planned at %v: the schedule drifts", i, sentAt[i], planned[i])
			}
		}
		if last := sentAt[len(sentAt)-1]; last >= span {
			t.Errorf("last request at %v, want before %v", last, span)
		}
	})
}

// A dispatcher that stalls does not lose arrivals: it catches up, so the
// count over the window and every arrival after the stall are as planned.
// Relative sleeps (sleep one gap after each send) would lose the stall time.
func TestPacerCatchesUpAfterLag(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		clean, _ := NewPoisson(200, 3)
		ref, _ := runPaced(MaxDuration{Pacer: clean, Max: 2 * time.Second}, nil)

		lagged, _ := NewPoisson(200, 3)
		stall := func(i uint64) time.Duration {
			if i == 10 {
				return 300 * time.Millisecond
			}
			return 0
		}
		sentAt, planned := runPaced(MaxDuration{Pacer: lagged, Max: 2 * time.Second}, stall)
		if len(sentAt) != len(ref) {
			t.Fatalf("sent %d requests with a 300ms stall, want %d as without it", len(sentAt), len(ref))
		}
		for i := range planned {
			if planned[i] != ref[i] {
				t.Fatalf("request %d planned at %v after a stall, want %v", i, planned[i], ref[i])
			}
		}
		var late int
		for i := range sentAt {
			if sentAt[i] > planned[i] {
				late++
			}
		}
		if late == 0 {
			t.Errorf("no request was sent late after a 300ms stall; the test does not exercise catching up")
		}
		if got, want := sentAt[len(sentAt)-1], ref[len(ref)-1]; got != want {
			t.Errorf("last request sent at %v, want %v (caught up)", got, want)
		}
	})
}
