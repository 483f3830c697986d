package report

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/servingprobe/servingprobe/bench"
)

// TestDetailReadersAgree: the significance tests' samples
// (bench.Summary.DetailSamples), the report's server section and the
// timeline count the same requests of a record as successes, a failed
// outcome and a missing one with an error being failures everywhere, and
// a missing outcome without an error (bench_serving's records have no
// outcomes) a success everywhere.
func TestDetailReadersAgree(t *testing.T) {
	st := &bench.ServerTiming{LoadDuration: 0.01, PromptEvalDuration: 0.02, EvalDuration: 0.1, TotalDuration: 0.2, EvalCount: 10}
	for _, tc := range []struct {
		name         string
		outcomes     []string
		errs         []string
		emptySuccess bool
		want         []int // the requests counted as successes
	}{
		{"outcomes recorded", []string{"success", "timeout", "success", "http_error"}, []string{"", "timeout", "", "HTTP 500"}, false, []int{0, 2}},
		{"outcomes missing past the second", []string{"success", "timeout"}, []string{"", "timeout", "", "HTTP 500"}, false, []int{0, 2}},
		{"no outcomes, as bench_serving writes", nil, []string{"", "timeout", "", "HTTP 500"}, false, []int{0, 2}},
		{"empty output under compat empty-success", []string{"success", "empty_output", "success", "timeout"}, []string{"", "empty output", "", "timeout"}, true, []int{0, 1, 2}},
		{"empty output without it", []string{"success", "empty_output", "success", "timeout"}, []string{"", "empty output", "", "timeout"}, false, []int{0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &bench.Summary{Compat: bench.Compat{EmptySuccess: tc.emptySuccess}, Details: &bench.Details{
				InputLens:       []int{10, 20, 30, 40},
				OutputLens:      []int{5, 3, 4, 2},
				TTFTs:           []float64{0.1, 0.2, 0.05, 0.1},
				ITLs:            [][]float64{{0.02, 0.02}, {0.1}, {0.01}, {0.3}},
				ScheduledTimes:  []float64{0, 1, 2, 3},
				SentTimes:       []float64{0, 1, 2, 3},
				FirstTokenTimes: []float64{0.1, 1.2, 2.05, 3.1},
				EndTimes:        []float64{0.18, 1.5, 2.08, 3.5},
				Errors:          tc.errs,
				Outcomes:        tc.outcomes,
				ServerTimings:   []*bench.ServerTiming{st, st, st, st},
			}}
			v := s.DetailSamples()
			if diff := cmp.Diff(tc.want, v.E2EReq); diff != "" {
				t.Errorf("DetailSamples' requests (-want +got):\n%s", diff)
			}
			sv, ok := serverRequestsOf(s)
			if !ok || sv.ok != len(tc.want) {
				t.Errorf("serverRequestsOf counted %d successes (ok %t), want %d", sv.ok, ok, len(tc.want))
			}
			// The two surfaces hold the same E2E and TPOT samples.
			approx := cmpopts.EquateApprox(0, 1e-12)
			if diff := cmp.Diff(v.E2E, sv.e2eMs, approx); diff != "" {
				t.Errorf("server section's E2E differs from DetailSamples' (-samples +server):\n%s", diff)
			}
			if diff := cmp.Diff(v.TPOT, sv.tpotMs, approx); diff != "" {
				t.Errorf("server section's TPOT differs from DetailSamples' (-samples +server):\n%s", diff)
			}
			// The timeline spreads the output of those successes alone.
			tl := s.Timeline(100)
			got := 0.0
			for _, x := range tl.TokPerS {
				got += x * tl.Width
			}
			want := 0.0
			for i, n := range s.Details.OutputLens {
				if slices.Contains(tc.want, i) {
					want += float64(n)
				}
			}
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("timeline spreads %v output tokens, want %v (the successes')", got, want)
			}
		})
	}
}
