package report

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// TestCompareLabels: the comparison's percentile charts name their
// categories (they were labelled 0 to 4), and its table prints counts as
// integers (they printed as 193.00).
func TestCompareLabels(t *testing.T) {
	a, b := reasoningRun(t), reasoningRun(t)
	b.Completed, b.Failed = 38, 2
	page := render(t, Run{Name: "a", Summary: a}, Run{Name: "b", Summary: b})
	byID, _ := charts(page)
	svg, ok := byID["ttft-percentiles"]
	if !ok {
		t.Fatal("no ttft-percentiles chart")
	}
	var labels []string
	for _, m := range xTickRe.FindAllStringSubmatch(svg, -1) {
		labels = append(labels, m[2])
	}
	if got := strings.Join(labels, ","); got != "mean,p50,p90,p95,p99" {
		t.Errorf("percentile chart's x labels %q, want mean,p50,p90,p95,p99", got)
	}
	for _, row := range []struct{ name, want string }{
		// Counts print as integers; they are not coloured, since no
		// significance test covers them (significance.go).
		{"Successful requests", `<td class="num">40</td><td class="num">38</td><td class="num ">-2</td>`},
		{"Failed requests", `<td class="num">0</td><td class="num">2</td><td class="num ">+2</td>`},
	} {
		m := regexp.MustCompile(`<tr><td>` + row.name + `</td>(.*?)</tr>`).FindStringSubmatch(page)
		if m == nil || !strings.HasPrefix(m[1], row.want) {
			t.Errorf("row %s: %v, want cells starting %s", row.name, m, row.want)
		}
	}
}

// TestRunSummaryOnce: a run's page shows the console's table as small
// tables, the summary before the first chart, and the server's block once
// (it was in the monospace summary and again in its own section).
func TestRunSummaryOnce(t *testing.T) {
	s := reasoningRun(t)
	s.Server = []servermetrics.Report{vllmBlock(s)}
	page := render(t, Run{Name: "r", Summary: s})
	if n := strings.Count(page, "Server TTFT P50/P90/P99 (ms):"); n != 1 {
		t.Errorf("the server block's TTFT row is on the page %d times, want once", n)
	}
	if n := strings.Count(page, "Mean TTFAT (ms):"); n != 1 {
		t.Errorf("the reasoning block's TTFAT row is on the page %d times, want once", n)
	}
	if strings.Contains(page, `<pre`) {
		t.Error("the summary is still monospace text")
	}
	// Every row of the console's main sections is in the summary, with
	// the console's value.
	for _, sec := range s.TableSections() {
		if ownSections[sec.Title] {
			continue
		}
		for _, r := range sec.Rows {
			cell := "<td>" + escape(strings.TrimSpace(r.Label)) + `</td><td class="val">` + escape(r.Value) + "</td>"
			if !strings.Contains(page, cell) {
				t.Errorf("the summary lacks the console's row %q = %q", r.Label, r.Value)
			}
		}
	}
	summaryAt, chartAt := strings.Index(page, `<div class="summary">`), strings.Index(page, `<svg class="chart"`)
	if summaryAt < 0 || chartAt < summaryAt {
		t.Errorf("summary at %d, first chart at %d", summaryAt, chartAt)
	}
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// TestSweepFewSamples: the sweep table's result column is the console's
// (bench's Verdict): what broke, and "(few samples)" where a percentile
// had too few, which the page used to drop.
func TestSweepFewSamples(t *testing.T) {
	slo, err := bench.ParseSLO("ttft:p99<=100ms")
	if err != nil {
		t.Fatal(err)
	}
	var runs []Run
	for i, v := range []bench.Verdict{
		{Objective: slo[0], ValueMs: 50, Pass: true, Samples: 40, Enough: false},
		{Objective: slo[0], ValueMs: 150, Pass: false, Samples: 600, Enough: true},
	} {
		s := reasoningRun(t)
		s.Sweep = &bench.SweepInfo{Mode: bench.SweepSLO, By: bench.ByRequestRate, Index: i + 1, Value: float64(i + 1), SLO: []bench.Verdict{v}}
		runs = append(runs, Run{Name: strconv.Itoa(i), Summary: s})
	}
	page := render(t, runs...)
	for _, r := range runs {
		want := r.Summary.Sweep.Verdict(r.Summary)
		if !strings.Contains(page, ">"+escape(want)+"</td>") {
			t.Errorf("the sweep table lacks the console's result %q", want)
		}
	}
	if !strings.Contains(page, ">pass (few samples)</td>") || !strings.Contains(page, ">FAIL ttft:p99 150.0 ms</td>") {
		t.Errorf("results are not the console's:\n%s", page[strings.Index(page, "<table"):strings.Index(page, "</table>")])
	}
}

// TestLegendAbovePlot: a legend has its own band above the plot, so that
// it covers no data: every legend line sits above the plot's top.
func TestLegendAbovePlot(t *testing.T) {
	long := strings.Repeat("a long series name ", 4)
	c := chart{ID: "c", Title: "t", Series: []series{
		{Name: "one", Kind: line, X: []float64{0, 1}, Y: []float64{0, 10}},
		{Name: long, Kind: line, X: []float64{0, 1}, Y: []float64{10, 0}},
		{Name: long, Kind: line, X: []float64{0, 1}, Y: []float64{5, 5}},
	}}
	svg := string(c.SVG())
	axis := regexp.MustCompile(`<path class="axis" d="M\d+ (\d+) V`).FindStringSubmatch(svg)
	if axis == nil {
		t.Fatal("no axis")
	}
	top, _ := strconv.Atoi(axis[1])
	legends := regexp.MustCompile(`<text class="legend s\d" x="\d+" y="(\d+)">`).FindAllStringSubmatch(svg, -1)
	if len(legends) != 3 {
		t.Fatalf("%d legend lines, want 3", len(legends))
	}
	for _, l := range legends {
		if y, _ := strconv.Atoi(l[1]); y >= top {
			t.Errorf("a legend line at y=%d, inside the plot (top %d)", y, top)
		}
	}
	// The plot keeps its height: the chart grows by the band.
	vb := regexp.MustCompile(`viewBox="0 0 640 (\d+)"`).FindStringSubmatch(svg)
	if h, _ := strconv.Atoi(vb[1]); h-top != chartH-padT {
		t.Errorf("plot height %d, want %d", h-top, chartH-padT)
	}
}

// TestCountAxis: a count's axis (a histogram of one request) has whole
// ticks only, not 0.2, 0.4, ...
func TestCountAxis(t *testing.T) {
	c := chart{ID: "h", YFromZero: true, YCounts: true, Series: []series{{Kind: bars, X: []float64{12.5}, Y: []float64{1}}}}
	svg := string(c.SVG())
	for _, m := range regexp.MustCompile(`<text class="tick" x="\d+" y="[0-9.]+" text-anchor="end">([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
		if strings.Contains(m[1], ".") {
			t.Errorf("count axis tick %q", m[1])
		}
	}
}

// TestMarkLabelsApart: the labels of marks close together (p50 and p90 of
// a narrow distribution) are on different rows, not drawn over each
// other.
func TestMarkLabelsApart(t *testing.T) {
	c := chart{ID: "m", Series: []series{{Kind: line, X: []float64{0, 100}, Y: []float64{0, 1}}},
		VMarks: []mark{{At: 50, Label: "p50"}, {At: 51, Label: "p90"}, {At: 90, Label: "p99"}}}
	labels := regexp.MustCompile(`<text class="mlabel" x="[0-9.]+" y="(\d+)">(p\d+)</text>`).FindAllStringSubmatch(string(c.SVG()), -1)
	y := map[string]string{}
	for _, l := range labels {
		y[l[2]] = l[1]
	}
	if len(y) != 3 || y["p50"] == y["p90"] || y["p50"] != y["p99"] {
		t.Errorf("label rows %v: want p90 under p50, p99 on p50's row", y)
	}
}

// TestSweepSLOPercentiles: an SLO search's table on the page shows the
// percentile its objective names, as the console's does (p90 for
// ttft:p90), not a fixed p99.
func TestSweepSLOPercentiles(t *testing.T) {
	slo, err := bench.ParseSLO("ttft:p90<=100ms")
	if err != nil {
		t.Fatal(err)
	}
	var runs []Run
	for i := range 2 {
		s := reasoningRun(t)
		s.Sweep = &bench.SweepInfo{Mode: bench.SweepSLO, By: bench.ByRequestRate, Index: i + 1, Value: float64(i + 1),
			SLO: []bench.Verdict{{Objective: slo[0], ValueMs: 50, Pass: true, Samples: 40}}}
		runs = append(runs, Run{Name: strconv.Itoa(i), Summary: s})
	}
	page := render(t, runs...)
	i := strings.Index(page, `<th>point</th>`)
	if i < 0 {
		t.Fatalf("no sweep table on the page")
	}
	table := page[i:]
	table = table[:strings.Index(table, "</table>")]
	if !strings.Contains(table, "<th>TTFT p90</th>") || strings.Contains(table, "<th>TTFT p99</th>") {
		t.Errorf("the search's table does not show the SLO's percentile:\n%s", table)
	}
}
