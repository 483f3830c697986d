// Package report draws bench runs as one self-contained HTML page: the
// console's summary table, throughput and concurrency over time, latency
// distributions, latencies against time and prompt length, a request
// timeline and failures, the server's own metrics over the run, the
// answer phase of runs that reasoned, and the prefix cache, energy and
// cost as the console printed them; several runs side by side with
// their differences; and a sweep or SLO search as
// latency-against-throughput curves. It reads
// only bench summaries (a live run's, or records read back from JSONL with
// bench.ParseRecord), so a report drawn later from the file shows the same
// numbers as the console did.
package report

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/bench"
)

// Run is one bench run to draw.
type Run struct {
	// Name labels the run in comparisons (its file and line, by default).
	Name    string
	Summary *bench.Summary
	// Side is the set of runs the run belongs to: the file it was read
	// from (Load), or a bench window's id. Several runs of one side are
	// drawn as one set (setSections), their figures across the runs, not
	// each run as an entry of its own; "" is a side of its own.
	Side string
	// Search is the answer of the SLO search this run closed: the answer
	// line that followed it in its file, or the answer a live search
	// handed over with its last point; nil otherwise. A sweep's page
	// states it, and never derives a capacity from the points.
	Search *bench.SearchAnswer
}

// Load reads every record of JSONL files as runs, named after the file
// (and the line, when a file holds several). An SLO search's answer line
// is no run: it is attached to the run before it, the search's last
// point (Run.Search), and one with no run before it in its file is an
// error.
func Load(paths ...string) ([]Run, error) {
	var runs []Run
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<30)
		var here []Run
		for line := 1; sc.Scan(); line++ {
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 {
				continue
			}
			s, a, err := bench.ParseLine(b)
			if err == nil && a != nil && len(here) == 0 {
				err = errors.New("an SLO search's answer with no point before it")
			}
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %w", p, line, err)
			}
			if a != nil {
				here[len(here)-1].Search = a
				continue
			}
			here = append(here, Run{Name: fmt.Sprintf("%s:%d", filepath.Base(p), line), Summary: s, Side: filepath.Base(p)})
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(here) == 1 {
			here[0].Name = filepath.Base(p)
		}
		runs = append(runs, here...)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no records in %s", strings.Join(paths, ", "))
	}
	return runs, nil
}

// Options tune a report.
type Options struct {
	Title string
	// MaxTimelineRequests bounds the requests drawn in the timeline; more
	// are sampled evenly (default 300).
	MaxTimelineRequests int
	// Now stamps the page; zero means time.Now.
	Now time.Time
}

// section is one block of the page.
type section struct {
	Title  string
	Note   string
	Table  template.HTML
	Charts []template.HTML
}

// Write renders runs: one run in full; a sweep (every run a point of one
// sweep or search) as curves; otherwise a comparison. It writes nothing to
// w unless the whole page was drawn, and a panic while drawing is
// returned as an error rather than raised: the report is drawn after a
// run's result is safe, and a fault in it must not take down a daemon or
// a run that has nothing wrong with it.
func Write(w io.Writer, runs []Run, o Options) (err error) {
	var b bytes.Buffer
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("report: drawing the page failed: %v", p)
			}
		}()
		err = write(&b, runs, o)
	}()
	if err != nil {
		return err
	}
	_, err = w.Write(b.Bytes())
	return err
}

// write is Write without the recover, for the tests and the fuzz target,
// which want a panic to fail them.
func write(w io.Writer, runs []Run, o Options) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: no run")
	}
	for i, r := range runs {
		if r.Summary == nil {
			return fmt.Errorf("report: run %d (%s) has no summary", i+1, r.Name)
		}
	}
	if o.MaxTimelineRequests <= 0 {
		o.MaxTimelineRequests = 300
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var secs []section
	title := o.Title
	switch {
	case isSweep(runs):
		secs = sweepSections(runs)
		title = cmp.Or(title, fmt.Sprintf("servingprobe sweep: %d points", len(runs)))
	case len(sets(runs)) > 0:
		sides := sets(runs)
		secs = setSections(sides)
		title = cmp.Or(title, setTitle(sides))
	case len(runs) == 1:
		secs = runSections(runs[0], o)
		title = cmp.Or(title, "servingprobe bench: "+runs[0].Name)
	default:
		secs = compareSections(runs)
		title = cmp.Or(title, fmt.Sprintf("servingprobe comparison: %d runs", len(runs)))
	}
	return page.Execute(w, struct {
		Title    string
		Made     string
		Sections []section
	}{title, o.Now.UTC().Format(time.RFC3339), secs})
}

func isSweep(runs []Run) bool {
	if len(runs) < 2 {
		return false
	}
	for _, r := range runs {
		if r.Summary.Sweep == nil {
			return false
		}
	}
	return true
}

// ownSections are the console table's sections that a run's page draws
// in sections of their own (serverMetricsSections, reasoningSection,
// cacheCostSections), so that its summary leaves them out rather than
// show them twice.
var ownSections = map[string]bool{"Server metrics": true, "Reasoning and Answer": true, "Cache Hit Details": true,
	"Cache Report vs Server": true, "Energy": true, "Cost": true, "Conversation turns": true,
	"Valid responses": true}

// tableHTML is the console table, from bench's own code (TableSections):
// each of its sections a small table of the console's labels and values,
// side by side, so that the page agrees with the console by construction
// and the first chart is not two screens of monospace away. skip names
// sections drawn elsewhere on the page.
func tableHTML(s *bench.Summary, skip map[string]bool) template.HTML {
	var b strings.Builder
	b.WriteString(`<div class="summary">`)
	for i, sec := range s.TableSections() {
		if len(sec.Rows) == 0 || skip[sec.Title] {
			continue
		}
		b.WriteString(string(captionedRows(fmt.Sprintf("summary-%d", i), sec.Title, sec.Rows)))
	}
	b.WriteString(`</div>`)
	return template.HTML(b.String())
}

// runSections draws one run.
func runSections(r Run, o Options) []section {
	s := r.Summary
	secs := []section{{Title: "Summary", Table: tableHTML(s, ownSections)}}
	d := s.Details
	problem := detailsProblem(d)
	if d == nil || len(d.SentTimes) == 0 || problem != "" {
		note := "The record has no per-request data: run bench with --output-details to draw distributions, time series and the timeline."
		if problem != "" {
			note = "The record's per-request data cannot be drawn (" + problem + "): only the summary's figures are."
		}
		secs = append(secs, section{Title: "Latency percentiles", Note: note + " " + percentileNote([]Run{r}), Charts: percentileCharts([]Run{r})})
		secs = append(secs, serverMetricsSections(s, false)...)
		if sec, ok := reasoningSection(s); ok {
			secs = append(secs, sec)
		}
		if sec, ok := validitySection(s); ok {
			secs = append(secs, sec)
		}
		if sec, ok := conversationSection(s); ok {
			secs = append(secs, sec)
		}
		return append(secs, cacheCostSections(s)...)
	}
	// The per-request samples, by bench's one definition of them (the one
	// the significance tests read), so that the charts show what the
	// summary counted.
	v := s.DetailSamples()
	note := "Each request's output tokens are spread evenly from its first token to its end; the table's peak counts them per second of arrival, as bench_serving does, so the two peaks differ."
	charts, drawn := timelineCharts(s)
	if drawn {
		note += " Under them, on the same time axis, the server's gauges as its metrics endpoint was read through the run: KV cache usage under the throughput, requests running and waiting on the server under the client's."
	}
	secs = append(secs, section{Title: "Throughput and concurrency", Note: note, Charts: charts})
	secs = append(secs, serverMetricsSections(s, drawn)...)
	if sec, ok := reasoningSection(s); ok {
		secs = append(secs, sec)
	}
	if sec, ok := validitySection(s); ok {
		secs = append(secs, sec)
	}
	if sec, ok := conversationSection(s); ok {
		secs = append(secs, sec)
	}
	secs = append(secs, cacheCostSections(s)...)
	secs = append(secs, section{Title: "Distributions", Note: "Histograms and cumulative distributions; the lines mark the median, p90 and p99 the summary reports.",
		Charts: distributionCharts(s, v)})
	if sec, ok := serverSection(s); ok {
		secs = append(secs, sec)
	}
	secs = append(secs,
		section{Title: "Latency over time and by prompt length", Charts: []template.HTML{
			scatter("ttft-time", "TTFT against send time", "sent (s from start)", "TTFT (ms)", at(d.SentTimes, v.TTFTReq), v.TTFT),
			scatter("e2e-time", "E2E latency against send time", "sent (s from start)", "E2E (ms)", at(d.SentTimes, v.E2EReq), v.E2E),
			scatter("ttft-prompt", "TTFT against prompt length", "prompt tokens", "TTFT (ms)", at(d.InputLens, v.TTFTReq), v.TTFT),
		}},
		section{Title: "Request timeline", Note: timelineNote(len(d.SentTimes), o.MaxTimelineRequests),
			Charts: []template.HTML{timelineChart(s, o.MaxTimelineRequests)}},
	)
	if c, ok := failuresChart(s); ok {
		secs = append(secs, section{Title: "Failures", Charts: []template.HTML{c}})
	}
	return secs
}

func timelineNote(n, most int) string {
	note := "One bar per request: waiting for a concurrency slot (grey), sent to first token (blue), decoding (green); failures in red."
	if n > most {
		note += fmt.Sprintf(" %d of %d requests, sampled evenly.", most, n)
	}
	return note
}

// at are the values of a per-request array of d at the requests reqs,
// as float64: the x of each sample bench.DetailSamples returned, by the
// request it is of (DetailSamples.TTFTReq, E2EReq). detailsProblem has
// checked that every array holds one entry per request.
func at[T int | float64](vals []T, reqs []int) []float64 {
	out := make([]float64, 0, len(reqs))
	for _, i := range reqs {
		out = append(out, float64(vals[i]))
	}
	return out
}

// timelineCharts draws the run's output throughput and its requests in
// flight and queued over time (bench's Timeline, as --plot-throughput),
// and under them, on the same x axis, each metrics endpoint's gauges
// (drawn is whether any were). The gauges' offsets count from the
// endpoint's first read, which the run's start follows at once.
func timelineCharts(s *bench.Summary) (charts []template.HTML, drawn bool) {
	t := s.Timeline(120)
	if t == nil {
		return nil, false
	}
	xr := &[2]float64{0, t.Width * float64(len(t.At))}
	for i := range s.Server {
		if ser := bench.ServerSeries(&s.Server[i]); len(ser) > 0 {
			xr[1] = max(xr[1], ser[len(ser)-1].Offset.Seconds())
		}
	}
	tp := chart{ID: "throughput", Title: "Output throughput", XLabel: "time (s from start)", YLabel: "output tokens/s", YFromZero: true, XRange: xr,
		Series: []series{{Name: "output tokens/s", Kind: line, X: t.At, Y: t.TokPerS}}}
	cc := chart{ID: "concurrency", Title: "Requests in flight and queued in the client", XLabel: "time (s from start)", YLabel: "requests", YFromZero: true, XRange: xr,
		Series: []series{{Name: "in flight", Kind: line, X: t.At, Y: t.InFlight}, {Name: "queued", Kind: line, X: t.At, Y: t.Queued}}}
	charts = []template.HTML{tp.SVG(), cc.SVG()}
	for i := range s.Server {
		if s.Server[i].Missing != "" {
			continue
		}
		g := serverGaugeCharts(&s.Server[i], i, xr)
		charts, drawn = append(charts, g...), drawn || len(g) > 0
	}
	return charts, drawn
}

// distributionCharts draws a histogram and a CDF per latency, marked with
// the summary's own percentiles.
func distributionCharts(s *bench.Summary, v *bench.DetailSamples) []template.HTML {
	var out []template.HTML
	for _, m := range []struct {
		id, name string
		vals     []float64
		st       bench.Stats
	}{
		{"ttft", "TTFT", v.TTFT, s.TTFT},
		{"itl", "ITL", v.ITL, s.ITL},
		{"tpot", "TPOT", v.TPOT, s.TPOT},
		{"e2e", "E2E latency", v.E2E, s.E2ELatency},
	} {
		if len(finiteValues(m.vals)) == 0 {
			continue
		}
		marks := []mark{{At: m.st.Median, Label: "p50", Class: "pct"}, {At: m.st.P90, Label: "p90", Class: "pct"}, {At: m.st.P99, Label: "p99", Class: "pct"}}
		hx, hy := histogram(m.vals, 40)
		count := "requests"
		if m.id == "itl" {
			count = "token gaps"
		}
		h := chart{ID: m.id + "-hist", Title: m.name + " histogram", XLabel: m.name + " (ms)", YLabel: count, YFromZero: true, YCounts: true,
			Series: []series{{Name: m.name, Kind: bars, X: hx, Y: hy}}, VMarks: marks}
		cx, cy := cdf(m.vals)
		c := chart{ID: m.id + "-cdf", Title: m.name + " cumulative distribution", XLabel: m.name + " (ms)", YLabel: "fraction ≤ x", YFromZero: true,
			Series: []series{{Name: m.name, Kind: line, X: cx, Y: cy}}, VMarks: marks}
		out = append(out, h.SVG(), c.SVG())
	}
	return out
}

// histogram counts the finite values of vals in n bins from their
// minimum to their maximum; values too close to tell apart (see narrow)
// are one bar. Non-finite values are no measurement and are not counted;
// with none finite it is empty.
func histogram(vals []float64, n int) ([]float64, []float64) {
	vals = finiteValues(vals)
	if len(vals) == 0 {
		return nil, nil
	}
	n = max(n, 1)
	lo, hi := slices.Min(vals), slices.Max(vals)
	if narrow(lo, hi) {
		return []float64{lo}, []float64{float64(len(vals))}
	}
	w := (hi - lo) / float64(n)
	ys := make([]float64, n)
	for _, v := range vals {
		ys[min(max(int((v-lo)/w), 0), n-1)]++
	}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = lo + (float64(i)+0.5)*w
	}
	return xs, ys
}

// cdf returns the empirical distribution: every step-th sorted value
// with the fraction of values at or below it, and the maximum at 1; at
// most 401 points (the step rounds up, so 401 to 800 values do not keep
// every second one).
//
// Non-finite values are left out; with none finite it is empty.
func cdf(vals []float64) ([]float64, []float64) {
	s := finiteValues(vals)
	if len(s) == 0 {
		return nil, nil
	}
	slices.Sort(s)
	step := max(1, (len(s)+399)/400)
	var xs, ys []float64
	for i := 0; i < len(s); i += step {
		xs, ys = append(xs, s[i]), append(ys, float64(i+1)/float64(len(s)))
	}
	if xs[len(xs)-1] != s[len(s)-1] {
		xs, ys = append(xs, s[len(s)-1]), append(ys, 1)
	}
	return xs, ys
}

// finiteValues is a copy of vals without NaN and ±Inf, the rest clamped
// as the charts draw them (clampValue), so that differences stay finite.
func finiteValues(vals []float64) []float64 {
	out := make([]float64, 0, len(vals))
	for _, v := range vals {
		if finite(v) {
			out = append(out, clampValue(v))
		}
	}
	return out
}

// maxRunSeconds bounds the run length whose per-request data is drawn:
// bench's Timeline keeps one bin a minute past two hours, so a record
// whose times reach past this (a month) is refused rather than drawn
// into millions of bins.
const maxRunSeconds = 31 * 24 * 3600

// detailsProblem says why d's per-request arrays cannot be drawn, "" when
// they can: every array the charts read by request index holds one entry
// per request (len(sent_times)), and every time is finite and within
// maxRunSeconds. A record read back from a file is whatever the file
// holds, so this is checked, not assumed.
func detailsProblem(d *bench.Details) string {
	if d == nil {
		return ""
	}
	n := len(d.SentTimes)
	for _, a := range []struct {
		name string
		len  int
	}{
		{"input_lens", len(d.InputLens)}, {"output_lens", len(d.OutputLens)}, {"ttfts", len(d.TTFTs)}, {"itls", len(d.ITLs)},
		{"scheduled_times", len(d.ScheduledTimes)}, {"first_token_times", len(d.FirstTokenTimes)}, {"end_times", len(d.EndTimes)},
	} {
		if a.len != n {
			return fmt.Sprintf("%s has %d entries for %d requests (sent_times)", a.name, a.len, n)
		}
	}
	for _, a := range []struct {
		name string
		v    []float64
	}{{"scheduled_times", d.ScheduledTimes}, {"sent_times", d.SentTimes}, {"first_token_times", d.FirstTokenTimes}, {"end_times", d.EndTimes}} {
		for i, t := range a.v {
			if !finite(t) || t > maxRunSeconds {
				return fmt.Sprintf("%s[%d] is %v, not a time within %d s of the start", a.name, i, t, maxRunSeconds)
			}
		}
	}
	return ""
}

func scatter(id, title, xl, yl string, x, y []float64) template.HTML {
	c := chart{ID: id, Title: title, XLabel: xl, YLabel: yl, YFromZero: true, Series: []series{{Name: title, Kind: points, X: x, Y: y}}}
	return c.SVG()
}

// timelineChart draws one row per request (sampled to most rows), a
// failure being what bench.Summary.DetailRequest says is not a success.
func timelineChart(s *bench.Summary, most int) template.HTML {
	n := len(s.Details.SentTimes)
	rows := min(n, max(most, 1))
	c := chart{ID: "timeline", Title: "Request timeline", XLabel: "time (s from start)", YLabel: "request", Height: 560}
	row := 0.0
	for r := range rows {
		i := r * n / rows // evenly, counted in integers so that it ends
		r := s.DetailRequest(i)
		sched, sent, first, end, failed := r.Scheduled, r.Sent, r.FirstToken, r.End, !r.OK
		if sched >= 0 && sent > sched {
			c.Segments = append(c.Segments, segment{Y: row, X0: sched, X1: sent, Class: "queue"})
		}
		switch {
		case sent < 0 || end < 0:
		case failed:
			c.Segments = append(c.Segments, segment{Y: row, X0: sent, X1: end, Class: "failed"})
		case first >= 0:
			c.Segments = append(c.Segments, segment{Y: row, X0: sent, X1: first, Class: "prefill"},
				segment{Y: row, X0: first, X1: end, Class: "decode"})
		default:
			c.Segments = append(c.Segments, segment{Y: row, X0: sent, X1: end, Class: "prefill"})
		}
		row++
	}
	return c.SVG()
}

// failuresChart counts failures by outcome; false when none failed.
func failuresChart(s *bench.Summary) (template.HTML, bool) {
	var names []string
	for o, n := range s.Outcomes {
		if n > 0 {
			names = append(names, string(o))
		}
	}
	if len(names) == 0 {
		return "", false
	}
	slices.Sort(names)
	var xs, ys []float64
	for i, name := range names {
		xs = append(xs, float64(i))
		for o, n := range s.Outcomes {
			if string(o) == name {
				ys = append(ys, float64(n))
			}
		}
	}
	c := chart{ID: "failures", Title: "Failed requests by outcome", XLabel: "outcome", YLabel: "requests", YFromZero: true, YCounts: true,
		Series: []series{{Name: "failed", Kind: bars, X: xs, Y: ys}}, Categories: names}
	return c.SVG(), true
}

// percentileCharts draws mean, median, p90, p95 and p99 of each latency,
// one bar series per run: what a record without details still holds.
// Each figure whose record holds a bounded interval (servingprobe.ci) has
// it drawn as an error bar; percentileNote says what they are.
func percentileCharts(runs []Run) []template.HTML {
	var out []template.HTML
	for _, m := range []struct {
		id, name string
		get      func(*bench.Summary) bench.Stats
		ci       func(*bench.CI) bench.StatsCI
	}{
		{"ttft", "TTFT", func(s *bench.Summary) bench.Stats { return s.TTFT }, func(c *bench.CI) bench.StatsCI { return c.TTFT }},
		{"itl", "ITL", func(s *bench.Summary) bench.Stats { return s.ITL }, func(c *bench.CI) bench.StatsCI { return c.ITL }},
		{"tpot", "TPOT", func(s *bench.Summary) bench.Stats { return s.TPOT }, func(c *bench.CI) bench.StatsCI { return c.TPOT }},
		{"e2e", "E2E latency", func(s *bench.Summary) bench.Stats { return s.E2ELatency }, func(c *bench.CI) bench.StatsCI { return c.E2E }},
	} {
		names, vals := make([]string, len(runs)), make([][]float64, len(runs))
		los, his := make([][]float64, len(runs)), make([][]float64, len(runs))
		for k, r := range runs {
			st := m.get(r.Summary)
			names[k], vals[k] = r.Name, []float64{st.Mean, st.Median, st.P90, st.P95, st.P99}
			if c := r.Summary.CI; c != nil {
				ci := m.ci(c)
				for _, iv := range []bench.Interval{ci.Mean, ci.Median, ci.P90, ci.P95, ci.P99} {
					lo, hi := math.NaN(), math.NaN()
					if iv.Bounded() {
						lo, hi = iv.Lo, iv.Hi
					}
					los[k], his[k] = append(los[k], lo), append(his[k], hi)
				}
			}
		}
		c := groupedBarsChart(m.id+"-percentiles", m.name+": mean, p50, p90, p95, p99", m.name+" (ms)",
			[]string{"mean", "p50", "p90", "p95", "p99"}, names, vals)
		for k := range c.Series {
			c.Series[k].Lo, c.Series[k].Hi = los[k], his[k]
		}
		c.IntervalNote = confidenceLabel(runs)
		out = append(out, c.SVG())
	}
	return out
}

// confidenceLabel is the error bars' name: the runs' confidence level
// (bench.Confidence unless a record says otherwise).
func confidenceLabel(runs []Run) string {
	level := bench.Confidence
	for _, r := range runs {
		if r.Summary.CI != nil {
			level = r.Summary.CI.Confidence
			break
		}
	}
	return fmt.Sprintf("%g %% confidence interval", level*100)
}

// percentileNote says what the percentile charts' error bars are, for
// their section's note: the interval each record holds, a sketch's
// widened by its rank error (bench's CISketch), and nothing where a
// record holds none or its samples are too few to bound a figure.
func percentileNote(runs []Run) string {
	var with, sketch []string
	for _, r := range runs {
		if c := r.Summary.CI; c != nil {
			with = append(with, r.Name)
			if c.Method == bench.CISketch {
				sketch = append(sketch, r.Name)
			}
		}
	}
	if len(with) == 0 {
		return "The records hold no confidence intervals (a record written by bench_serving, or before servingprobe recorded them): no error bars."
	}
	note := "Error bars: each figure's " + confidenceLabel(runs) + ", as the record holds it (percentiles between order statistics, the mean by the normal approximation); none where the samples are too few to bound a figure on both sides."
	if len(sketch) > 0 {
		note += fmt.Sprintf(" Records kept with --stats sketch (%s): their percentiles' intervals include the sketch's rank error (±%g %%).",
			strings.Join(sketch, ", "), bench.SketchRelativeError*100)
	}
	if len(with) < len(runs) {
		note += " Runs whose record holds no intervals have no error bars."
	}
	return note
}
