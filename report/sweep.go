package report

import (
	"cmp"
	"fmt"
	"html/template"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
)

// sweepSections draws a sweep or SLO search: one row per point, and each
// latency against the output throughput the point reached, with the SLO's
// bounds and the highest passing point (the knee) marked.
func sweepSections(runs []Run) []section {
	var b strings.Builder
	b.WriteString(`<table class="compare"><tr><th>point</th><th>value</th><th>achieved req/s</th><th>output tok/s</th><th>TTFT p50</th><th>TTFT p99</th><th>ITL p50</th><th>ITL p99</th><th>E2E p90</th><th>result</th></tr>`)
	var knee *Run
	for i := range runs {
		r := &runs[i]
		s, w := r.Summary, r.Summary.Sweep
		// The result column is the console sweep table's, from the
		// same function: pass or what broke, and "(few samples)".
		verdict, cls := w.Verdict(s), ""
		if len(w.SLO) > 0 {
			cls = "better"
			if !w.Passed() {
				cls = "worse"
			} else if w.Role == "" && (knee == nil || w.Value > knee.Summary.Sweep.Value) {
				// An SLO search's anchors are no rate it tried: the
				// answer is among its points.
				knee = r
			}
		}
		fmt.Fprintf(&b, `<tr><td>%d</td><td class="num">%.4g</td><td class="num">%.2f</td><td class="num">%.1f</td><td class="num">%.1f</td><td class="num">%.1f</td><td class="num">%.1f</td><td class="num">%.1f</td><td class="num">%.1f</td><td class="%s">%s</td></tr>`,
			w.Index, w.Value, s.RequestThroughput, s.OutputThroughput, s.TTFT.Median, s.TTFT.P99, s.ITL.Median, s.ITL.P99, s.E2ELatency.P90,
			cls, template.HTMLEscapeString(cmp.Or(verdict, "–")))
	}
	b.WriteString(`</table>`)
	note := fmt.Sprintf("%s sweep over %s, %d points.", runs[0].Summary.Sweep.Mode, runs[0].Summary.Sweep.By, len(runs))
	if knee != nil {
		note += fmt.Sprintf(" Highest point meeting every objective: %.4g (%.1f output tok/s), marked on the curves.", knee.Summary.Sweep.Value, knee.Summary.OutputThroughput)
	}
	var charts []template.HTML
	for _, m := range []struct {
		id, name, metric string
		lo, hi           func(*bench.Summary) float64
		loName, hiName   string
	}{
		{"ttft", "TTFT", bench.MetricTTFT, func(s *bench.Summary) float64 { return s.TTFT.Median }, func(s *bench.Summary) float64 { return s.TTFT.P99 }, "p50", "p99"},
		{"itl", "ITL", bench.MetricITL, func(s *bench.Summary) float64 { return s.ITL.Median }, func(s *bench.Summary) float64 { return s.ITL.P99 }, "p50", "p99"},
		{"e2e", "E2E latency", bench.MetricE2EL, func(s *bench.Summary) float64 { return s.E2ELatency.Median }, func(s *bench.Summary) float64 { return s.E2ELatency.P90 }, "p50", "p90"},
	} {
		c := chart{ID: m.id + "-curve", Title: m.name + " against output throughput", XLabel: "output throughput (tok/s)", YLabel: m.name + " (ms)", YFromZero: true}
		var xs, lo, hi []float64
		for _, r := range runs {
			xs = append(xs, r.Summary.OutputThroughput)
			lo, hi = append(lo, m.lo(r.Summary)), append(hi, m.hi(r.Summary))
		}
		order(xs, lo, hi)
		c.Series = []series{{Name: m.loName, Kind: line, X: xs, Y: lo}, {Name: m.hiName, Kind: line, X: xs, Y: hi}}
		for _, v := range runs[0].Summary.Sweep.SLO {
			if v.Metric == m.metric {
				c.HMarks = append(c.HMarks, mark{At: v.MaxMs, Label: "SLO " + v.Objective.String(), Class: "slo"})
			}
		}
		if knee != nil {
			c.VMarks = append(c.VMarks, mark{At: knee.Summary.OutputThroughput, Label: "knee", Class: "knee"})
		}
		charts = append(charts, c.SVG())
	}
	return []section{{Title: "Sweep", Note: note, Table: template.HTML(b.String()), Charts: charts}}
}

// order sorts the points by x, keeping the ys with them.
func order(xs []float64, ys ...[]float64) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
			for _, y := range ys {
				y[j], y[j-1] = y[j-1], y[j]
			}
		}
	}
}
