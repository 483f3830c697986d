package benchrun

import (
	"reflect"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
)

// TestSweepTableHandsEveryField: Table copies every fact of the search
// and every setting its answer names; a field added to bench.SearchAnswer
// and not filled here would print a zero as if measured.
func TestSweepTableHandsEveryField(t *testing.T) {
	r := &SweepResult{
		Spec: SweepSpec{Mode: bench.SweepSLO, SLO: bench.SLO{{Metric: bench.MetricTTFT, Percentile: 99, MaxMs: 100}},
			Precision: 0.05, IdleTimeout: time.Second, Budget: time.Minute, PointTime: 7 * time.Second, MaxPoints: 9},
		Points:   []SweepPoint{{Info: bench.SweepInfo{Index: 1, Value: 3}, Summary: &bench.Summary{Requests: 5}}},
		Capacity: 1, Bound: 2, Broke: []bench.Verdict{{Pass: false}}, GridPoints: 3, Exhausted: true,
		Interrupted: true, OverBudget: true, Saturation: 4, PeakConcurrency: 5, RampStop: "flat",
		Confirmed: true, Disagreements: 6, Unstable: true, TooFewBelow: 0.5,
	}
	tab := r.Table()
	v := reflect.ValueOf(tab.Search)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("Table().Search.%s is not filled", v.Type().Field(i).Name)
		}
	}
	if tab.Mode != bench.SweepSLO || tab.SLO != r.Spec.SLO.String() || len(tab.Points) != 1 ||
		!reflect.DeepEqual(tab.Points[0].Info, r.Points[0].Info) || tab.Points[0].Summary != r.Points[0].Summary {
		t.Errorf("Table() = %+v, want the mode, the objectives and the points of %+v", tab, r)
	}
}
