package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/bench"
)

// TestRequestsOf: each latency holds only what was measured. A request
// whose response was not streamed has no first token (-1): it is drawn in
// E2E and not in TTFT, TPOT or ITL, and it is not dropped from E2E either.
// Failed requests are in none.
func TestRequestsOf(t *testing.T) {
	d := &bench.Details{
		InputLens:       []int{10, 20, 30},
		OutputLens:      []int{5, 8, 0},
		TTFTs:           []float64{0.1, -1, 0},
		ITLs:            [][]float64{{0.01, 0.02, 0.03, 0.04}, nil, nil},
		ScheduledTimes:  []float64{0, 1, 2},
		SentTimes:       []float64{0, 1, 2},
		FirstTokenTimes: []float64{0.1, -1, -1},
		EndTimes:        []float64{0.5, 1.25, 2.5},
		Outcomes:        []string{"success", "success", "timeout"},
	}
	got := requestsOf(d)
	want := reqs{
		ttftSent: []float64{0}, ttftMs: []float64{100}, inLen: []float64{10},
		e2eSent: []float64{0, 1}, e2eMs: []float64{500, 250},
		tpotMs: []float64{100}, itlMs: []float64{10, 20, 30, 40},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(reqs{})); diff != "" {
		t.Errorf("requestsOf (-want +got):\n%s", diff)
	}
}
