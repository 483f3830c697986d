package bench

import (
	"strings"
	"testing"
	"time"
)

// TestSweepTableWrite: a rate sweep's table, row by row, with the values
// read from each point's summary.
func TestSweepTableWrite(t *testing.T) {
	row := func(i int, v, thr, ttft float64) SweepRow {
		s := &Summary{Requests: 10, Completed: 10, RequestThroughput: thr, OutputThroughput: 10 * thr}
		s.TTFT.Median, s.TTFT.P99 = ttft, 2*ttft
		s.ITL.Median, s.ITL.P99, s.E2ELatency.P90 = 1, 3, 100
		return SweepRow{Info: SweepInfo{Mode: SweepRates, By: ByRequestRate, Index: i, Points: 2, Value: v}, Summary: s}
	}
	tab := &SweepTable{Mode: SweepRates, Points: []SweepRow{row(1, 2, 1.99, 20), row(2, 4, 3.9, 25)}}
	var b strings.Builder
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("table has %d lines, want title, two heads, two rows and a rule:\n%s", len(lines), b.String())
	}
	if !strings.Contains(lines[0], " Sweep: request rates ") || len(lines[0]) != 110 {
		t.Errorf("title %q, want the mode centred in 110 columns", lines[0])
	}
	for i, want := range []string{
		"    1            2       1.99        19.9       20.0       40.0       1.0       3.0      100.0         -  ",
		"    2            4       3.90        39.0       25.0       50.0       1.0       3.0      100.0         -  ",
	} {
		if got := lines[3+i]; !strings.HasPrefix(got, want) {
			t.Errorf("row %d\n got %q\nwant %q...", i+1, got, want)
		}
	}
	if lines[5] != strings.Repeat("=", 110) {
		t.Errorf("last line %q, want the closing rule", lines[5])
	}
	if strings.Contains(b.String(), "meeting the SLO") {
		t.Errorf("a sweep's table states an SLO answer:\n%s", b.String())
	}
	// No points, no table.
	b.Reset()
	if err := (&SweepTable{Mode: SweepRates}).Write(&b); err != nil || b.Len() != 0 {
		t.Errorf("empty sweep wrote %q, %v; want nothing", b.String(), err)
	}
}

// TestSearchAnswerNamesSettings: the answer names the search's settings
// it was handed (the point limit, the point time, the precision), not
// defaults of its own.
func TestSearchAnswerNamesSettings(t *testing.T) {
	pass := SweepRow{Info: SweepInfo{Mode: SweepSLO, By: ByRequestRate, Index: 1, Value: 8, SLO: []Verdict{{Pass: true}}}, Summary: &Summary{Requests: 40}}
	fail := SweepRow{Info: SweepInfo{Mode: SweepSLO, By: ByRequestRate, Index: 2, Value: 9, SLO: []Verdict{{Pass: false}}}, Summary: &Summary{Requests: 20}}
	for _, tc := range []struct {
		name   string
		search SearchAnswer
		want   []string
	}{
		{"bracketed and exhausted", SearchAnswer{Capacity: 8, Bound: 9, Confirmed: true, GridPoints: 4, Exhausted: true, MaxPoints: 7},
			[]string{"Highest request rate meeting the SLO: 8 req/s (held twice; it breaks by 9 req/s; the limit is within 12% of the answer)",
				"(--slo-max-points, slo_max_points in a bench window: 7)", "2 points, 60 requests; a fixed grid at the same precision over the values tried would run 4 points (about 120 requests)"}},
		{"too few below", SearchAnswer{Bound: 9, TooFewBelow: 0.25, MinPointRequests: 12, PointTime: 48 * time.Second},
			[]string{"No request rate tried meets the SLO (the lowest, 9 req/s, did not)", "below 0.25 req/s a point completes fewer than 12 requests within --slo-point-time (48s)"}},
		{"unstable", SearchAnswer{Unstable: true, Disagreements: 2, Precision: 0.05},
			[]string{"No stable answer: 2 times a request rate that held failed", "the precision (5%)"}},
		{"ramp and idle", SearchAnswer{Capacity: 8, Bound: 9, Saturation: 9.5, PeakConcurrency: 16, RampStop: "throughput flat", IdleTimeout: 45 * time.Second},
			[]string{"Completion capacity: 9.5 req/s, measured by the concurrency ramp at 16 in flight (it stopped: throughput flat)",
				"not back at its idle state within 45s before point 1:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := pass
			first.Info.NotIdle = tc.search.IdleTimeout > 0
			tab := &SweepTable{Mode: SweepSLO, SLO: "ttft:p99<=100ms", Points: []SweepRow{first, fail}, Search: tc.search}
			got := tab.Answer(ByRequestRate)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Answer() = %q\nlacks %q", got, w)
				}
			}
		})
	}
}
