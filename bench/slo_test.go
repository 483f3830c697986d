package bench

import (
	"math"

	"github.com/servingprobe/servingprobe/prober"
	"slices"
	"strings"
	"testing"
)

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    SLO
		wantErr string
	}{
		{in: "ttft:p99<=500ms", want: SLO{{MetricTTFT, 99, 500, 0, 0}}},
		{in: "ttft:p99<=500ms,itl:p99<=50ms,e2e:p90<=10s", want: SLO{{MetricTTFT, 99, 500, 0, 0}, {MetricITL, 99, 50, 0, 0}, {MetricE2EL, 90, 10000, 0, 0}}},
		{in: " tpot:p99.9 <= 40ms , e2el:p50<=2.5s ", want: SLO{{MetricTPOT, 99.9, 40, 0, 0}, {MetricE2EL, 50, 2500, 0, 0}}},
		// "<" is refused with the form meant, never read as "<=".
		{in: "ttft:p99<500ms", wantErr: `invalid objective "ttft:p99<500ms": an objective is a bound the percentile may reach; write ttft:p99<=500ms ("<" is not read as "<=")`},
		{in: "errors<1%", wantErr: `write errors<=1%`},
		// A bare number names no unit: refused, with the units to choose.
		{in: "tpot:p99.9<=40", wantErr: `invalid objective "tpot:p99.9<=40": name the unit of 40: 40ms, 40s or 40us`},
		{in: "ttft:p99<2", wantErr: "name the unit of 2"},
		{in: "ttft:p50<=300ms", want: SLO{{MetricTTFT, 50, 300, 0, 0}}},
		{in: "itl:p95<=800us", want: SLO{{MetricITL, 95, 0.8, 0, 0}}},
		{in: "", wantErr: "no objective"},
		{in: "ttft<=500ms", wantErr: "want metric:pP<=value"},
		{in: "ttft:p99>=500ms", wantErr: "want metric:pP<=value"},
		{in: "ttft:p99<=500m", wantErr: "want metric:pP<=value"},
		{in: "queue:p99<=5ms", wantErr: `unknown metric "queue"`},
		{in: "ttft:p100<=5ms", wantErr: "above 0 and below 100"},
		{in: "ttft:p0<=5ms", wantErr: "above 0 and below 100"},
		{in: "ttft:p99<=0ms", wantErr: "positive duration"},
		{in: "ttft:p99<=5ms,ttft:p99<=6ms", wantErr: "given twice"},
		// The errors objective: given, it replaces the default; 0% and
		// 100% are the ends of its range.
		{in: "ttft:p99<=500ms,errors<=5%", want: SLO{{MetricTTFT, 99, 500, 0, 0}, {MetricErrors, 0, 0, 5, 0}}},
		{in: "errors<=0%,itl:p50<=20ms", want: SLO{{MetricErrors, 0, 0, 0, 0}, {MetricITL, 50, 20, 0, 0}}},
		{in: "errors<=100%", want: SLO{{MetricErrors, 0, 0, 100, 0}}},
		{in: "errors<=101%", wantErr: "at most 100%"},
		{in: "errors<=1", wantErr: "want errors<=P%"},
		{in: "errors:p99<=1%", wantErr: "want errors<=P%"},
		{in: "errors<=1%,errors<=2%", wantErr: "errors is given twice"},
		// The valid objective: a share of judged answers, at least P%.
		{in: "ttft:p99<=500ms,valid>=99%", want: SLO{{MetricTTFT, 99, 500, 0, 0}, {MetricValid, 0, 0, 0, 99}}},
		{in: "valid >= 99.5 %", want: SLO{{MetricValid, 0, 0, 0, 99.5}}},
		{in: "valid>=100%", want: SLO{{MetricValid, 0, 0, 0, 100}}},
		{in: "valid>99%", wantErr: `write valid>=99% (">" is not read as ">=")`},
		{in: "valid<=99%", wantErr: "want valid>=P%"},
		{in: "valid:p>=0.99", wantErr: "want valid>=P%"},
		{in: "valid>=0.99", wantErr: "want valid>=P%"},
		{in: "valid>=0%", wantErr: "above 0% and at most 100%"},
		{in: "valid>=101%", wantErr: "above 0% and at most 100%"},
		{in: "valid>=99%,valid>=98%", wantErr: "valid is given twice"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSLO(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSLO(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			want := tc.want
			if !slices.ContainsFunc(want, func(o Objective) bool { return o.Metric == MetricErrors }) {
				// Without one, an SLO counts failed requests against it.
				want = append(slices.Clone(want), Objective{Metric: MetricErrors, MaxPercent: DefaultMaxErrorPercent})
			}
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("ParseSLO(%q) = %v, %v; want %v", tc.in, got, err, want)
			}
			// The printed form parses back to the same objectives.
			if back, err := ParseSLO(got.String()); err != nil || !slices.Equal(back, got) {
				t.Errorf("round trip of %q: %v, %v", got.String(), back, err)
			}
		})
	}
}

// TestSLOCheck runs the accumulator on made-up results and checks the
// objectives against the summary's own percentiles.
func TestSLOCheck(t *testing.T) {
	slo, err := ParseSLO("ttft:p90<=150ms,itl:p50<=20ms")
	if err != nil {
		t.Fatal(err)
	}
	metrics, ps := slo.PercentileParams([]string{MetricTTFT}, []float64{99})
	if !slices.Equal(metrics, []string{MetricTTFT, MetricITL}) || !slices.Equal(ps, []float64{99, 90, 50}) {
		t.Fatalf("PercentileParams = %v %v", metrics, ps)
	}
	sum := &Summary{
		Completed: 10, ITLSamples: 90, Requests: 10,
		Percentiles: []MetricStats{
			{Metric: MetricTTFT, Percentiles: []PercentileValue{{99, 300}, {90, 140}, {50, 100}}},
			{Metric: MetricITL, Percentiles: []PercentileValue{{99, 40}, {90, 30}, {50, 25}}},
		},
	}
	vs := slo.Check(sum)
	if len(vs) != 3 || !vs[2].Pass || vs[2].Metric != MetricErrors || vs[2].ValuePercent != 0 || vs[2].Samples != 10 || !vs[0].Pass || vs[0].ValueMs != 140 || vs[1].Pass || vs[1].ValueMs != 25 {
		t.Errorf("verdicts %+v: want ttft p90 140 pass, itl p50 25 fail", vs)
	}
	if Passed(vs) {
		t.Error("Passed with a failing objective")
	}
	// Ten requests are too few for a p90 (50 needed), 90 gaps enough for a p50.
	if vs[0].Enough || vs[0].Samples != 10 || !vs[1].Enough || vs[1].Samples != 90 {
		t.Errorf("sample verdicts %+v", vs)
	}
	// No success: every objective fails, with no value.
	for _, v := range slo.Check(&Summary{}) {
		if v.Pass || !math.IsNaN(v.ValueMs) {
			t.Errorf("empty run: %+v", v)
		}
	}
	if Passed(nil) {
		t.Error("Passed(nil): an empty SLO must not pass by default")
	}
}

// TestSLOCheckErrors: failed requests count against a point through the
// errors objective, however fast the successes were; requests the run
// cancelled itself (a point ended once decided) are not the server's.
func TestSLOCheckErrors(t *testing.T) {
	slo, err := ParseSLO("ttft:p99<=500ms")
	if err != nil {
		t.Fatal(err)
	}
	fast := []MetricStats{{Metric: MetricTTFT, Percentiles: []PercentileValue{{99, 100}}}}
	for _, tc := range []struct {
		name                       string
		completed, failed, cancels int
		pass                       bool
		pct                        float64
	}{
		// What a server shedding load did: 53 of 557 requests failed
		// with a 5xx and the successes met the TTFT objective.
		{name: "53 of 557 failed", completed: 504, failed: 53, pass: false, pct: 100 * 53.0 / 557},
		{name: "1 of 100 failed: at the bound", completed: 99, failed: 1, pass: true, pct: 1},
		{name: "2 of 100 failed", completed: 98, failed: 2, pass: false, pct: 2},
		{name: "cancelled by the run", completed: 100, failed: 20, cancels: 20, pass: true, pct: 0},
		{name: "none failed", completed: 100, pass: true, pct: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := &Summary{Completed: tc.completed, Failed: tc.failed, Requests: tc.completed + tc.failed, Percentiles: fast}
			if tc.cancels > 0 {
				sum.Outcomes = map[prober.Outcome]int{prober.OutcomeCanceled: tc.cancels}
			}
			vs := slo.Check(sum)
			e := vs[len(vs)-1]
			if e.Metric != MetricErrors || e.Pass != tc.pass || math.Abs(e.ValuePercent-tc.pct) > 1e-9 || Passed(vs) != tc.pass || !vs[0].Pass {
				t.Errorf("verdicts %+v: want errors %v%% pass=%v (the TTFT objective passing)", vs, tc.pct, tc.pass)
			}
		})
	}
}

func TestMinSamples(t *testing.T) {
	for p, want := range map[float64]int{50: 10, 90: 50, 99: 500, 99.9: 5000} {
		if got := MinSamples(p); got != want {
			t.Errorf("MinSamples(%v) = %d, want %d", p, got, want)
		}
	}
}

// TestSLOCheckValid: the valid objective reads the summary's share of
// judged answers that passed every check (Answers.ValidPercent), at least
// its bound; a run that judged no answer fails it, with no value.
func TestSLOCheckValid(t *testing.T) {
	slo, err := ParseSLO("ttft:p99<=500ms,valid>=99%")
	if err != nil {
		t.Fatal(err)
	}
	fast := []MetricStats{{Metric: MetricTTFT, Percentiles: []PercentileValue{{99, 100}}}}
	for _, tc := range []struct {
		name          string
		judged, valid int
		pass          bool
		pct           float64
	}{
		{name: "99 of 100 valid: at the bound", judged: 100, valid: 99, pass: true, pct: 99},
		{name: "98 of 100 valid", judged: 100, valid: 98, pass: false, pct: 98},
		{name: "all valid", judged: 7, valid: 7, pass: true, pct: 100},
		{name: "none judged", pass: false, pct: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := &Summary{Completed: 100, Requests: 100, Percentiles: fast, Answers: Answers{Judged: tc.judged, Valid: tc.valid}}
			vs := slo.Check(sum)
			v := vs[1]
			if v.Metric != MetricValid || v.Pass != tc.pass || math.Abs(v.ValuePercent-tc.pct) > 1e-9 || v.Samples != tc.judged || Passed(vs) != tc.pass || !vs[0].Pass {
				t.Errorf("verdicts %+v: want valid %v%% of %d pass=%v (the TTFT objective passing)", vs, tc.pct, tc.judged, tc.pass)
			}
		})
	}
	// The search's words for it, and its verdict in a point's record
	// read back as written.
	vs := slo.Check(&Summary{Completed: 100, Requests: 100, Percentiles: fast, Answers: Answers{Judged: 200, Valid: 190}})
	if got, want := BrokeValue(vs[1]), "valid>=99% (95.0% of 200 judged answers valid)"; got != want {
		t.Errorf("BrokeValue = %q, want %q", got, want)
	}
	if got, want := BrokeValue(slo.Check(&Summary{})[1]), "valid>=99% (no answer was judged)"; got != want {
		t.Errorf("BrokeValue of no answer = %q, want %q", got, want)
	}
	s := &Summary{Backend: "vllm", Sweep: &SweepInfo{Mode: SweepSLO, By: ByRequestRate, Index: 1, Value: 4, SLO: vs}}
	rec, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), `{"metric": "valid", "min_percent": 99.0, "value_percent": 95.0, "pass": false, "samples": 200, "enough_samples": true}`) {
		t.Errorf("record's valid verdict: %s", rec)
	}
	back, err := ParseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Sweep.SLO[1]; got.Metric != MetricValid || got.MinPercent != 99 || got.ValuePercent != 95 || got.Pass || got.Samples != 200 {
		t.Errorf("read back %+v, want the valid verdict as written", got)
	}
}
