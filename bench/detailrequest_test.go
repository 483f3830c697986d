package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDetailRequest: the one reader of the details arrays, request by
// request: which requests are successes, and which samples each has.
func TestDetailRequest(t *testing.T) {
	d := &Details{
		InputLens:       []int{10, 20, 30, 40, 50, 60, 70},
		OutputLens:      []int{5, 0, 4, 0, 0, 3, 1},
		TTFTs:           []float64{0.1, 0, 0.2, 0, 0, 0.3},
		ITLs:            [][]float64{{0.02}, nil, {0.01}, nil, nil, {0.1}, nil},
		ScheduledTimes:  []float64{0, 1, 2, 3, 4, 5, 6},
		SentTimes:       []float64{0, 1, 2, 3, 4, 5, 6},
		FirstTokenTimes: []float64{0.1, -1, 2.2, -1, -1, -1, 6.1},
		EndTimes:        []float64{0.5, 1.5, 2.8, 3.5, 4.5, -1, 6.2},
		Errors:          []string{"", "timeout", "", "HTTP 500", "empty output", "", ""},
		Outcomes:        []string{"success", "timeout", "", "", "empty_output", "success"},
	}
	type sample struct {
		OK              bool
		TTFT, E2E, TPOT float64
	}
	for _, tc := range []struct {
		name         string
		i            int
		emptySuccess bool
		want         sample
	}{
		{"success: TPOT is (E2E - TTFT) / (out - 1)", 0, false, sample{true, 0.1, 0.5, (0.5 - 0.1) / 4}},
		{"failed outcome: no samples", 1, false, sample{false, -1, -1, -1}},
		{"no outcome, no error: a success", 2, false, sample{true, 0.2, d.EndTimes[2] - d.SentTimes[2], (d.EndTimes[2] - d.SentTimes[2] - d.TTFTs[2]) / 3}},
		{"no outcome, an error: a failure", 3, false, sample{false, -1, -1, -1}},
		{"empty output: a failure", 4, false, sample{false, -1, -1, -1}},
		{"empty output under empty-success: a success without a first token", 4, true, sample{true, 0, 0.5, -1}},
		{"success without an end time: not measured", 5, false, sample{true, -1, -1, -1}},
		{"beyond the outcomes and the TTFTs: a success without TTFT or TPOT", 6, false, sample{true, -1, d.EndTimes[6] - d.SentTimes[6], -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Summary{Details: d, Compat: Compat{EmptySuccess: tc.emptySuccess}}
			r := s.DetailRequest(tc.i)
			got := sample{r.OK, r.TTFT, r.E2E, r.TPOT}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DetailRequest(%d) (-want +got):\n%s", tc.i, diff)
			}
			if r.Index != tc.i || r.InputLen != d.InputLens[tc.i] {
				t.Errorf("DetailRequest(%d) read request %d, input %d", tc.i, r.Index, r.InputLen)
			}
		})
	}
	s := &Summary{Details: d}
	n := 0
	for r := range s.DetailRequests() {
		if r.Index != n {
			t.Errorf("DetailRequests yielded request %d at position %d", r.Index, n)
		}
		n++
	}
	if n != d.Len() || n != 7 {
		t.Errorf("DetailRequests yielded %d requests, Len %d, want 7", n, d.Len())
	}
}
