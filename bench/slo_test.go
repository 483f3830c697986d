package bench

import (
	"math"
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
		{in: "ttft:p99<=500ms", want: SLO{{MetricTTFT, 99, 500}}},
		{in: "ttft:p99<=500ms,itl:p99<=50ms,e2e:p90<=10s", want: SLO{{MetricTTFT, 99, 500}, {MetricITL, 99, 50}, {MetricE2EL, 90, 10000}}},
		{in: " tpot:p99.9 <= 40 , e2el:p50<2.5s ", want: SLO{{MetricTPOT, 99.9, 40}, {MetricE2EL, 50, 2500}}},
		{in: "itl:p95<=800us", want: SLO{{MetricITL, 95, 0.8}}},
		{in: "", wantErr: "no objective"},
		{in: "ttft<=500ms", wantErr: "want metric:pP<=value"},
		{in: "ttft:p99>=500ms", wantErr: "want metric:pP<=value"},
		{in: "ttft:p99<=500m", wantErr: "want metric:pP<=value"},
		{in: "queue:p99<=5ms", wantErr: `unknown metric "queue"`},
		{in: "ttft:p100<=5ms", wantErr: "above 0 and below 100"},
		{in: "ttft:p0<=5ms", wantErr: "above 0 and below 100"},
		{in: "ttft:p99<=0ms", wantErr: "positive duration"},
		{in: "ttft:p99<=5ms,ttft:p99<=6ms", wantErr: "given twice"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSLO(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSLO(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParseSLO(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
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
		Completed: 10, ITLSamples: 90,
		Percentiles: []MetricStats{
			{Metric: MetricTTFT, Percentiles: []PercentileValue{{99, 300}, {90, 140}, {50, 100}}},
			{Metric: MetricITL, Percentiles: []PercentileValue{{99, 40}, {90, 30}, {50, 25}}},
		},
	}
	vs := slo.Check(sum)
	if len(vs) != 2 || !vs[0].Pass || vs[0].ValueMs != 140 || vs[1].Pass || vs[1].ValueMs != 25 {
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

func TestMinSamples(t *testing.T) {
	for p, want := range map[float64]int{50: 10, 90: 50, 99: 500, 99.9: 5000} {
		if got := MinSamples(p); got != want {
			t.Errorf("MinSamples(%v) = %d, want %d", p, got, want)
		}
	}
}
