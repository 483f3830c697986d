package report

import (
	"bytes"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/prober"
)

// ulps returns v moved n ulps up.
func ulps(v float64, n int) float64 {
	for range n {
		v = math.Nextafter(v, math.Inf(1))
	}
	return v
}

// TestTicksTotal: ticks ends on any span and returns at most n+1 finite
// values. A span a few ulps wide used to loop for ever (the step was
// below half an ulp, so adding it never moved the tick) while the slice
// grew without bound.
func TestTicksTotal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi float64
	}{
		{"two ulps at 1", 1, ulps(1, 2)},
		{"one ulp at 1234.5 ms", 1234.5, ulps(1234.5, 1)},
		{"a few ulps at 1e15", 1e15, ulps(1e15, 3)},
		{"subnormal span at 0", 0, 5e-324},
		{"wider than a float64", -math.MaxFloat64, math.MaxFloat64},
		{"infinite", math.Inf(-1), math.Inf(1)},
		{"NaN top", 0, math.NaN()},
		{"ordinary", 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ticks(tc.lo, tc.hi, 6)
			if len(got) == 0 || len(got) > 7 {
				t.Fatalf("ticks(%v, %v, 6) = %d ticks, want 1 to 7", tc.lo, tc.hi, len(got))
			}
			for _, v := range got {
				if math.IsNaN(v) || (math.IsInf(v, 0) && !math.IsInf(tc.lo, 0)) {
					t.Errorf("ticks(%v, %v, 6) holds %v", tc.lo, tc.hi, v)
				}
			}
		})
	}
}

var (
	numAttrRe = regexp.MustCompile(`\b(x|y|width|height|d|transform|cx|cy)="([^"]*)"`)
	numRe     = regexp.MustCompile(`-?[0-9.]+(e[-+]?[0-9]+)?`)
)

// checkSVG requires an SVG to draw no NaN or infinity and to keep every
// coordinate near its frame (a value clamped to 1e300 is drawn at the
// frame's edge, not 1e300 pixels away).
func checkSVG(t *testing.T, svg string) {
	t.Helper()
	for _, m := range numAttrRe.FindAllStringSubmatch(svg, -1) {
		if strings.Contains(m[2], "NaN") || strings.Contains(m[2], "Inf") {
			t.Errorf("attribute %s=%q draws a non-number", m[1], m[2])
			continue
		}
		for _, n := range numRe.FindAllString(m[2], -1) {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || math.Abs(v) > 4*chartW {
				t.Errorf("attribute %s=%q: coordinate %s is off the chart", m[1], m[2], n)
			}
		}
	}
}

// TestChartTotal draws charts from degenerate values: each must come
// back, small, with only finite coordinates inside the frame.
func TestChartTotal(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	v := 1234.5
	for _, tc := range []struct {
		name string
		c    chart
		// drawn is how many points the first series must draw.
		drawn int
	}{
		{"one sample marked a few ulps apart", chart{Series: []series{{Kind: bars, X: []float64{v}, Y: []float64{1}}},
			VMarks: []mark{{At: v}, {At: ulps(v, 1)}, {At: ulps(v, 3)}}, YFromZero: true}, 1},
		{"points a few ulps apart", chart{Series: []series{{Kind: line, X: []float64{1, ulps(1, 1), ulps(1, 2)}, Y: []float64{5, ulps(5, 1), 5}}}}, 3},
		{"no series", chart{}, 0},
		{"NaN and infinities", chart{Series: []series{{Kind: points, X: []float64{nan, 1, inf, 2, -inf}, Y: []float64{1, nan, 2, 3, 4}}},
			VMarks: []mark{{At: nan}, {At: inf}}, HMarks: []mark{{At: -inf}}}, 1},
		{"only NaN", chart{Series: []series{{Kind: line, X: []float64{nan}, Y: []float64{nan}}}}, 0},
		{"±1e308", chart{Series: []series{{Kind: points, X: []float64{-1e308, 0, 1e308}, Y: []float64{1e308, 0, -1e308}}}}, 3},
		{"bars with NaN heights, stacked", chart{Stacked: true, Series: []series{{Kind: bars, X: []float64{0, 1}, Y: []float64{nan, 1e308}},
			{Kind: bars, X: []float64{0, 1}, Y: []float64{1, 1e308}}}, Categories: []string{"a", "b"}}, 1},
		{"bars a few ulps apart", chart{Series: []series{{Kind: bars, X: []float64{v, ulps(v, 1)}, Y: []float64{1, 2}}}}, 2},
		{"marks alone, far out", chart{VMarks: []mark{{At: 1e300}}, HMarks: []mark{{At: -1e300}}}, 0},
		{"fewer ys than xs", chart{Series: []series{{Kind: line, X: []float64{1, 2, 3}, Y: []float64{1}}}}, 1},
		{"timeline with NaN", chart{Segments: []segment{{Y: 0, X0: nan, X1: 1}, {Y: 1, X0: 0, X1: inf}, {Y: 2, X0: 0, X1: 1}}}, 0},
		{"x range a few ulps wide", chart{XRange: &[2]float64{0.5, ulps(0.5, 2)}, Series: []series{{Kind: line, X: []float64{0.5}, Y: []float64{0}}}}, 1},
		{"error bars NaN, infinite, reversed and far out", chart{Series: []series{{Kind: bars, X: []float64{0, 1, 2, 3, 4}, Y: []float64{1, 2, 3, 4, nan},
			Lo: []float64{nan, 0, 5, -1e308, 0}, Hi: []float64{1, inf, 4, 1e308, 1}}}, Categories: []string{"a", "b", "c", "d", "e"}}, 4},
		{"legend taller than the chart", chart{Height: 60, Series: []series{{Kind: bars, X: []float64{0}, Y: []float64{1}},
			{Kind: bars, X: []float64{0}, Y: []float64{1}}, {Kind: bars, X: []float64{0}, Y: []float64{1}}, {Kind: bars, X: []float64{0}, Y: []float64{1}}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.ID, tc.c.Title = "t", tc.name
			svg := string(tc.c.SVG())
			if len(svg) > 16<<10 {
				t.Errorf("%d bytes of SVG for a handful of points", len(svg))
			}
			checkSVG(t, svg)
			if len(tc.c.Series) > 0 {
				m := regexp.MustCompile(`class="series [^"]*" data-points="(\d+)"`).FindStringSubmatch(svg)
				if m == nil || m[1] != strconv.Itoa(tc.drawn) {
					t.Errorf("first series draws %v points, want %d", m, tc.drawn)
				}
			}
		})
	}
}

// oneRequest is the record of a run in which exactly one request
// succeeded: every distribution is one value, and the summary's
// percentiles of it sit an ulp from the value the report computes from
// the recorded times (the summary takes E2E from the measured duration,
// the report from end minus sent), which made the CDF's x range one ulp
// wide. The times are binary fractions, so that the report's values are
// exact.
func oneRequest() *bench.Summary {
	ttft, e2e := 1.0/64, 1.0/4
	ms := func(v float64) bench.Stats {
		u := ulps(v, 1)
		return bench.Stats{Mean: v, Median: u, P90: u, P95: u, P99: u, Max: u}
	}
	return &bench.Summary{
		Backend: "vllm", DatasetName: "random", Duration: 0.25, Completed: 1, TotalInputTokens: 10, TotalOutputTokens: 8,
		TTFT: ms(ttft * 1000), E2ELatency: ms(e2e * 1000), TPOT: ms(32), ITL: ms(32),
		Details: &bench.Details{
			InputLens: []int{10}, OutputLens: []int{8}, TTFTs: []float64{ttft},
			ITLs:           [][]float64{{1.0 / 32, 1.0 / 32, 1.0 / 32, 1.0 / 32, 1.0 / 32, 1.0 / 32, 1.0 / 32}},
			ScheduledTimes: []float64{0}, SentTimes: []float64{0.5}, FirstTokenTimes: []float64{0.5 + ttft},
			EndTimes: []float64{0.5 + e2e}, Outcomes: []string{"success"},
		},
	}
}

// TestWriteDegenerate: the report of a run is drawn whatever its values,
// and says so where its per-request data cannot be drawn.
func TestWriteDegenerate(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		edit func(s *bench.Summary)
		// note, if set, must be on the page.
		note string
	}{
		{"one request", func(*bench.Summary) {}, ""},
		{"NaN and infinite statistics", func(s *bench.Summary) {
			s.TTFT = bench.Stats{Mean: nan, Median: math.Inf(1), P90: math.Inf(-1), P99: nan}
			s.OutputThroughput = math.Inf(1)
		}, ""},
		{"NaN latencies", func(s *bench.Summary) {
			s.Details.TTFTs[0] = nan
			s.Details.ITLs[0] = []float64{nan, math.Inf(1), 1e308}
		}, ""},
		{"NaN time", func(s *bench.Summary) { s.Details.EndTimes[0] = nan }, "end_times[0] is NaN"},
		{"a time past a month", func(s *bench.Summary) { s.Details.EndTimes[0] = 1e300 }, "end_times[0] is 1e"},
		{"arrays of different lengths", func(s *bench.Summary) { s.Details.OutputLens = nil }, "output_lens has 0 entries for 1 requests"},
		{"no successful request", func(s *bench.Summary) { s.Details.Outcomes[0] = "timeout"; s.Completed = 0 }, ""},
		{"a huge count", func(s *bench.Summary) {
			s.Outcomes = map[prober.Outcome]int{prober.OutcomeTimeout: math.MaxInt}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := oneRequest()
			tc.edit(s)
			var b bytes.Buffer
			if err := write(&b, []Run{{Name: "r", Summary: s}}, Options{Now: time.Unix(0, 0)}); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			if n := strings.Count(page, `<svg class="chart"`); n == 0 {
				t.Error("no chart drawn")
			}
			if len(page) > 1<<20 {
				t.Errorf("%d bytes for one request", len(page))
			}
			for _, svg := range regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1) {
				checkSVG(t, svg)
			}
			if tc.note != "" && !strings.Contains(page, tc.note) {
				t.Errorf("the page does not say %q", tc.note)
			}
		})
	}
}

// TestWriteRecovers: a fault while drawing is an error from Write, not a
// panic, and nothing is written.
func TestWriteRecovers(t *testing.T) {
	var b bytes.Buffer
	err := Write(&b, []Run{{Name: "r", Summary: &bench.Summary{Details: &bench.Details{}}}}, Options{})
	if err != nil {
		t.Fatalf("an empty summary: %v", err)
	}
	b.Reset()
	if err := Write(&b, []Run{{Name: "r"}}, Options{}); err == nil || b.Len() != 0 {
		t.Errorf("a run without a summary: err %v, %d bytes written", err, b.Len())
	}
}

// FuzzReport draws the report of arbitrary records: one run in full,
// then two compared. It must return (a panic or a loop without end fails
// the fuzzer) and its output must stay within a bound of its input: a
// fixed frame plus a bounded amount per byte of the record.
func FuzzReport(f *testing.F) {
	for _, p := range []string{"vllm-random-strict-details", "vllm-random", "trace-image", "embedding-all-failed", "sglang-burst-compat"} {
		b, err := os.ReadFile("../testdata/" + p + ".jsonl.golden")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.TrimSpace(b))
	}
	f.Add([]byte(`{"backend":"vllm","completed":1,"median_ttft_ms":12.3,"p99_ttft_ms":12.300000000000002,` +
		`"input_lens":[10],"output_lens":[8],"ttfts":[0.0123],"itls":[[0.03]],"scheduled_times":[0],"sent_times":[0.001],` +
		`"first_token_times":[0.0133],"end_times":[0.2355],"request_outcomes":["success"]}`))
	f.Add([]byte(`{"backend":"vllm","sent_times":[0,1e308],"end_times":[1,2],"input_lens":[1]}`))
	f.Add([]byte(`{"backend":"vllm","mean_ttft_ms":NaN,"p99_ttft_ms":Infinity,"output_throughput":-Infinity}`))
	f.Add([]byte(`{"backend":"vllm","mean_ttft_ms":5,"p99_ttft_ms":1e308,"servingprobe":{"ci":{"confidence":0.95,"method":"sketch",` +
		`"ttft_ms":{"n":3,"mean":{"lo":9,"hi":1},"median":{"lo":-1e308,"hi":1e308},"p99":{"lo":1,"hi":null}}}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		s, err := bench.ParseRecord(line)
		if err != nil {
			return
		}
		// Records from a file: as Load would name them.
		for _, runs := range [][]Run{{{Name: "a", Summary: s}}, {{Name: "a", Summary: s}, {Name: "b", Summary: s}}} {
			var b bytes.Buffer
			if err := write(&b, runs, Options{Now: time.Unix(0, 0), MaxTimelineRequests: 50}); err != nil {
				return
			}
			// Each value in a record is at least a byte or two and draws
			// a point, a bar or a table cell of at most a few hundred
			// bytes; the frame, notes and summary table are fixed.
			if limit := 256<<10 + 1024*len(line)*len(runs); b.Len() > limit {
				t.Errorf("%d bytes of report from a %d-byte record (limit %d)", b.Len(), len(line), limit)
			}
			for _, svg := range regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(b.String(), -1) {
				checkSVG(t, svg)
			}
		}
	})
}
