package bench

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

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
		{spec: "x>1%,itl:p60>1%", err: "unknown figure \"x\""},
		// p50 names the median in every latency.
		{spec: "ttft:p50>+10%,e2e:p50>+1%", want: []Bound{{"ttft:median", '>', 10}, {"e2e:median", '>', 1}}},
		// A bound in the wrong direction would fail an unchanged run.
		{spec: "output_throughput>-5%", err: `"output_throughput>-5%": output_throughput regresses when it falls, so its bound is a fall: write output_throughput<-5%`},
		{spec: "request_throughput<+5%", err: "write request_throughput<-5%"},
		{spec: "ttft:p99<5%", err: `ttft:p99 regresses when it grows, so its bound is a rise: write ttft:p99>+5%`},
		{spec: "itl:mean>-2%", err: "write itl:mean>+2%"},
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
	if _, err := ParseGate("x>1%,itl:p60>1%"); err == nil || !strings.Contains(err.Error(), `"itl:p60"`) {
		t.Errorf("ParseGate reports %v, want both bad bounds", err)
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
	// Every figure but the share of valid answers, which runs without
	// answer checks do not have.
	if len(rows) != len(figures())-1 || len(rows) != 3+4*5 {
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

func TestStudentT(t *testing.T) {
	for _, tc := range []struct {
		q, df, want float64
	}{
		// Tables of Student's t.
		{0.975, 1, 12.706},
		{0.975, 4, 2.776},
		{0.975, 30, 2.042},
		{0.8, 4, 0.941},
		{0.995, 10, 3.169},
		{0.975, 1e6, 1.960},
	} {
		if got := studentQuantile(tc.q, tc.df); math.Abs(got-tc.want) > 1e-3 {
			t.Errorf("studentQuantile(%v, %v) = %.4f, want %v", tc.q, tc.df, got, tc.want)
		}
		if got := studentSF(tc.want, tc.df); math.Abs(got-(1-tc.q)) > 1e-4 {
			t.Errorf("studentSF(%v, %v) = %.5f, want %v", tc.want, tc.df, got, 1-tc.q)
		}
	}
	if got := studentSF(-2.776, 4); math.Abs(got-0.975) > 1e-4 {
		t.Errorf("studentSF(-2.776, 4) = %v, want 0.975", got)
	}
}

func TestWelch(t *testing.T) {
	// 1,2,3 against 4,5,6: d 3, each variance 1, se sqrt(2/3), df 4.
	d, se, df := welch([]float64{1, 2, 3}, []float64{4, 5, 6})
	if d != 3 || math.Abs(se-math.Sqrt(2.0/3)) > 1e-12 || math.Abs(df-4) > 1e-12 {
		t.Errorf("welch = %v, %v, %v; want 3, %v, 4", d, se, df, math.Sqrt(2.0/3))
	}
	// Unequal spreads: variances 1 and 10 over 3 and 5 values; df by
	// Welch–Satterthwaite, (1/3+10/5)^2 / ((1/3)^2/2 + (10/5)^2/4).
	_, se, df = welch([]float64{1, 2, 3}, []float64{0, 2, 4, 6, 8})
	v := 1.0/3 + 10.0/5
	if math.Abs(se-math.Sqrt(v)) > 1e-12 || math.Abs(df-v*v/(1.0/18+1)) > 1e-9 {
		t.Errorf("welch unequal = se %v df %v", se, df)
	}
}

// runSet is n runs whose every figure is value times drift (one factor a
// run, as a server's drift slows or speeds a whole run), the TTFT's times
// ttft besides, each with intervals of ±1% of the figure.
func runSet(drifts []float64, ttft float64) []*Summary {
	var out []*Summary
	for _, d := range drifts {
		s := &Summary{RequestThroughput: 10 / d, OutputThroughput: 100 / d, TotalThroughput: 300 / d}
		ci := &CI{Confidence: Confidence}
		set := func(v float64, st *Stats, sc *StatsCI) {
			*st = Stats{Mean: v, Median: v * 0.9, P90: v * 1.5, P95: v * 1.7, P99: v * 2}
			iv := func(x float64) Interval { return Interval{x * 0.99, x * 1.01} }
			*sc = StatsCI{Mean: iv(st.Mean), Median: iv(st.Median), P90: iv(st.P90), P95: iv(st.P95), P99: iv(st.P99)}
		}
		set(100*d*ttft, &s.TTFT, &ci.TTFT)
		set(10*d, &s.TPOT, &ci.TPOT)
		set(10*d, &s.ITL, &ci.ITL)
		set(250*d, &s.E2ELatency, &ci.E2E)
		ci.RequestThroughput = Interval{s.RequestThroughput * 0.99, s.RequestThroughput * 1.01}
		ci.OutputThroughput = Interval{s.OutputThroughput * 0.99, s.OutputThroughput * 1.01}
		ci.TotalThroughput = Interval{s.TotalThroughput * 0.99, s.TotalThroughput * 1.01}
		s.CI = ci
		out = append(out, s)
	}
	return out
}

// TestCompareRuns: the runs, not the requests, decide. One run a side
// with a drift far outside the runs' own intervals is marked nowhere (the
// per-request view would flag every row); three runs a side that drift
// alike are ~ everywhere; a TTFT 50% longer over the same drift is
// significant on the TTFT rows only.
func TestCompareRuns(t *testing.T) {
	for _, tc := range []struct {
		name       string
		base, cand []*Summary
		test       string
		wantSig    func(figure string) bool
	}{
		{"one run a side, drift", runSet([]float64{1}, 1), runSet([]float64{1.25}, 1), TestOneRun, func(string) bool { return false }},
		{"one run against three", runSet([]float64{1}, 1), runSet([]float64{1.3, 1.3, 1.3}, 1), TestOneRun, func(string) bool { return false }},
		{"three a side, same server", runSet([]float64{1, 1.08, 0.95}, 1), runSet([]float64{1.04, 0.97, 1.06}, 1), TestRuns, func(string) bool { return false }},
		{"three a side, ttft +50%", runSet([]float64{1, 1.02, 0.99}, 1), runSet([]float64{1.01, 0.98, 1.02}, 1.5), TestRuns,
			func(f string) bool { return strings.HasPrefix(f, "ttft:") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := CompareRuns(tc.base, tc.cand)
			if len(rows) != 23 {
				t.Fatalf("%d rows, want 23", len(rows))
			}
			for _, c := range rows {
				if c.Test != tc.test {
					t.Errorf("%s: test %s, want %s", c.Figure, c.Test, tc.test)
				}
				if c.Significant != tc.wantSig(c.Figure) {
					t.Errorf("%s: %v -> %v significant %v (%s), want %v", c.Figure, c.Base, c.New, c.Significant, c.Verdict(), tc.wantSig(c.Figure))
				}
				if nb, nc := c.Runs(); nb != len(tc.base) || nc != len(tc.cand) {
					t.Errorf("%s: runs %d v %d", c.Figure, nb, nc)
				}
				// Every change is shown with an interval: the runs' own
				// with one run a side, the test's with more.
				if (len(tc.base) == len(tc.cand) || tc.test == TestRuns) && c.DiffText() == "" {
					t.Errorf("%s: no Δ interval", c.Figure)
				}
				if c.Test == TestOneRun && c.Verdict() != "? (one run)" {
					t.Errorf("%s: verdict %q", c.Figure, c.Verdict())
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
		// A bench_serving record holds the figures, not the intervals:
		// the change shows, with no interval and no verdict.
		if c.Test != TestOneRun || c.Significant || c.DiffText() != "" {
			t.Errorf("%s against a bench_serving record: test %s, verdict %q, Δ %q", c.Figure, c.Test, c.Verdict(), c.DiffText())
		}
	}
	if _, err := CheckGate([]Bound{{"ttft:p99", '>', 5}}, Compare(old, &s)); err != nil {
		t.Errorf("gate on one run a side: %v", err)
	}
}

// TestRunLevelCoverage simulates the run-level test on drifting servers,
// seeded: each run's figure is the server's true figure times a drift
// drawn for the run (log-normal, its spread sd), times a smaller noise of
// its requests (1%). Over 2,000 pairs of sets of identical servers a case,
// the test at Alpha (a gate of one bound) is significant at most 5% of the
// time over all cases together, and each case within two binomial
// standard errors of 5% (a test whose level is 5% reads 5.1% in one case
// of 2,000 pairs by chance about half the time). The power for a 20%
// change is logged and held above a floor; docs/compare.md quotes these
// figures.
func TestRunLevelCoverage(t *testing.T) {
	const pairs = 2000
	rate := func(seed uint64, n int, sd, change float64) (float64, float64) {
		r := rand.New(rand.NewPCG(seed, uint64(n)))
		set := func(scale float64) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = 1000 * scale * math.Exp(sd*r.NormFloat64()) * (1 + 0.01*r.NormFloat64())
			}
			return v
		}
		hits, mde := 0, 0.0
		for range pairs {
			c := Comparison{BaseRuns: set(1), NewRuns: set(1 + change)}
			c.Base, c.New = mean(c.BaseRuns), mean(c.NewRuns)
			c.byRuns()
			if c.P < Alpha {
				hits++
			}
			mde += c.MinDetectable(Alpha)
		}
		return float64(hits) / pairs, mde / pairs
	}
	allowance := Alpha + 2*math.Sqrt(Alpha*(1-Alpha)/pairs)
	total := 0.0
	cases := []struct {
		runs       int
		sd         float64
		minPower20 float64
	}{
		{3, 0.05, 0.6},
		{5, 0.05, 0.95},
		{3, 0.10, 0.2},
		{5, 0.10, 0.6},
		{3, 0.20, 0.05},
		{5, 0.20, 0.15},
	}
	for i, tc := range cases {
		fp, mde := rate(uint64(2*i+1), tc.runs, tc.sd, 0)
		power, _ := rate(uint64(2*i+2), tc.runs, tc.sd, 0.2)
		total += fp
		t.Logf("runs %d a side, drift sd %.0f%%: false positives %.1f%%, power for +20%% %.1f%%, mean minimum detectable change %.1f%%",
			tc.runs, tc.sd*100, fp*100, power*100, mde)
		if fp > allowance {
			t.Errorf("runs %d, drift %v: false positives %.3f, want at most %.3f", tc.runs, tc.sd, fp, allowance)
		}
		if power < tc.minPower20 {
			t.Errorf("runs %d, drift %v: power for a 20%% change %.3f, want at least %v", tc.runs, tc.sd, power, tc.minPower20)
		}
	}
	if fp := total / float64(len(cases)); fp > Alpha {
		t.Errorf("false positives over every case %.4f, want at most %v", fp, Alpha)
	} else {
		t.Logf("false positives over %d pairs: %.2f%%", pairs*len(cases), fp*100)
	}
}

func TestCheckGate(t *testing.T) {
	sig := runSet([]float64{1, 1.02, 0.99}, 1)
	rows := CompareRuns(sig, runSet([]float64{1.01, 0.98, 1.02}, 1.5))
	same := CompareRuns(sig, runSet([]float64{1.01, 0.98, 1.02}, 1))
	one := Compare(runSet([]float64{1}, 1)[0], runSet([]float64{1}, 1.3)[0])
	for _, tc := range []struct {
		name   string
		spec   string
		rows   []Comparison
		failed bool
		reason string
		err    string
	}{
		{"runs, beyond and significant", "ttft:p99>+10%", rows, true, "beyond >+10%, significant: p<0.001 t", ""},
		{"runs, beyond, says the power", "ttft:p99>+10%", rows, true, "runs 3 v 3, whose spread lets the test detect a change of ", ""},
		{"runs, within", "ttft:p99>+60%", rows, false, "within >+60%: p<0.001 t", ""},
		{"runs, same server", "ttft:median>+1%", same, false, "within >+1%: ~ (p=", ""},
		{"runs, throughput", "output_throughput<-5%", same, false, "within <-5%: ~", ""},
		{"one run, beyond", "ttft:p99>+10%", one, true, "beyond >+10%; runs 1 v 1: judged against the bound alone, as one run cannot separate a change from the drift", ""},
		{"one run, within", "ttft:p99>+40%", one, false, "within >+40%; runs 1 v 1: judged against the bound alone", ""},
		{"a run lacks the figure", "ttft:p99>+5%", []Comparison{{Figure: "ttft:p99", Test: TestNone, Why: "a run lacks the figure"}}, false, "", "ttft:p99: cannot be tested: a run lacks the figure"},
		{"no such row", "tpot:p99>+5%", []Comparison{{Figure: "ttft:p99", Test: TestOneRun}}, false, "", "tpot:p99: the runs do not have this figure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bounds, err := ParseGate(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := CheckGate(bounds, tc.rows)
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
		{Figure: "ttft:p99", Label: "P99 TTFT (ms)", Base: 100, New: 110, Test: TestRuns, P: 0.03, se: 0.01, df: 4},
		{Figure: "itl:p99", Label: "P99 ITL (ms)", Base: 10, New: 10, Test: TestRuns, P: 0.5, se: 0.01, df: 4},
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
	rows := []Comparison{{Test: TestRuns, P: 0.01}, {Test: TestRuns, P: 0.04}, {Test: TestRuns, P: 0.03}, {Test: TestRuns, P: 0.5}, {Test: TestOneRun, P: math.NaN()}}
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
