package report

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/bench"
)

// TestRequestSamples: the charts draw each run's per-request samples as
// bench.DetailSamples defines them, the samples the summary and the
// significance tests count, and set each against its own request's send
// time and prompt length. A request whose response was not streamed has
// no first token (-1) and its TTFT as bench records it (the whole
// response's time, as bench_serving's --disable-stream reports it): it is
// drawn in TTFT as the summary counts it, and has no TPOT or ITL. Failed
// requests are in none.
func TestRequestSamples(t *testing.T) {
	d := &bench.Details{
		InputLens:       []int{10, 20, 30},
		OutputLens:      []int{5, 8, 0},
		TTFTs:           []float64{0.1, 0.25, 0},
		ITLs:            [][]float64{{0.01, 0.02, 0.03, 0.04}, nil, nil},
		ScheduledTimes:  []float64{0, 1, 2},
		SentTimes:       []float64{0, 1, 2},
		FirstTokenTimes: []float64{0.1, -1, -1},
		EndTimes:        []float64{0.5, 1.25, 2.5},
		Outcomes:        []string{"success", "success", "timeout"},
	}
	s := &bench.Summary{Backend: "vllm", Completed: 2, Failed: 1, Duration: 2.5, Details: d}
	v := s.DetailSamples()
	type drawn struct{ TTFTSent, TTFT, InLen, E2ESent, E2E, TPOT, ITL []float64 }
	got := drawn{at(d.SentTimes, v.TTFTReq), v.TTFT, at(d.InputLens, v.TTFTReq), at(d.SentTimes, v.E2EReq), v.E2E, v.TPOT, v.ITL}
	want := drawn{
		TTFTSent: []float64{0, 1}, TTFT: []float64{100, 250}, InLen: []float64{10, 20},
		E2ESent: []float64{0, 1}, E2E: []float64{500, 250},
		TPOT: []float64{100}, ITL: []float64{10, 20, 30, 40},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-request samples (-want +got):\n%s", diff)
	}
	// The page draws them: both successes' TTFTs against send time and
	// prompt length, as many as bench's samples.
	var b bytes.Buffer
	if err := write(&b, []Run{{Name: "r", Summary: s}}, Options{Now: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ttft-time", "ttft-prompt", "e2e-time"} {
		m := regexp.MustCompile(`data-chart="` + id + `" data-points="(\d+)"`).FindStringSubmatch(b.String())
		if m == nil || m[1] != "2" {
			t.Errorf("chart %s draws %v points, want 2 (bench's samples)", id, m)
		}
	}
}
