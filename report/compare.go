package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
)

// metricRow is one line of the comparison table. Lower is better for
// latencies, higher for throughputs.
type metricRow struct {
	name         string
	higherBetter bool
	get          func(*bench.Summary) float64
}

var compareRows = []metricRow{
	{"Request throughput (req/s)", true, func(s *bench.Summary) float64 { return s.RequestThroughput }},
	{"Output token throughput (tok/s)", true, func(s *bench.Summary) float64 { return s.OutputThroughput }},
	{"Successful requests", true, func(s *bench.Summary) float64 { return float64(s.Completed) }},
	{"Failed requests", false, func(s *bench.Summary) float64 { return float64(s.Failed) }},
	{"Mean TTFT (ms)", false, func(s *bench.Summary) float64 { return s.TTFT.Mean }},
	{"Median TTFT (ms)", false, func(s *bench.Summary) float64 { return s.TTFT.Median }},
	{"P99 TTFT (ms)", false, func(s *bench.Summary) float64 { return s.TTFT.P99 }},
	{"Mean ITL (ms)", false, func(s *bench.Summary) float64 { return s.ITL.Mean }},
	{"Median ITL (ms)", false, func(s *bench.Summary) float64 { return s.ITL.Median }},
	{"P99 ITL (ms)", false, func(s *bench.Summary) float64 { return s.ITL.P99 }},
	{"Mean TPOT (ms)", false, func(s *bench.Summary) float64 { return s.TPOT.Mean }},
	{"P99 TPOT (ms)", false, func(s *bench.Summary) float64 { return s.TPOT.P99 }},
	{"Mean E2E latency (ms)", false, func(s *bench.Summary) float64 { return s.E2ELatency.Mean }},
	{"P99 E2E latency (ms)", false, func(s *bench.Summary) float64 { return s.E2ELatency.P99 }},
}

// compareSections puts several runs side by side: a table of the headline
// figures with each run's difference from the first (absolute and %),
// worse differences flagged, the latency percentiles on the same axes,
// and, where the runs have per-request data, their distributions overlaid.
func compareSections(runs []Run) []section {
	var b strings.Builder
	b.WriteString(`<table class="compare"><tr><th>metric</th>`)
	for i, r := range runs {
		fmt.Fprintf(&b, `<th>%s</th>`, template.HTMLEscapeString(r.Name))
		if i > 0 {
			fmt.Fprintf(&b, `<th>Δ vs %s</th><th>Δ %%</th>`, template.HTMLEscapeString(runs[0].Name))
		}
	}
	b.WriteString(`</tr>`)
	for _, row := range compareRows {
		base := row.get(runs[0].Summary)
		fmt.Fprintf(&b, `<tr><td>%s</td>`, row.name)
		for i, r := range runs {
			v := row.get(r.Summary)
			fmt.Fprintf(&b, `<td class="num">%.2f</td>`, v)
			if i == 0 {
				continue
			}
			diff := v - base
			pct := "–"
			if base != 0 {
				pct = fmt.Sprintf("%+.1f%%", 100*diff/math.Abs(base))
			}
			cls := ""
			if worse := (diff < 0) == row.higherBetter && diff != 0; worse {
				cls = "worse"
			} else if diff != 0 {
				cls = "better"
			}
			fmt.Fprintf(&b, `<td class="num %s">%+.2f</td><td class="num %s">%s</td>`, cls, diff, cls, pct)
		}
		b.WriteString(`</tr>`)
	}
	b.WriteString(`</table>`)
	secs := []section{
		{Title: "Differences", Note: "Each run against the first; red is worse (slower, or less throughput), green better.", Table: template.HTML(b.String())},
		{Title: "Latency percentiles", Charts: percentileCharts(runs)},
	}
	if cdfs := overlayCDFs(runs); len(cdfs) > 0 {
		secs = append(secs, section{Title: "Distributions", Charts: cdfs})
	}
	for _, r := range runs {
		secs = append(secs, section{Title: "Summary: " + r.Name, Table: tableHTML(r.Summary)})
	}
	return secs
}

// overlayCDFs draws each latency's distribution of every run that kept
// per-request data on one chart.
func overlayCDFs(runs []Run) []template.HTML {
	per := make([]reqs, 0, len(runs))
	var named []string
	for _, r := range runs {
		if d := r.Summary.Details; d != nil && len(d.SentTimes) > 0 {
			per = append(per, requestsOf(d))
			named = append(named, r.Name)
		}
	}
	if len(per) < 2 {
		return nil
	}
	var out []template.HTML
	for _, m := range []struct {
		id, name string
		get      func(reqs) []float64
	}{
		{"ttft", "TTFT", func(v reqs) []float64 { return v.ttftMs }},
		{"itl", "ITL", func(v reqs) []float64 { return v.itlMs }},
		{"e2e", "E2E latency", func(v reqs) []float64 { return v.e2eMs }},
	} {
		c := chart{ID: m.id + "-cdf-compare", Title: m.name + " cumulative distribution", XLabel: m.name + " (ms)", YLabel: "fraction ≤ x", YFromZero: true}
		for i, v := range per {
			if vals := m.get(v); len(vals) > 0 {
				x, y := cdf(vals)
				c.Series = append(c.Series, series{Name: named[i], Kind: line, X: x, Y: y})
			}
		}
		if len(c.Series) > 0 {
			out = append(out, c.SVG())
		}
	}
	return out
}
