package report

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
)

// ttftCIRun is a run whose TTFT has a bounded interval on every figure
// but its P99, whose upper end the samples are too few to bound.
func ttftCIRun(method string) *bench.Summary {
	s := &bench.Summary{Backend: "vllm", Completed: 200, Duration: 10, RequestThroughput: 20}
	s.TTFT = bench.Stats{Mean: 100, Median: 90, P90: 150, P95: 170, P99: 200}
	open := bench.Unknown
	s.CI = &bench.CI{Confidence: bench.Confidence, Method: method,
		TTFT: bench.StatsCI{N: 200, Mean: bench.Interval{Lo: 95, Hi: 105}, Median: bench.Interval{Lo: 80, Hi: 97},
			P90: bench.Interval{Lo: 140, Hi: 165}, P95: bench.Interval{Lo: 160, Hi: 400}, P99: bench.Interval{Lo: 180, Hi: math.Inf(1)}},
		ITL:               bench.StatsCI{Mean: open, Median: open, P90: open, P95: open, P99: open},
		TPOT:              bench.StatsCI{Mean: open, Median: open, P90: open, P95: open, P99: open},
		E2E:               bench.StatsCI{Mean: open, Median: open, P90: open, P95: open, P99: open},
		RequestThroughput: open, OutputThroughput: open, TotalThroughput: open}
	return s
}

var (
	errbarRe = regexp.MustCompile(`<path class="errbar" data-series="(\d+)" data-value="([^"]*)" data-lo="([^"]*)" data-hi="([^"]*)" d="M([-0-9.]+) ([-0-9.]+)V([-0-9.]+)M`)
	barsRe   = regexp.MustCompile(`<g class="series bars s\d" data-points="\d+"><title>[^<]*</title>((?:<rect [^>]*/>)*)</g>`)
	rectRe   = regexp.MustCompile(`<rect x="([-0-9.]+)" y="([-0-9.]+)" width="([-0-9.]+)" height="([-0-9.]+)"/>`)
)

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPercentileErrorBars: the TTFT chart of a comparison holds one error
// bar per figure whose record holds a bounded interval (four of the first
// run's five: its P99's upper end is open) and none for the second run,
// whose record holds no intervals. Each bar is at its interval's ends: read
// back through the chart's scale, which the figure's own bar gives (its
// foot is 0, its top the value), it lands where the interval's ends do.
func TestPercentileErrorBars(t *testing.T) {
	noCI := ttftCIRun(bench.CIOrderStatistics)
	noCI.CI = nil
	charts := percentileCharts([]Run{{Name: "with", Summary: ttftCIRun(bench.CIOrderStatistics)}, {Name: "without", Summary: noCI}})
	svg := string(charts[0])
	if !strings.Contains(svg, `data-chart="ttft-percentiles"`) {
		t.Fatalf("first chart is not TTFT's:\n%s", svg)
	}
	checkSVG(t, svg)
	// The first series' bars, by their centre.
	g := barsRe.FindAllStringSubmatch(svg, -1)
	if len(g) != 2 {
		t.Fatalf("%d bar series, want 2", len(g))
	}
	type rect struct{ top, foot float64 }
	byX := map[string]rect{}
	for _, r := range rectRe.FindAllStringSubmatch(g[0][1], -1) {
		x, w := atof(t, r[1]), atof(t, r[3])
		y, h := atof(t, r[2]), atof(t, r[4])
		byX[strconv.FormatFloat(x+w/2, 'f', 1, 64)] = rect{y, y + h}
	}
	want := map[float64][2]float64{100: {95, 105}, 90: {80, 97}, 150: {140, 165}, 170: {160, 400}}
	got := errbarRe.FindAllStringSubmatch(svg, -1)
	if len(got) != len(want) {
		t.Fatalf("%d error bars, want %d (one per bounded interval, none for the run without):\n%s", len(got), len(want), svg)
	}
	for _, m := range got {
		if m[1] != "0" {
			t.Errorf("an error bar on series %s, which has no intervals", m[1])
		}
		v, lo, hi := atof(t, m[2]), atof(t, m[3]), atof(t, m[4])
		if w, ok := want[v]; !ok || w != [2]float64{lo, hi} {
			t.Errorf("error bar of %v is [%v, %v], want %v", v, lo, hi, w)
		}
		bar, ok := byX[m[5]]
		if !ok {
			t.Errorf("error bar of %v at x=%s is over no bar of its series (%v)", v, m[5], byX)
			continue
		}
		// py is linear with py(0) = foot, py(v) = top.
		py := func(y float64) float64 { return bar.foot - (bar.foot-bar.top)*y/v }
		for _, end := range []struct {
			name    string
			val     float64
			atPixel string
		}{{"lo", lo, m[6]}, {"hi", hi, m[7]}} {
			if p := atof(t, end.atPixel); math.Abs(p-py(end.val)) > 0.2 {
				t.Errorf("error bar of %v: its %s end is drawn at y=%v, the scale puts %v at %.2f", v, end.name, p, end.val, py(end.val))
			}
			if p := atof(t, end.atPixel); p < padT {
				t.Errorf("error bar of %v: its %s end y=%v is above the plot", v, end.name, p)
			}
		}
	}
	if !strings.Contains(svg, "error bars: 95 % confidence interval") {
		t.Error("the chart does not say what its error bars are")
	}
	// A chart whose records hold no bounded interval draws no bar, and
	// does not label bars it does not draw.
	if itl := string(charts[1]); strings.Contains(itl, "errbar") || strings.Contains(itl, "confidence interval") {
		t.Errorf("ITL has no bounded interval, yet its chart draws error bars:\n%s", itl)
	}
}

// TestPercentileNote: the page says what the error bars are; for a
// --stats sketch record, that the intervals include the sketch's rank
// error; and for records without intervals, that there are none.
func TestPercentileNote(t *testing.T) {
	page := func(runs ...Run) string {
		var b bytes.Buffer
		if err := Write(&b, runs, Options{Now: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	exact := page(Run{Name: "exact", Summary: ttftCIRun(bench.CIOrderStatistics)})
	if !strings.Contains(exact, "Error bars: each figure&#39;s 95 % confidence interval") || strings.Contains(exact, "sketch") {
		t.Errorf("an exact run's page does not say plainly what its error bars are")
	}
	sk := page(Run{Name: "a", Summary: ttftCIRun(bench.CIOrderStatistics)}, Run{Name: "sk", Summary: ttftCIRun(bench.CISketch)})
	if !strings.Contains(sk, "--stats sketch (sk): their percentiles&#39; intervals include the sketch&#39;s rank error (±1 %)") {
		t.Errorf("a comparison with a sketch run does not say its intervals include the sketch's error")
	}
	bare := ttftCIRun(bench.CIOrderStatistics)
	bare.CI = nil
	if p := page(Run{Name: "bare", Summary: bare}); !strings.Contains(p, "no confidence intervals") || strings.Contains(p, `class="errbar"`) {
		t.Errorf("a run without intervals: want a note saying so and no error bar")
	}
}

// TestCompareFewSamples: the comparison table marks a figure as the
// console marks its interval (bench.FewSamples), and only a figure whose
// record holds an interval: the P95 TTFT's [160, 400] is wider than 20 %
// of 170, the mean's [95, 105] is not, and the P99's open end is few.
func TestCompareFewSamples(t *testing.T) {
	var b bytes.Buffer
	bare := ttftCIRun(bench.CIOrderStatistics)
	bare.CI = nil
	runs := []Run{{Name: "a", Summary: ttftCIRun(bench.CIOrderStatistics)}, {Name: "b", Summary: bare}}
	if err := Write(&b, runs, Options{Now: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	p := b.String()
	// A run's own page shows the console's intervals block, marked by the
	// same rule.
	var one bytes.Buffer
	if err := Write(&one, runs[:1], Options{Now: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(one.String(), `P99 TTFT (ms):</td><td class="val">[180.00, …] (few samples)</td>`) ||
		!strings.Contains(one.String(), `Mean TTFT (ms):</td><td class="val">[95.00, 105.00]</td>`) {
		t.Error("the run page's intervals block does not mark the few-samples figures as the console does")
	}
	for _, tc := range []struct {
		row  string
		want bool
	}{{"Mean TTFT (ms)", false}, {"Median TTFT (ms)", false}, {"P99 TTFT (ms)", true}} {
		m := regexp.MustCompile(`<tr><td>` + regexp.QuoteMeta(tc.row) + `</td><td class="num">([^<]*)(<span class="few"[^>]*>\(few samples\)</span>)?</td><td class="num">([^<]*)</td>`).FindStringSubmatch(p)
		if m == nil {
			t.Errorf("%s: no row", tc.row)
			continue
		}
		if got := m[2] != ""; got != tc.want {
			t.Errorf("%s: marked few samples %v, want %v", tc.row, got, tc.want)
		}
	}
}
