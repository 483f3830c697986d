package report

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// consoleRows renders rows of the console table (bench's TableSections)
// as an HTML table: labels and values as the console printed them, so
// that the page cannot disagree with the console.
func consoleRows(id string, rows []bench.TableRow) template.HTML {
	return captionedRows(id, "", rows)
}

// captionedRows is consoleRows under a caption (none if "").
func captionedRows(id, caption string, rows []bench.TableRow) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<table class="compare rows" data-rows="%s">`, template.HTMLEscapeString(id))
	if caption != "" {
		fmt.Fprintf(&b, `<caption>%s</caption>`, template.HTMLEscapeString(caption))
	}
	for _, r := range rows {
		tr := "<tr>"
		if strings.HasPrefix(r.Label, " ") { // the console indents a row that belongs to the one above
			tr = `<tr class="sub">`
		}
		fmt.Fprintf(&b, `%s<td>%s</td><td class="val">%s</td></tr>`, tr, template.HTMLEscapeString(strings.TrimSpace(r.Label)), template.HTMLEscapeString(r.Value))
	}
	b.WriteString(`</table>`)
	return template.HTML(b.String())
}

// tableSections are the console table's sections titled title, in order.
func tableSections(s *bench.Summary, title string) [][]bench.TableRow {
	var out [][]bench.TableRow
	for _, sec := range s.TableSections() {
		if sec.Title == title {
			out = append(out, sec.Rows)
		}
	}
	return out
}

// chartID names an endpoint's chart: the first endpoint's plainly, the
// others with their position (server-kv-cache-2).
func chartID(base string, i int) string {
	if i == 0 {
		return base
	}
	return fmt.Sprintf("%s-%d", base, i+1)
}

// serverGaugeCharts draws an endpoint's gauges over the run, as the
// record keeps them (bench.ServerSeries, at most ServerSeriesPoints): the
// KV cache's usage, and the requests running and waiting. xr, when set,
// is the x axis of the throughput and concurrency charts they are drawn
// under.
func serverGaugeCharts(r *servermetrics.Report, i int, xr *[2]float64) []template.HTML {
	ser := bench.ServerSeries(r)
	if len(ser) == 0 {
		return nil
	}
	pick := func(k servermetrics.Kind, scale float64) (x, y []float64) {
		for _, sm := range ser {
			if v, ok := sm.Values[k]; ok {
				x, y = append(x, sm.Offset.Seconds()), append(y, v*scale)
			}
		}
		return x, y
	}
	var out []template.HTML
	if x, y := pick(servermetrics.KVUsage, 100); len(x) > 0 {
		c := chart{ID: chartID("server-kv-cache", i), Title: "KV cache usage (server)", XLabel: "time (s from start)", YLabel: "KV cache usage (%)",
			YFromZero: true, XRange: xr, Series: []series{{Name: "KV cache usage", Kind: line, X: x, Y: y}}}
		out = append(out, c.SVG())
	}
	c := chart{ID: chartID("server-requests", i), Title: "Requests running and waiting (server)", XLabel: "time (s from start)", YLabel: "requests",
		YFromZero: true, XRange: xr}
	for _, g := range []struct {
		k    servermetrics.Kind
		name string
	}{{servermetrics.Running, "running"}, {servermetrics.Waiting, "waiting"}} {
		if x, y := pick(g.k, 1); len(x) > 0 {
			c.Series = append(c.Series, series{Name: g.name, Kind: line, X: x, Y: y})
		}
	}
	if len(c.Series) > 0 {
		out = append(out, c.SVG())
	}
	return out
}

// ttftSplit stacks, at p50, p90 and p99, our TTFT as the server's TTFT
// (the block's bucket estimate) and the rest (bench's ServerTTFTGap).
// Where the server's estimate exceeds ours (a negative rest) the bars are
// the server's part up to our TTFT and, above it, the excess in a third
// series, so that no bar suggests a rest that is not there. false when
// the server has no TTFT for the run.
func ttftSplit(s *bench.Summary, r *servermetrics.Report, i int) (chart, bool) {
	gap, ok := s.ServerTTFTGap(r)
	if !ok {
		return chart{}, false
	}
	l, _ := r.Latency(servermetrics.TTFT)
	x := []float64{0, 1, 2}
	var server, rest, over []float64
	for j, e := range []servermetrics.Estimate{l.P50, l.P90, l.P99} {
		server = append(server, e.Value*1000+min(gap[j], 0))
		rest, over = append(rest, max(gap[j], 0)), append(over, max(-gap[j], 0))
	}
	c := chart{ID: chartID("server-ttft-split", i), Title: "Our TTFT split: the server's (bucket estimate) and the rest", XLabel: "percentile",
		YLabel: "TTFT (ms)", YFromZero: true, Stacked: true, Categories: []string{"p50", "p90", "p99"},
		Series: []series{
			{Name: "server TTFT (bucket estimate)", Kind: bars, X: x, Y: server},
			{Name: "rest: network, HTTP, queue before the engine", Kind: bars, X: x, Y: rest},
		}}
	if slices.ContainsFunc(gap[:], func(g float64) bool { return g < 0 }) {
		c.Series = append(c.Series, series{Name: "server estimate above our TTFT", Kind: bars, X: x, Y: over})
	}
	return c, true
}

// serverNote words what the block is, or why it is missing.
func serverNote(s *bench.Summary, r *servermetrics.Report) string {
	if r.Missing != "" {
		return fmt.Sprintf("The server's metrics were not read from %s: %s. There is nothing to draw.", r.Source, r.Missing)
	}
	note := fmt.Sprintf("What the server's Prometheus endpoint (%s, %s) counted over the run: the console's block. Its percentiles are bucket estimates (linear within the bucket, as histogram_quantile). "+
		"The gauges were read %d times; the charts draw at most %d of the reads, taken evenly (the peaks above are over every read).",
		r.Source, r.Engine, r.SamplesRead(), bench.ServerSeriesPoints)
	if _, ok := s.ServerTTFTGap(r); ok {
		note += " The TTFT split stacks our TTFT as the server's TTFT (a bucket estimate) and the rest: the network, HTTP and any queue in front of the engine. Where the server's estimate exceeds our TTFT (a coarse bucket, another clock start, or other traffic) there is no rest, and the excess is stacked above our TTFT in its own colour."
	}
	return note
}

// serverMetricsSections draws each metrics endpoint's block: the
// console's rows, the TTFT split and, unless drawn under the timeline
// already (drawn), the gauges over the run. A block that says why it is
// missing shows that reason and no chart.
func serverMetricsSections(s *bench.Summary, drawn bool) []section {
	rows := tableSections(s, "Server metrics")
	var secs []section
	for i := range s.Server {
		r := &s.Server[i]
		sec := section{Title: "Server metrics", Note: serverNote(s, r)}
		if len(s.Server) > 1 {
			sec.Title += ": " + r.Source
		}
		if i < len(rows) {
			sec.Table = consoleRows(chartID("server-metrics", i), rows[i])
		}
		if r.Missing == "" {
			if c, ok := ttftSplit(s, r, i); ok {
				sec.Charts = append(sec.Charts, c.SVG())
			}
			if !drawn {
				sec.Charts = append(sec.Charts, serverGaugeCharts(r, i, nil)...)
			}
		}
		secs = append(secs, sec)
	}
	return secs
}

// reasoningSection shows the answer phase of a run whose streams reasoned:
// the console's rows, TTFAT beside TTFT, the reasoning and answer tokens,
// and the answer's TPOT beside the whole stream's. false when the run
// measured no reasoning.
func reasoningSection(s *bench.Summary) (section, bool) {
	r := s.Reasoning
	if r == nil {
		return section{}, false
	}
	sec := section{Title: "Reasoning and answer",
		Note: fmt.Sprintf("%d successful requests reasoned before answering. TTFAT is the time to the first answer token (a request that did not reason answers at its first token); the answer's TPOT counts only its answer tokens. The console prints mean, median and p99 of both.", r.Requests)}
	if rows := tableSections(s, "Reasoning and Answer"); len(rows) > 0 {
		sec.Table = consoleRows("reasoning", rows[0])
	}
	stats := []string{"mean", "p50", "p99"}
	three := func(st bench.Stats) []float64 { return []float64{st.Mean, st.Median, st.P99} }
	sec.Charts = append(sec.Charts,
		groupedBars("ttft-ttfat", "TTFT and time to the first answer token", "TTFT (ms)", stats,
			[]string{"TTFT", "TTFAT"}, [][]float64{three(s.TTFT), three(r.TTFAT)}),
		groupedBars("reasoning-tokens", "Output tokens: reasoning and answer", "tokens", []string{"reasoning", "answer"},
			[]string{"tokens"}, [][]float64{{float64(r.ReasoningTokens), float64(r.AnswerTokens)}}),
		groupedBars("answer-tpot", "TPOT and the answer's TPOT", "TPOT (ms)", stats,
			[]string{"TPOT", "answer TPOT"}, [][]float64{three(s.TPOT), three(r.AnswerTPOT)}),
	)
	return sec, true
}

// groupedBars draws one bar per category and series, the series side by
// side within each category.
func groupedBars(id, title, yl string, cats, names []string, vals [][]float64) template.HTML {
	c := groupedBarsChart(id, title, yl, cats, names, vals)
	return c.SVG()
}

// groupedBarsChart is groupedBars' chart, for a caller that adds to it
// (percentileCharts' error bars).
func groupedBarsChart(id, title, yl string, cats, names []string, vals [][]float64) chart {
	c := chart{ID: id, Title: title, XLabel: strings.Join(cats, ", "), YLabel: yl, YFromZero: true, Categories: cats}
	n := float64(len(names))
	for k, name := range names {
		off := (float64(k) - (n-1)/2) * 0.9 / n // the bars' width (svg.go)
		xs := make([]float64, len(cats))
		for j := range xs {
			xs[j] = float64(j) + off
		}
		c.Series = append(c.Series, series{Name: name, Kind: bars, X: xs, Y: vals[k]})
	}
	return c
}
