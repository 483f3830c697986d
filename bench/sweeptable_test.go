package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/prober"
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
		{"broke its steady state", SearchAnswer{Capacity: 200, Bound: 250, Confirmed: true, BrokeGrowing: true},
			[]string{"Broke first: the steady state (the wait to the first token kept growing through the point: a queue building up)."}},
		{"bounded by the prompt count", SearchAnswer{Capacity: 8, Bound: 9, Saturation: 9, BoundedBy: BoundedPrompts, BoundLimit: 125},
			[]string{"Request rate meeting the SLO: at least 8 req/s, bounded by the prompt count, 125 (--num-prompts;"}},
		{"bounded by the point limit", SearchAnswer{Capacity: 64, Exhausted: true, BoundedBy: BoundedMaxPoints, BoundLimit: 7, MaxPoints: 7},
			[]string{"at least 64 req/s, bounded by the most points a search runs, 7 (--slo-max-points"}},
		{"over the memory budget", SearchAnswer{Interrupted: true, OverMemory: true, Capacity: 4, Bound: 8, BoundedBy: BoundedMemory, BoundLimit: 256 << 20},
			[]string{"A point outgrew the bench window's memory budget after 2 points", "Bounded by the bench window's memory budget, 256 MiB: the capacity is at least 4 req/s"}},
		{"ramp and idle", SearchAnswer{Capacity: 8, Bound: 9, Saturation: 9.5, PeakConcurrency: 16, RampStop: "throughput flat", IdleTimeout: 45 * time.Second, NotIdlePoints: []int{1}},
			[]string{"Completion capacity: 9.5 req/s, measured by the concurrency ramp at 16 in flight (it stopped: throughput flat)",
				"not back at its idle state within 45s before point 1:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.search
			a.SLO, a.By, a.PointCount, a.RequestCount = "ttft:p99<=100ms", ByRequestRate, 2, 60
			got := a.Words()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Words() = %q\nlacks %q", got, w)
				}
			}
			// The table prints the same words.
			tab := &SweepTable{Mode: SweepSLO, SLO: a.SLO, Search: a, Points: []SweepRow{{Info: SweepInfo{Mode: SweepSLO, By: ByRequestRate, Index: 1, Value: 8}, Summary: &Summary{}}}}
			var b strings.Builder
			if err := tab.Write(&b); err != nil || !strings.Contains(b.String(), got) {
				t.Errorf("the table (%v) does not print the answer's words %q:\n%s", err, got, b.String())
			}
		})
	}
}

// TestSearchAnswerLine: the answer's JSONL line reads back (ParseLine) as
// the same answer, in the same words, NaN verdicts and durations
// included; ParseRecord refuses it as a run, and a run's record is no
// answer.
func TestSearchAnswerLine(t *testing.T) {
	for _, a := range []SearchAnswer{
		{SLO: "ttft:p99<=100ms", By: ByRequestRate, Capacity: 47.123456789, Bound: 51.7, Confirmed: true, GridPoints: 9, PointCount: 8, RequestCount: 900,
			Saturation: 51.7, PeakConcurrency: 8, RampStop: "throughput flat", Precision: 0.1, IdleTimeout: time.Minute, Budget: 5 * time.Minute,
			PointTime: 30 * time.Second, MaxPoints: 20, MinPointRequests: 10, NotIdlePoints: []int{3},
			Broke: []Verdict{{Objective: Objective{Metric: MetricTTFT, Percentile: 99, MaxMs: 100}, ValueMs: math.NaN(), Samples: 0}}},
		{SLO: "ttft:p99<=100ms", By: ByRequestRate, Unstable: true, Disagreements: 2, Capacity: 5, Bound: 5.4, Precision: 0.05, PointCount: 11, RequestCount: 1100,
			Broke: []Verdict{{Objective: Objective{Metric: MetricErrors, MaxPercent: 1}, ValueMs: math.NaN(), ValuePercent: 4.5, Samples: 200}}},
		{SLO: "e2el:p90<=2s", By: ByMaxConcurrency, Interrupted: true, OverBudget: true, Capacity: 12, Budget: 1500 * time.Millisecond, PointCount: 3},
	} {
		line, err := a.Line()
		if err != nil {
			t.Fatalf("Line(%+v): %v", a, err)
		}
		s, got, err := ParseLine(line)
		if err != nil || s != nil || got == nil {
			t.Fatalf("ParseLine(%s) = %v, %v, %v; want the answer alone", line, s, got, err)
		}
		if got.Words() != a.Words() {
			t.Errorf("read back, the answer says\n%s\nwritten, it said\n%s", got.Words(), a.Words())
		}
		if got.IdleTimeout != a.IdleTimeout || got.Budget != a.Budget || got.PointTime != a.PointTime || got.Capacity != a.Capacity ||
			len(got.Broke) != len(a.Broke) || (len(a.Broke) > 0 && !math.IsNaN(got.Broke[0].ValueMs)) {
			t.Errorf("read back %+v, want %+v", got, a)
		}
		if _, err := ParseRecord(line); err == nil || !strings.Contains(err.Error(), "answer") {
			t.Errorf("ParseRecord(answer line) = %v, want an error naming the answer", err)
		}
	}
	rec, err := (&Summary{Backend: "sglang", Requests: 1, Completed: 1}).Record(JSONOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if s, a, err := ParseLine(rec); err != nil || s == nil || a != nil {
		t.Errorf("ParseLine(a run's record) = %v, %v, %v; want the run", s, a, err)
	}
}

// TestSweepTableSLOPercentiles: an SLO search's table shows each latency
// objective's own percentile (p90 for ttft:p90), the value the point was
// judged by, and a sweep keeps its fixed columns.
func TestSweepTableSLOPercentiles(t *testing.T) {
	s := &Summary{Requests: 10, Completed: 10, RequestThroughput: 5, OutputThroughput: 50}
	s.TTFT.Median, s.TTFT.P99 = 20, 999
	s.Percentiles = []MetricStats{
		{Metric: MetricTTFT, Percentiles: []PercentileValue{{P: 90, Value: 123.4}}},
		{Metric: MetricE2EL, Percentiles: []PercentileValue{{P: 50, Value: 456.7}}},
	}
	slo, err := ParseSLO("ttft:p90<=200ms,e2el:p50<=60s,errors<=1%")
	if err != nil {
		t.Fatal(err)
	}
	row := SweepRow{Info: SweepInfo{Mode: SweepSLO, By: ByRequestRate, Index: 1, Value: 5, SLO: slo.Check(s)}, Summary: s}
	tab := &SweepTable{Mode: SweepSLO, SLO: slo.String(), Points: []SweepRow{row}}
	var b strings.Builder
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, want := range []string{"TTFT p50", "TTFT p90", "E2E p50"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("head %q lacks %q", lines[1], want)
		}
	}
	if strings.Contains(lines[1], "TTFT p99") || strings.Contains(b.String(), "999.0") {
		t.Errorf("the table shows p99, which the SLO does not name:\n%s", b.String())
	}
	if want := "    1            5       5.00        50.0       20.0      123.4      456.7         -  pass"; !strings.HasPrefix(lines[3], want) {
		t.Errorf("row\n got %q\nwant %q...", lines[3], want)
	}
}

// TestVerdictCut: requests a point cut in flight are said as cut, not
// counted among its failed.
func TestVerdictCut(t *testing.T) {
	s := &Summary{Requests: 20, Completed: 15, Failed: 5, RequestThroughput: 3,
		Outcomes: map[prober.Outcome]int{prober.OutcomeSuccess: 15, prober.OutcomeCanceled: 4, prober.OutcomeHTTP5xx: 1}}
	if s.Cut() != 4 || s.ServerFailed() != 1 {
		t.Fatalf("Cut() = %d, ServerFailed() = %d; want 4 and 1", s.Cut(), s.ServerFailed())
	}
	ok := Verdict{Objective: Objective{Metric: MetricTTFT, Percentile: 90, MaxMs: 100}, ValueMs: 50, Pass: true, Samples: 15, Enough: true}
	for _, tc := range []struct {
		info SweepInfo
		want string
	}{
		{SweepInfo{Role: "synchronous", SLO: []Verdict{ok}, Samples: 15, Ended: EndedTime}, "anchor: 3 req/s completed, 1 failed [15 samples, time cap, 4 cut]"},
		{SweepInfo{SLO: []Verdict{ok}, Samples: 15, Ended: EndedBudget}, "pass [15 samples, budget, 4 cut]"},
		{SweepInfo{}, "1 failed [4 cut]"},
	} {
		if got := tc.info.Verdict(s); got != tc.want {
			t.Errorf("Verdict() = %q, want %q", got, tc.want)
		}
	}
}
