package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMannWhitneyU(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
	}{
		// No overlap: U = 0, mean 12.5, sd sqrt(25/12*11); z = 12/4.787.
		{"separated", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0.012186},
		// Ties: midranks 1.5 1.5 3.5 3.5 5.5 5.5, U = 0.5, tie term 18,
		// sd sqrt(9/12*(7-18/30)); z = 3.5/2.19089.
		{"ties", []float64{1, 1, 2}, []float64{2, 3, 3}, 0.110148},
		{"same", []float64{1, 2, 3}, []float64{1, 2, 3}, 1},
		{"all equal", []float64{4, 4}, []float64{4, 4, 4}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MannWhitneyU(tc.x, tc.y)
			if math.Abs(got-tc.want) > 1e-5 {
				t.Errorf("MannWhitneyU(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
			}
			if back := MannWhitneyU(tc.y, tc.x); math.Abs(back-got) > 1e-12 {
				t.Errorf("MannWhitneyU not symmetric: %v and %v", got, back)
			}
		})
	}
	// Against the definition, U as the count of pairs x > y (ties half),
	// on samples with many ties.
	r := rand.New(rand.NewPCG(5, 6))
	x, y := make([]float64, 40), make([]float64, 55)
	for i := range x {
		x[i] = float64(r.IntN(8))
	}
	for i := range y {
		y[i] = float64(r.IntN(9))
	}
	u := 0.0
	for _, a := range x {
		for _, b := range y {
			switch {
			case a > b:
				u++
			case a == b:
				u += 0.5
			}
		}
	}
	counts := map[float64]float64{}
	for _, v := range append(slices.Clone(x), y...) {
		counts[v]++
	}
	ties := 0.0
	for _, t := range counts {
		ties += t*t*t - t
	}
	n1, n2 := float64(len(x)), float64(len(y))
	n := n1 + n2
	z := (math.Abs(u-n1*n2/2) - 0.5) / math.Sqrt(n1*n2/12*((n+1)-ties/(n*(n-1))))
	want := math.Erfc(z / math.Sqrt2)
	if got := MannWhitneyU(x, y); math.Abs(got-want) > 1e-12 {
		t.Errorf("MannWhitneyU on tied samples = %v, by the pair count %v", got, want)
	}
	if p := MannWhitneyU(nil, []float64{1}); !math.IsNaN(p) {
		t.Errorf("MannWhitneyU of an empty sample = %v, want NaN", p)
	}
}

// TestMannWhitneyUCalibration checks the p-value's calibration by
// simulation: two samples of the same distribution are found different
// at Alpha about Alpha of the time, and a shift of a third of a standard
// deviation in 200 samples a side nearly always.
func TestMannWhitneyUCalibration(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	draw := func(n int, shift float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = r.ExpFloat64() + shift
		}
		return xs
	}
	const trials = 2000
	same, shifted := 0, 0
	for range trials {
		if MannWhitneyU(draw(60, 0), draw(60, 0)) < Alpha {
			same++
		}
		if MannWhitneyU(draw(200, 0), draw(200, 0.33)) < Alpha {
			shifted++
		}
	}
	if rate := float64(same) / trials; rate < 0.035 || rate > 0.065 {
		t.Errorf("same distribution found different %.4f of the time, want about %v", rate, Alpha)
	}
	if rate := float64(shifted) / trials; rate < 0.9 {
		t.Errorf("a shift found %.4f of the time, want at least 0.9", rate)
	}
}

func TestDiffInterval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		a      float64
		ia     Interval
		b      float64
		ib     Interval
		lo, hi float64
	}{
		// Symmetric: the half-widths 3 and 4 add to 5.
		{"symmetric", 10, Interval{7, 13}, 20, Interval{16, 24}, 5, 15},
		// Asymmetric: lower uses b's lower (1) and a's upper (1); upper
		// b's upper (4) and a's lower (3).
		{"asymmetric", 10, Interval{7, 11}, 12, Interval{11, 16}, 2 - math.Sqrt2, 7},
		{"open", 10, Interval{7, math.Inf(1)}, 12, Interval{11, 16}, math.Inf(-1), 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DiffInterval(tc.a, tc.ia, tc.b, tc.ib)
			if math.Abs(got.Lo-tc.lo) > 1e-9 && got.Lo != tc.lo || math.Abs(got.Hi-tc.hi) > 1e-9 {
				t.Errorf("DiffInterval = %v, want [%v, %v]", got, tc.lo, tc.hi)
			}
		})
	}
}

// compareRuns summarises two synthetic runs, the second's TTFT from
// ttftMs instead of 40 ms, with details or without.
func compareRuns(t *testing.T, ttftMs float64, details bool) []Comparison {
	t.Helper()
	p := Params{Backend: "vllm", DatasetName: "random", RequestRate: 200, Duration: 5100 * time.Millisecond, Details: details}
	r1, rows := shiftedRun(1000, 5, 1, 40)
	base, err := Summarize(r1, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	r2, rows := shiftedRun(1000, 5, 2, ttftMs)
	cand, err := Summarize(r2, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	return Compare(&base, &cand)
}

// TestCompare checks each row's test and verdict on synthetic runs: two
// runs of the same workload (different seeds) are ~ everywhere; a TTFT
// 10% longer is significant on the TTFT rows and (as E2E includes the
// TTFT) the E2E rows, and nowhere else; the test is Mann–Whitney for the
// mean and median with details, the difference's interval otherwise.
func TestCompare(t *testing.T) {
	for _, details := range []bool{true, false} {
		name := map[bool]string{true: "details", false: "record"}[details]
		t.Run(name+"/same", func(t *testing.T) {
			for _, c := range compareRuns(t, 40, details) {
				if c.Significant {
					t.Errorf("%s: %v -> %v significant (%s), want ~", c.Figure, c.Base, c.New, c.Verdict())
				}
				if c.Test == TestNone {
					t.Errorf("%s: untested (%s)", c.Figure, c.Why)
				}
				wantMW := details && (strings.HasSuffix(c.Figure, ":mean") || strings.HasSuffix(c.Figure, ":median"))
				if (c.Test == TestMannWhitney) != wantMW {
					t.Errorf("%s: test %s, want Mann–Whitney %v", c.Figure, c.Test, wantMW)
				}
			}
		})
		t.Run(name+"/ttft+10%", func(t *testing.T) {
			for _, c := range compareRuns(t, 45, details) {
				affected := strings.HasPrefix(c.Figure, "ttft:") || strings.HasPrefix(c.Figure, "e2e:")
				// The percentiles' intervals of the E2E, 55-75 ms wide
				// with a 5 ms shift, need not see it; the TTFT's must.
				must := strings.HasPrefix(c.Figure, "ttft:") || (affected && c.Test == TestMannWhitney)
				switch {
				case must && !c.Significant:
					t.Errorf("%s: %v -> %v not significant (%s)", c.Figure, c.Base, c.New, c.Verdict())
				case !affected && c.Significant:
					t.Errorf("%s: %v -> %v significant (%s), want ~", c.Figure, c.Base, c.New, c.Verdict())
				}
			}
		})
	}
}

func TestCompareBenchServingRecord(t *testing.T) {
	results, rows := steadyRun(100, 5, 1)
	s, err := Summarize(results, rows, Params{Backend: "vllm", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	line, _ := s.Record(JSONOptions{StandardOnly: true})
	old, err := ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Compare(old, &s) {
		if c.Test != TestNone || c.Significant || !strings.HasPrefix(c.Verdict(), "? (") {
			t.Errorf("%s against a bench_serving record: test %s, verdict %q; want untested", c.Figure, c.Test, c.Verdict())
		}
	}
}

func TestParseGate(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []Bound
		err  string
	}{
		{spec: "ttft:p99>+5%,output_throughput<-3%", want: []Bound{{"ttft:p99", '>', 5}, {"output_throughput", '<', -3}}},
		{spec: " e2e:mean > 10% ", want: []Bound{{"e2e:mean", '>', 10}}},
		{spec: "itl:p99> +2.5 %", want: []Bound{{"itl:p99", '>', 2.5}}},
		{spec: "ttft>5%", err: `"ttft>5%": unknown figure "ttft"`},
		{spec: "ttft:p99=5%", err: `"ttft:p99=5%": want figure>+N% or figure<-N%`},
		{spec: "ttft:p99>5", err: `"ttft:p99>5": the bound must be a percentage, such as +5%`},
		{spec: "ttft:p99>five%", err: `"ttft:p99>five%": bound "five" is not a number`},
		{spec: "ttft:p99>NaN%", err: `bound "NaN" is not a number`},
		{spec: ",", err: "no bound given"},
		{spec: "x>1%,itl:p50>1%", err: "unknown figure \"x\""},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := ParseGate(tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseGate(%q) error %v, want %q", tc.spec, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseGate(%q): %v", tc.spec, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ParseGate(%q) = %v, want %v", tc.spec, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("ParseGate(%q)[%d] = %v, want %v", tc.spec, i, got[i], tc.want[i])
				}
			}
		})
	}
	// Both errors of a list, not the first.
	if _, err := ParseGate("x>1%,itl:p50>1%"); err == nil || !strings.Contains(err.Error(), `"itl:p50"`) {
		t.Errorf("ParseGate reports %v, want both bad bounds", err)
	}
}

func TestCheckGate(t *testing.T) {
	rows := []Comparison{
		{Figure: "ttft:p99", Label: "P99 TTFT (ms)", Base: 100, New: 110, Test: TestCI, Diff: Interval{4, 16}, P: 0.001},
		{Figure: "ttft:mean", Label: "Mean TTFT (ms)", Base: 100, New: 110, Test: TestMannWhitney, P: 0.2},
		{Figure: "itl:p99", Label: "P99 ITL (ms)", Base: 10, New: 10.2, Test: TestCI, Diff: Interval{0.1, 0.3}, P: 0.01},
		{Figure: "output_throughput", Label: "Output token throughput (tok/s)", HigherBetter: true, Base: 1000, New: 950, Test: TestCI, Diff: Interval{-80, -20}, P: 0.002},
		{Figure: "request_throughput", Label: "Request throughput (req/s)", HigherBetter: true, Base: 10, New: 9, Test: TestNone, Why: "no intervals in the record"},
	}
	for _, tc := range []struct {
		spec   string
		failed bool
		reason string
		err    string
	}{
		{spec: "ttft:p99>+5%", failed: true, reason: "P99 TTFT (ms) 100.00 -> 110.00 (+10.0%), Δ in [4.00, 16.00], beyond >+5%, significant: p=0.001 CI"},
		{spec: "ttft:p99>+15%", reason: "within >+15%"},
		{spec: "ttft:mean>+5%", reason: "beyond >+5% but not significant: ~ (p=0.200 U)"},
		// Significant but within the bound.
		{spec: "itl:p99>+5%", reason: "within >+5%"},
		{spec: "output_throughput<-3%", failed: true, reason: "(-5.0%), Δ in [-80.00, -20.00], beyond <-3%, significant"},
		{spec: "output_throughput<-10%", reason: "within <-10%"},
		{spec: "request_throughput<-3%", err: "request_throughput: cannot be tested: no intervals in the record"},
		{spec: "tpot:p99>+5%", err: "tpot:p99: the runs do not have this figure"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			bounds, err := ParseGate(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := CheckGate(bounds, rows)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("CheckGate(%s) error %v, want %q", tc.spec, err, tc.err)
				}
				return
			}
			if err != nil || len(res) != 1 {
				t.Fatalf("CheckGate(%s) = %v, %v", tc.spec, res, err)
			}
			if res[0].Failed != tc.failed || !strings.Contains(res[0].Reason, tc.reason) {
				t.Errorf("CheckGate(%s) failed %v %q, want %v containing %q", tc.spec, res[0].Failed, res[0].Reason, tc.failed, tc.reason)
			}
		})
	}
}

// TestCheckGateHolm checks that the gate adjusts over its own bounds: a
// p-value of 0.03 fails alone, and not beside a second bound's 0.5.
func TestCheckGateHolm(t *testing.T) {
	rows := []Comparison{
		{Figure: "ttft:p99", Label: "P99 TTFT (ms)", Base: 100, New: 110, Test: TestCI, P: 0.03},
		{Figure: "itl:p99", Label: "P99 ITL (ms)", Base: 10, New: 10, Test: TestCI, P: 0.5},
	}
	for _, tc := range []struct {
		spec   string
		failed bool
	}{{"ttft:p99>+5%", true}, {"ttft:p99>+5%,itl:p99>+5%", false}} {
		bounds, _ := ParseGate(tc.spec)
		res, err := CheckGate(bounds, rows)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Failed != tc.failed {
			t.Errorf("CheckGate(%s): ttft:p99 failed %v (%s), want %v", tc.spec, res[0].Failed, res[0].Reason, tc.failed)
		}
	}
}

func TestAdjustHolm(t *testing.T) {
	rows := []Comparison{{Test: TestCI, P: 0.01}, {Test: TestMannWhitney, P: 0.04}, {Test: TestCI, P: 0.03}, {Test: TestCI, P: 0.5}, {Test: TestNone, P: math.NaN()}}
	adjust(rows)
	for i, want := range []float64{0.04, 0.09, 0.09, 0.5} {
		if math.Abs(rows[i].PAdj-want) > 1e-12 {
			t.Errorf("row %d: PAdj %v, want %v", i, rows[i].PAdj, want)
		}
		if rows[i].Significant != (want < Alpha) {
			t.Errorf("row %d: significant %v at PAdj %v", i, rows[i].Significant, rows[i].PAdj)
		}
	}
	if rows[4].Significant || !math.IsNaN(rows[4].PAdj) {
		t.Errorf("untested row: %+v", rows[4])
	}
}

func TestCIPValue(t *testing.T) {
	// The interval's edge at 0 is p = Alpha.
	if p := ciPValue(2, Interval{0, 4}); math.Abs(p-Alpha) > 1e-9 {
		t.Errorf("ciPValue at the edge = %v, want %v", p, Alpha)
	}
	if p := ciPValue(-2, Interval{-5, 1}); p < Alpha {
		t.Errorf("ciPValue of an interval holding 0 = %v, want above %v", p, Alpha)
	}
	if p := ciPValue(2, Interval{math.Inf(-1), 4}); p != 1 {
		t.Errorf("ciPValue open toward 0 = %v, want 1", p)
	}
}

// TestFigureInterval: every row Compare labels reads back through
// FigureInterval with the value Compare compared and that figure's own
// interval (each figure here has a distinct value v and interval
// [v-1, v+1]); an unknown label, or a record without intervals, is false.
func TestFigureInterval(t *testing.T) {
	s := &Summary{RequestThroughput: 1, OutputThroughput: 2, TotalThroughput: 3}
	around := func(v float64) Interval { return Interval{v - 1, v + 1} }
	s.CI = &CI{Confidence: Confidence, RequestThroughput: around(1), OutputThroughput: around(2), TotalThroughput: around(3)}
	v := 10.0
	for _, f := range []struct {
		st *Stats
		ci *StatsCI
	}{{&s.TTFT, &s.CI.TTFT}, {&s.TPOT, &s.CI.TPOT}, {&s.ITL, &s.CI.ITL}, {&s.E2ELatency, &s.CI.E2E}} {
		for _, p := range []struct {
			v  *float64
			iv *Interval
		}{{&f.st.Mean, &f.ci.Mean}, {&f.st.Median, &f.ci.Median}, {&f.st.P90, &f.ci.P90}, {&f.st.P95, &f.ci.P95}, {&f.st.P99, &f.ci.P99}} {
			*p.v, *p.iv = v, around(v)
			v += 10
		}
	}
	rows := Compare(s, s)
	if len(rows) != 3+4*5 {
		t.Fatalf("Compare gave %d rows, want 23", len(rows))
	}
	for _, c := range rows {
		got, iv, ok := s.FigureInterval(c.Label)
		if !ok || got != c.Base || iv != around(c.Base) {
			t.Errorf("FigureInterval(%q) = %v, %v, %v; want %v, %v, true", c.Label, got, iv, ok, c.Base, around(c.Base))
		}
	}
	if _, _, ok := s.FigureInterval("Successful requests"); ok {
		t.Error("FigureInterval knows a row Compare does not test")
	}
	s.CI = nil
	if _, _, ok := s.FigureInterval("P99 TTFT (ms)"); ok {
		t.Error("FigureInterval of a record without intervals is ok")
	}
}
