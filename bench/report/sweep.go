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
// bounds and, for a search, its answer marked (the knee). The answer is
// the one the search stored (Run.Search), stated in its own words, so that
// the page says what the console said; a search without one (a file
// written before the answer was stored) says so rather than derive one
// from the points.
func sweepSections(runs []Run) []section {
	var b strings.Builder
	// The latency columns are the console table's: an SLO search's show
	// the percentiles its objectives name.
	infos := make([]*bench.SweepInfo, len(runs))
	for i := range runs {
		infos[i] = runs[i].Summary.Sweep
	}
	cols := bench.LatencyColumns(runs[0].Summary.Sweep.Mode, infos)
	b.WriteString(`<table class="compare"><tr><th>point</th><th>value</th><th>achieved req/s</th><th>output tok/s</th>`)
	for _, c := range cols {
		fmt.Fprintf(&b, `<th>%s</th>`, c.Name())
	}
	b.WriteString(`<th>result</th></tr>`)
	var answer *bench.SearchAnswer
	search := false
	for i := range runs {
		r := &runs[i]
		s, w := r.Summary, r.Summary.Sweep
		search = search || w.Mode == bench.SweepSLO
		if r.Search != nil {
			answer = r.Search
		}
		// The result column is the console sweep table's, from the
		// same function: pass or what broke, and "(few samples)".
		verdict, cls := w.Verdict(s), ""
		if len(w.SLO) > 0 {
			cls = "better"
			if !w.Passed() {
				cls = "worse"
			}
		}
		fmt.Fprintf(&b, `<tr><td>%d</td><td class="num">%.4g</td><td class="num">%.2f</td><td class="num">%.1f</td>`,
			w.Index, w.Value, s.RequestThroughput, s.OutputThroughput)
		for _, c := range cols {
			if v, ok := c.Value(s); ok {
				fmt.Fprintf(&b, `<td class="num">%.1f</td>`, v)
			} else {
				b.WriteString(`<td class="num">–</td>`)
			}
		}
		fmt.Fprintf(&b, `<td class="%s">%s</td></tr>`, cls, template.HTMLEscapeString(cmp.Or(verdict, "–")))
	}
	b.WriteString(`</table>`)
	note := fmt.Sprintf("%s sweep over %s, %d points.", runs[0].Summary.Sweep.Mode, runs[0].Summary.Sweep.By, len(runs))
	knee := kneeOf(runs, answer)
	switch {
	case answer != nil:
		b.WriteString(answerHTML(answer))
		if knee != nil {
			note += fmt.Sprintf(" The answer, %s (%.1f output tok/s), is marked on the curves.", bench.FormatValue(answer.By, answer.Capacity), knee.Summary.OutputThroughput)
		}
	case search:
		note += " " + NoSearchAnswer
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

// NoSearchAnswer is what a search's page says when its file holds no
// answer line.
const NoSearchAnswer = "This file holds no search answer (it was written before servingprobe stored the answer after the points): the points are shown as measured, and no capacity is derived from them."

// answerHTML is the answer's words, one paragraph a line, as the console
// printed them (bench.SearchAnswer.Words).
func answerHTML(a *bench.SearchAnswer) string {
	var b strings.Builder
	b.WriteString(`<div class="answer">`)
	for _, line := range strings.Split(strings.TrimSuffix(a.Words(), "\n"), "\n") {
		fmt.Fprintf(&b, `<p class="answer">%s</p>`, template.HTMLEscapeString(line))
	}
	b.WriteString(`</div>`)
	return b.String()
}

// kneeOf is the point the answer marks: a search point (no anchor) at the
// answer's value that held, the last such one run; nil when the answer
// marks none.
func kneeOf(runs []Run, a *bench.SearchAnswer) *Run {
	if a == nil {
		return nil
	}
	v, ok := a.Knee()
	if !ok {
		return nil
	}
	var knee *Run
	for i := range runs {
		w := runs[i].Summary.Sweep
		if w.Role == "" && w.Value == v && w.Passed() {
			knee = &runs[i]
		}
	}
	return knee
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
