package runner

import (
	"reflect"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
)

// TestSweepTableHandsTheAnswer: Table hands bench's table the answer the
// search filled, itself, with the points as they ran: no copy that a new
// field of the answer could miss.
func TestSweepTableHandsTheAnswer(t *testing.T) {
	r := &SweepResult{
		Spec: SweepSpec{Mode: bench.SweepSLO, SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}},
			Precision: 0.05, IdleTimeout: time.Second, Budget: time.Minute, PointTime: 7 * time.Second, MaxPoints: 9},
		Points: []SweepPoint{{Info: bench.SweepInfo{Index: 1, Value: 3}, Summary: &bench.Summary{Requests: 5}}},
		SearchAnswer: bench.SearchAnswer{Capacity: 1, Bound: 2, Broke: []bench.Verdict{{Pass: false}}, GridPoints: 3, Exhausted: true,
			Saturation: 4, PeakConcurrency: 5, RampStop: "flat", Confirmed: true, TooFewBelow: 0.5, PointCount: 1, RequestCount: 5},
	}
	tab := r.Table()
	if !reflect.DeepEqual(tab.Search, r.SearchAnswer) {
		t.Errorf("Table().Search = %+v, want the search's answer %+v", tab.Search, r.SearchAnswer)
	}
	if tab.Mode != bench.SweepSLO || tab.SLO != r.Spec.SLO.String() || len(tab.Points) != 1 ||
		!reflect.DeepEqual(tab.Points[0].Info, r.Points[0].Info) || tab.Points[0].Summary != r.Points[0].Summary {
		t.Errorf("Table() = %+v, want the mode, the objectives and the points of %+v", tab, r)
	}
}
