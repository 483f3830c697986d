package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
)

// TestOneRequestReport: with one request every distribution is one value,
// and the summary's percentiles of it may differ by an ulp or two from the
// value the report computes from the recorded times. The chart's axis was
// then an ulp wide and its tick loop never ended (a bench --num-prompts 1
// --report grew until the kernel killed it, about one run in three). Here
// each offset is built on purpose: every page must end, with its charts and
// no NaN.
func TestOneRequestReport(t *testing.T) {
	const ttft, e2e = 0.0123456789, 0.0456789123 // seconds, as recorded
	for _, off := range []int{-2, -1, 0, 1, 2} {
		t.Run(fmt.Sprintf("percentiles %+d ulps", off), func(t *testing.T) {
			shift := func(ms float64) float64 {
				if off < 0 {
					for range -off {
						ms = ulps(-ms, 1) * -1
					}
					return ms
				}
				return ulps(ms, off)
			}
			stats := func(ms float64) bench.Stats {
				v := shift(ms)
				return bench.Stats{Mean: v, Median: v, P90: v, P99: v, Std: 0}
			}
			d := &bench.Details{
				InputLens:       []int{16},
				OutputLens:      []int{6},
				TTFTs:           []float64{ttft},
				ITLs:            [][]float64{{0.006, 0.0061, 0.0062, 0.0063, 0.0065}},
				ScheduledTimes:  []float64{0},
				SentTimes:       []float64{0},
				FirstTokenTimes: []float64{ttft},
				EndTimes:        []float64{e2e},
				Outcomes:        []string{"success"},
			}
			s := &bench.Summary{Backend: "vllm", Completed: 1, Requests: 1, Duration: e2e, Details: d,
				TTFT: stats(ttft * 1000), E2ELatency: stats(e2e * 1000)}
			var b bytes.Buffer
			if err := Write(&b, []Run{{Name: "one", Summary: s}}, Options{Now: time.Unix(0, 0)}); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			for _, id := range []string{"ttft-hist", "ttft-cdf", "e2e-cdf", "timeline"} {
				if !strings.Contains(page, `data-chart="`+id+`"`) {
					t.Errorf("the report has no %s chart", id)
				}
			}
			if strings.Contains(page, "NaN") {
				t.Errorf("the report draws NaN")
			}
		})
	}
}
