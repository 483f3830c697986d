package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// metricRow is one line of the comparison table. Lower is better for
// latencies, higher for throughputs.
type metricRow struct {
	name         string
	higherBetter bool
	get          func(*bench.Summary) float64
}

// bucketRows are the rows that are a server's bucket estimates, with the
// bucket each run's fell in: two runs whose estimates share a bucket
// differ by nothing the histogram resolves.
var bucketRows = map[string]func(*bench.Summary) (servermetrics.Estimate, bool){
	"Server TTFT P50 (ms, bucket estimate)": serverBucket(servermetrics.TTFT, func(l servermetrics.Latency) servermetrics.Estimate { return l.P50 }),
	"Server TTFT P99 (ms, bucket estimate)": serverBucket(servermetrics.TTFT, func(l servermetrics.Latency) servermetrics.Estimate { return l.P99 }),
}

// neutralRows are neither better nor worse when they differ: how long the
// model reasoned, how full the KV cache ran.
var neutralRows = map[string]bool{"Reasoning tokens": true, "Server KV cache usage peak (%)": true}

// countRows count whole things: they print as integers, as the console
// prints them, not as 300.00.
var countRows = map[string]bool{"Successful requests": true, "Failed requests": true, "Reasoning tokens": true,
	"Server waiting requests peak": true, "Server preemptions": true}

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
	// The answer phase, where a run's streams reasoned; NaN (shown as –)
	// in a run that measured none.
	{"Median TTFAT (ms)", false, reasoning(func(r *bench.ReasoningSummary) float64 { return r.TTFAT.Median })},
	{"P99 TTFAT (ms)", false, reasoning(func(r *bench.ReasoningSummary) float64 { return r.TTFAT.P99 })},
	{"Reasoning tokens", false, reasoning(func(r *bench.ReasoningSummary) float64 { return float64(r.ReasoningTokens) })},
	{"Mean answer TPOT (ms)", false, reasoning(func(r *bench.ReasoningSummary) float64 { return r.AnswerTPOT.Mean })},
	// The first metrics endpoint's block, where it was read.
	{"Server TTFT P50 (ms, bucket estimate)", false, serverLatency(servermetrics.TTFT, func(l servermetrics.Latency) float64 { return l.P50.Value * 1000 })},
	{"Server TTFT P99 (ms, bucket estimate)", false, serverLatency(servermetrics.TTFT, func(l servermetrics.Latency) float64 { return l.P99.Value * 1000 })},
	{"TTFT ours - server P50 (ms)", false, ttftGap(0)},
	{"TTFT ours - server P99 (ms)", false, ttftGap(2)},
	{"Server KV cache usage peak (%)", false, serverGauge(servermetrics.KVUsage, 100)},
	{"Server waiting requests peak", false, serverGauge(servermetrics.Waiting, 1)},
	{"Server prefix cache hit rate (%)", true, server(func(r *servermetrics.Report) float64 { return r.PrefixHitRate * 100 })},
	{"Server preemptions", false, server(func(r *servermetrics.Report) float64 {
		if v, ok := r.Count(servermetrics.Preemptions); ok {
			return v
		}
		return math.NaN()
	})},
}

// reasoning reads a row from a run's answer phase; NaN without one.
func reasoning(get func(*bench.ReasoningSummary) float64) func(*bench.Summary) float64 {
	return func(s *bench.Summary) float64 {
		if s.Reasoning == nil {
			return math.NaN()
		}
		return get(s.Reasoning)
	}
}

// server reads a row from a run's first metrics endpoint; NaN without a
// block that was read.
func server(get func(*servermetrics.Report) float64) func(*bench.Summary) float64 {
	return func(s *bench.Summary) float64 {
		if len(s.Server) == 0 || s.Server[0].Missing != "" {
			return math.NaN()
		}
		return get(&s.Server[0])
	}
}

// serverBucket is the bucket of a server latency's percentile estimate,
// false where the run did not read one.
func serverBucket(k servermetrics.Kind, get func(servermetrics.Latency) servermetrics.Estimate) func(*bench.Summary) (servermetrics.Estimate, bool) {
	return func(s *bench.Summary) (servermetrics.Estimate, bool) {
		if len(s.Server) == 0 || s.Server[0].Missing != "" {
			return servermetrics.Estimate{}, false
		}
		if l, ok := s.Server[0].Latency(k); ok && l.Count > 0 {
			return get(l), true
		}
		return servermetrics.Estimate{}, false
	}
}

// sameBucket reports whether the row is a bucket estimate that falls in
// the same bucket in both runs, and that bucket.
func (row metricRow) sameBucket(a, b *bench.Summary) (servermetrics.Estimate, bool) {
	bucket := bucketRows[row.name]
	if bucket == nil {
		return servermetrics.Estimate{}, false
	}
	ea, oka := bucket(a)
	eb, okb := bucket(b)
	return ea, oka && okb && ea.Lower == eb.Lower && ea.Upper == eb.Upper
}

func serverLatency(k servermetrics.Kind, get func(servermetrics.Latency) float64) func(*bench.Summary) float64 {
	return server(func(r *servermetrics.Report) float64 {
		if l, ok := r.Latency(k); ok && l.Count > 0 {
			return get(l)
		}
		return math.NaN()
	})
}

// serverGauge is a gauge's peak over the run, times scale (100 for a
// fraction shown in %, as the console does).
func serverGauge(k servermetrics.Kind, scale float64) func(*bench.Summary) float64 {
	return server(func(r *servermetrics.Report) float64 {
		if g, ok := r.Gauge(k); ok {
			return g.Peak * scale
		}
		return math.NaN()
	})
}

// ttftGap is bench's ServerTTFTGap at p50 (0), p90 (1) or p99 (2).
func ttftGap(i int) func(*bench.Summary) float64 {
	return func(s *bench.Summary) float64 {
		if len(s.Server) == 0 {
			return math.NaN()
		}
		if gap, ok := s.ServerTTFTGap(&s.Server[0]); ok {
			return gap[i]
		}
		return math.NaN()
	}
}

// fewSamplesMark marks a figure of the comparison table as the console's
// intervals block does (bench.FormatInterval): " (few samples)" where the
// record's interval for it is known and bench.FewSamples holds; nothing
// for a figure without an interval, which is no claim either way.
func fewSamplesMark(s *bench.Summary, label string) template.HTML {
	v, iv, ok := s.FigureInterval(label)
	if !ok || !iv.Known() || !bench.FewSamples(v, iv) {
		return ""
	}
	return ` <span class="few" title="its confidence interval is open or wider than ` + template.HTML(fmt.Sprintf("%g", bench.FewSamplesWidth*100)) + ` % of it">(few samples)</span>`
}

// compareSections puts several runs side by side: a table of the headline
// figures with each run's difference from the first (absolute and %),
// worse differences flagged, the latency percentiles on the same axes,
// and, where the runs have per-request data, their distributions overlaid.
func compareSections(runs []Run) []section {
	var b strings.Builder
	b.WriteString(`<table class="compare"><tr><th>metric</th>`)
	sig := make([]significance, len(runs))
	for i, r := range runs {
		fmt.Fprintf(&b, `<th>%s</th>`, template.HTMLEscapeString(r.Name))
		if i > 0 {
			fmt.Fprintf(&b, `<th>Δ vs %s</th><th>Δ %%</th><th>significance</th>`, template.HTMLEscapeString(runs[0].Name))
			sig[i] = significanceOf(runs[0].Summary, r.Summary)
		}
	}
	b.WriteString(`</tr>`)
	for _, row := range compareRows {
		if !slices.ContainsFunc(runs, func(r Run) bool { return !math.IsNaN(row.get(r.Summary)) }) {
			continue // no run measured it
		}
		base := row.get(runs[0].Summary)
		prec := 2
		if countRows[row.name] {
			prec = 0
		}
		fmt.Fprintf(&b, `<tr><td>%s</td>`, row.name)
		for i, r := range runs {
			v := row.get(r.Summary)
			if math.IsNaN(v) {
				b.WriteString(`<td class="num">–</td>`)
			} else {
				fmt.Fprintf(&b, `<td class="num">%.*f%s</td>`, prec, v, fewSamplesMark(r.Summary, row.name))
			}
			if i == 0 {
				continue
			}
			if math.IsNaN(v) || math.IsNaN(base) {
				b.WriteString(`<td class="num">–</td><td class="num">–</td><td></td>`)
				continue
			}
			if e, ok := row.sameBucket(runs[0].Summary, r.Summary); ok {
				// Both interpolations inside one bucket: the histogram
				// cannot tell them apart, so no difference is stated.
				fmt.Fprintf(&b, `<td class="num" colspan="2">same bucket, (%.2f, %.2f] ms</td><td></td>`, e.Lower*1000, e.Upper*1000)
				continue
			}
			diff := v - base
			pct := "–"
			if base != 0 {
				pct = fmt.Sprintf("%+.1f%%", 100*diff/math.Abs(base))
			}
			cls := ""
			if !neutralRows[row.name] {
				cls = sig[i].class(row.name, row.higherBetter, diff)
			}
			fmt.Fprintf(&b, `<td class="num %s">%+.*f</td><td class="num %s">%s</td>%s`, cls, prec, diff, cls, pct, sig[i].cell(row.name))
		}
		b.WriteString(`</tr>`)
	}
	b.WriteString(`</table>`)
	secs := []section{
		{Title: "Differences", Note: "Each run against the first; red is worse (slower, or less throughput), green better." + significanceNote + " Server rows are each run's first metrics endpoint, its percentiles bucket estimates; – where a run did not measure the row.", Table: template.HTML(b.String())},
		{Title: "Latency percentiles", Note: percentileNote(runs), Charts: percentileCharts(runs)},
	}
	if cdfs := overlayCDFs(runs); len(cdfs) > 0 {
		secs = append(secs, section{Title: "Distributions", Charts: cdfs})
	}
	for _, r := range runs {
		secs = append(secs, section{Title: "Summary: " + r.Name, Table: tableHTML(r.Summary, nil)})
	}
	return secs
}

// overlayCDFs draws each latency's distribution of every run that kept
// per-request data on one chart.
func overlayCDFs(runs []Run) []template.HTML {
	per := make([]*bench.DetailSamples, 0, len(runs))
	var named []string
	for _, r := range runs {
		if d := r.Summary.Details; d != nil && len(d.SentTimes) > 0 && detailsProblem(d) == "" {
			per = append(per, r.Summary.DetailSamples())
			named = append(named, r.Name)
		}
	}
	if len(per) < 2 {
		return nil
	}
	var out []template.HTML
	for _, m := range []struct {
		id, name string
		get      func(*bench.DetailSamples) []float64
	}{
		{"ttft", "TTFT", func(v *bench.DetailSamples) []float64 { return v.TTFT }},
		{"itl", "ITL", func(v *bench.DetailSamples) []float64 { return v.ITL }},
		{"e2e", "E2E latency", func(v *bench.DetailSamples) []float64 { return v.E2E }},
	} {
		c := chart{ID: m.id + "-cdf-compare", Title: m.name + " cumulative distribution", XLabel: m.name + " (ms)", YLabel: "fraction ≤ x", YFromZero: true}
		for i, v := range per {
			if vals := m.get(v); len(finiteValues(vals)) > 0 {
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
