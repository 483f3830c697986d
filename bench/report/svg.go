package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The charts are drawn here as SVG by hand rather than with a plotting
// library: they are a few line, scatter, bar and interval charts, and
// hand-written SVG embeds in the page with no fonts, scripts or files to
// carry, prints as vectors, and lets each series state how many points
// it holds (data-points), which the browser tests read.

// kind is how a series is drawn.
type kind int

const (
	line kind = iota
	points
	bars // X are bar centres, Y heights
)

type series struct {
	Name string
	Kind kind
	X, Y []float64
	// Lo and Hi, when set on a bar series, are each bar's confidence
	// interval, drawn as an error bar where both ends are finite and
	// Lo <= Hi; an interval the record does not hold is NaN, and no bar
	// is drawn for it (a zero-width bar would claim a certainty nobody
	// measured).
	Lo, Hi []float64
}

// interval is point i's error bar, false when it has none to draw.
func (s *series) interval(i int) (lo, hi float64, ok bool) {
	if s.Kind != bars || i >= len(s.Lo) || i >= len(s.Hi) {
		return 0, 0, false
	}
	lo, hi = s.Lo[i], s.Hi[i]
	return lo, hi, finite(lo) && finite(hi) && lo <= hi
}

// mark is a labelled vertical (x) or horizontal (y) rule.
type mark struct {
	At    float64
	Label string
	Class string // "pct", "slo", "knee"
}

// segment is one bar of a timeline: [X0, X1) on row Y.
type segment struct {
	Y      float64
	X0, X1 float64
	Class  string
}

type chart struct {
	ID, Title, XLabel, YLabel string
	Series                    []series
	VMarks, HMarks            []mark
	Segments                  []segment
	// YFromZero starts the y axis at 0 (counts, rates, latencies).
	YFromZero bool
	// Categories names the x positions 0, 1, ... of a bar chart by
	// category instead of numbers.
	Categories []string
	// Height overrides the default height (a timeline needs rows).
	Height int
	// Stacked stacks the bar series at each x, in order, instead of
	// setting them side by side; a negative height is drawn down from the
	// top of the stack below it.
	Stacked bool
	// YCounts says the y axis counts whole things (requests, tokens):
	// its ticks are whole numbers.
	YCounts bool
	// XRange, when set, is the x axis's span, so that charts drawn one
	// under another share their axis (it widens to hold every point).
	XRange *[2]float64
	// IntervalNote names what the error bars are ("95 % confidence
	// interval"); it is drawn beside the title when any bar has one.
	IntervalNote string
}

const (
	chartW, chartH         = 640, 260 // chartH is the default height
	padL, padR, padT, padB = 62, 16, 28, 40
)

// points counts what the chart draws, for data-points.
func (c *chart) points() int {
	n := len(c.Segments)
	for _, s := range c.Series {
		n += len(s.X)
	}
	return n
}

// SVG renders the chart. It is total: whatever the values (none, one,
// all equal, a few ulps apart, NaN, ±Inf, ±1e308), it ends after a number
// of steps bounded by the points it is given and draws no NaN. A value that
// is NaN or infinite is no measurement and is not drawn; a finite one is
// clamped to ±maxValue, so that spans and pixel positions stay finite.
func (c *chart) SVG() template.HTML {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	growX := func(x float64) {
		if finite(x) {
			x = clampValue(x)
			xmin, xmax = min(xmin, x), max(xmax, x)
		}
	}
	growY := func(y float64) {
		if finite(y) {
			y = clampValue(y)
			ymin, ymax = min(ymin, y), max(ymax, y)
		}
	}
	grow := func(x, y float64) {
		if finite(x) && finite(y) {
			growX(x)
			growY(y)
		}
	}
	tops := map[float64]float64{} // a stack's height so far, by x
	for _, s := range c.Series {
		for i := range min(len(s.X), len(s.Y)) {
			y := s.Y[i]
			if c.Stacked && s.Kind == bars && finite(s.X[i]) && finite(y) {
				y = clampValue(y + tops[s.X[i]])
				tops[s.X[i]] = y
			}
			grow(s.X[i], y)
			if lo, hi, ok := s.interval(i); ok && !c.Stacked && finite(s.X[i]) && finite(s.Y[i]) {
				growY(lo)
				growY(hi)
			}
		}
	}
	for _, g := range c.Segments {
		grow(g.X0, g.Y)
		grow(g.X1, g.Y+1)
	}
	for _, m := range c.VMarks {
		growX(m.At)
	}
	for _, m := range c.HMarks {
		growY(m.At)
	}
	if r := c.XRange; r != nil {
		growX(r[0])
		growX(r[1])
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 1
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = 0, 1
	}
	if c.YFromZero && ymin > 0 {
		ymin = 0
	}
	for _, s := range c.Series {
		if s.Kind == bars {
			if lo, hi, ok := finiteRange(s.X); ok {
				w := min(barWidth(s.X), maxValue)
				xmin, xmax = clampValue(min(xmin, lo-w/2)), clampValue(max(xmax, hi+w/2))
			}
		}
	}
	if len(c.Categories) > 0 {
		xmin, xmax = -0.5, float64(len(c.Categories))-0.5
	}
	// A span that is empty, or too narrow for its magnitude to tell its
	// ends apart, is widened around its middle.
	if narrow(xmin, xmax) {
		mid := xmin/2 + xmax/2
		d := max(1, math.Abs(mid)*0.01)
		xmin, xmax = mid-d, mid+d
	}
	if narrow(ymin, ymax) {
		ymax = ymin + max(1, math.Abs(ymin)*0.01)
	}
	ymax += (ymax - ymin) * 0.05
	// The legend has a band of its own between the title and the plot,
	// so that it covers no data; the chart grows by the band's height.
	legend := legendLayout(c.Series)
	band := 0
	if len(legend) > 0 {
		band = legend[len(legend)-1].row*legendRowH + legendRowH
	}
	padT := padT + band // the plot's top
	chartH := cmp.Or(c.Height, chartH) + band
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	// Every value is clamped, so the spans are finite and every point
	// drawn lands inside the frame.
	px := func(x float64) float64 { return padL + (clampValue(x)-xmin)/(xmax-xmin)*pw }
	py := func(y float64) float64 { return float64(padT) + ph - (clampValue(y)-ymin)/(ymax-ymin)*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" data-chart="%s" data-points="%d" viewBox="0 0 %d %d" role="img" xmlns="http://www.w3.org/2000/svg">`,
		template.HTMLEscapeString(c.ID), c.points(), chartW, chartH)
	fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(c.Title))
	fmt.Fprintf(&b, `<text class="ctitle" x="%d" y="16">%s</text>`, padL, template.HTMLEscapeString(c.Title))
	// Axes, ticks and grid.
	fmt.Fprintf(&b, `<path class="axis" d="M%d %d V%d H%d"/>`, padL, padT, chartH-padB, chartW-padR)
	xt, xl := ticks(xmin, xmax, 6), fmtTick
	if len(c.Categories) > 0 {
		xt = nil
		for i := range c.Categories {
			xt = append(xt, float64(i))
		}
		xl = func(v float64) string { return template.HTMLEscapeString(c.Categories[int(v)]) }
	}
	for _, t := range xt {
		x := px(t)
		fmt.Fprintf(&b, `<path class="grid" d="M%.1f %d V%d"/><text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`,
			x, padT, chartH-padB, x, chartH-padB+14, xl(t))
	}
	yt := ticks(ymin, ymax, 5)
	if c.YCounts {
		yt = wholeTicks(yt, ymin, ymax)
	}
	for _, t := range yt {
		y := py(t)
		fmt.Fprintf(&b, `<path class="grid" d="M%d %.1f H%d"/><text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`,
			padL, y, chartW-padR, padL-4, y+4, fmtTick(t))
	}
	fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="middle">%s</text>`, padL+int(pw/2), chartH-6, template.HTMLEscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text class="label" transform="translate(14 %d) rotate(-90)" text-anchor="middle">%s</text>`, padT+int(ph/2), template.HTMLEscapeString(c.YLabel))

	nbars := 0
	for _, s := range c.Series {
		if s.Kind == bars {
			nbars++
		}
	}
	if c.Stacked {
		nbars = min(nbars, 1)
	}
	clear(tops)
	var errbars strings.Builder // drawn over every series, so no bar hides one
	nerr := 0
	for i, s := range c.Series {
		cls := "s" + strconv.Itoa(i%6)
		switch s.Kind {
		case line, points:
			var d strings.Builder
			n := 0
			for j := range min(len(s.X), len(s.Y)) {
				x, y := s.X[j], s.Y[j]
				if !finite(x) || !finite(y) {
					continue
				}
				cmd := "L"
				if n == 0 || s.Kind == points {
					cmd = "M"
				}
				fmt.Fprintf(&d, "%s%.1f %.1f", cmd, px(x), py(y))
				if s.Kind == points {
					d.WriteString("h0")
				}
				n++
			}
			kindName := map[kind]string{line: "line", points: "points"}[s.Kind]
			fmt.Fprintf(&b, `<path class="series %s %s" data-points="%d" d="%s"><title>%s</title></path>`,
				kindName, cls, n, d.String(), template.HTMLEscapeString(s.Name))
		case bars:
			w := barWidth(s.X) * pw / (xmax - xmin) * 0.9 / float64(nbars)
			var rects strings.Builder
			n := 0
			for j := range min(len(s.X), len(s.Y)) {
				x, y := s.X[j], s.Y[j]
				if !finite(x) || !finite(y) {
					continue
				}
				y0, y1 := py(max(ymin, 0)), py(y)
				if c.Stacked {
					base := tops[x]
					top := clampValue(base + y)
					y0, y1 = py(base), py(top)
					tops[x] = top
				}
				fmt.Fprintf(&rects, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, px(x)-w/2, min(y0, y1), max(w, 1), math.Abs(y0-y1))
				n++
				if lo, hi, ok := s.interval(j); ok && !c.Stacked {
					// The data attributes carry the values drawn, so that a
					// test can read them back through the chart's scale.
					cw := min(max(w*0.3, 2), 6)
					ylo, yhi := py(lo), py(hi)
					fmt.Fprintf(&errbars, `<path class="errbar" data-series="%d" data-value="%s" data-lo="%s" data-hi="%s" d="M%.1f %.1fV%.1fM%.1f %.1fh%.1fM%.1f %.1fh%.1f"/>`,
						i, fmtAttr(y), fmtAttr(lo), fmtAttr(hi), px(x), ylo, yhi, px(x)-cw, ylo, 2*cw, px(x)-cw, yhi, 2*cw)
					nerr++
				}
			}
			fmt.Fprintf(&b, `<g class="series bars %s" data-points="%d"><title>%s</title>%s</g>`, cls, n, template.HTMLEscapeString(s.Name), rects.String())
		}
	}
	if nerr > 0 {
		fmt.Fprintf(&b, `<g class="errbars" data-points="%d">%s</g>`, nerr, errbars.String())
		if c.IntervalNote != "" {
			fmt.Fprintf(&b, `<text class="legend errnote" x="%d" y="16" text-anchor="end">error bars: %s</text>`, chartW-padR, template.HTMLEscapeString(c.IntervalNote))
		}
	}
	if len(c.Segments) > 0 {
		fmt.Fprintf(&b, `<g class="series timeline" data-points="%d">`, len(c.Segments))
		rowH := max(ph/(ymax-ymin)*0.8, 0.6)
		for _, g := range c.Segments {
			if !finite(g.X0) || !finite(g.X1) || !finite(g.Y) {
				continue
			}
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.2f" height="%.2f"/>`,
				g.Class, px(g.X0), py(g.Y+1), max(px(g.X1)-px(g.X0), 0.5), rowH)
		}
		b.WriteString(`</g>`)
	}
	// Marks close together (p50 and p90 of a narrow distribution) put
	// their labels on rows one under another rather than over each other.
	vmarks := slices.SortedFunc(slices.Values(c.VMarks), func(a, b mark) int { return cmp.Compare(a.At, b.At) })
	var labelEnds []float64 // where each row's last label ends
	for _, m := range vmarks {
		if !finite(m.At) {
			continue
		}
		x := px(m.At)
		row := slices.IndexFunc(labelEnds, func(end float64) bool { return x+3 >= end })
		switch {
		case row >= 0:
		case len(labelEnds) < 3:
			row, labelEnds = len(labelEnds), append(labelEnds, 0)
		default:
			row = 2 // at most three rows; a fourth close mark shares the last
		}
		labelEnds[row] = x + 3 + float64(6*len([]rune(m.Label))+4)
		fmt.Fprintf(&b, `<path class="mark %s" d="M%.1f %d V%d"/><text class="mlabel" x="%.1f" y="%d">%s</text>`,
			m.Class, x, padT, chartH-padB, x+3, padT+10+11*row, template.HTMLEscapeString(m.Label))
	}
	for _, m := range c.HMarks {
		if !finite(m.At) {
			continue
		}
		y := py(m.At)
		fmt.Fprintf(&b, `<path class="mark %s" d="M%d %.1f H%d"/><text class="mlabel" x="%d" y="%.1f" text-anchor="end">%s</text>`,
			m.Class, padL, y, chartW-padR, chartW-padR-2, y-3, template.HTMLEscapeString(m.Label))
	}
	for i, it := range legend {
		fmt.Fprintf(&b, `<text class="legend s%d" x="%d" y="%d">■ %s</text>`, i%6, it.x, padT-band+it.row*legendRowH+10, template.HTMLEscapeString(c.Series[i].Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

const legendRowH = 14

// legendItem places one series' name in the legend band.
type legendItem struct{ x, row int }

// legendLayout flows the series' names left to right from the plot's
// left edge, wrapping to a new row when a name would pass the right edge
// (about 6 px a character at the legend's 11 px, and the square). A chart
// of one series needs no legend: its title names it.
func legendLayout(ss []series) []legendItem {
	if len(ss) < 2 {
		return nil
	}
	out := make([]legendItem, len(ss))
	x, row := padL, 0
	for i, s := range ss {
		w := 14 + 6*len([]rune(s.Name))
		if x > padL && x+w > chartW-padR {
			x, row = padL, row+1
		}
		out[i] = legendItem{x, row}
		x += w + 16
	}
	return out
}

// wholeTicks are the whole-number ticks of a counting axis: ticks' own
// where its step is whole, else every integer in [lo, hi] (at most a
// few, since the step was below 1).
func wholeTicks(t []float64, lo, hi float64) []float64 {
	if len(t) < 2 || t[1]-t[0] >= 1 {
		return t
	}
	var out []float64
	for v := math.Ceil(lo); v <= hi && len(out) < 8; v++ {
		out = append(out, v)
	}
	if len(out) == 0 {
		return t[:1]
	}
	return out
}

// barWidth is the smallest positive gap between sorted bar centres, 1
// when there is none.
func barWidth(xs []float64) float64 {
	w := math.Inf(1)
	for i := 1; i < len(xs); i++ {
		if d := xs[i] - xs[i-1]; finite(d) && d > 0 {
			w = min(w, d)
		}
	}
	if math.IsInf(w, 1) {
		return 1
	}
	return w
}

// maxValue bounds what a chart draws: a finite value beyond it is drawn
// at it, so that the difference of any two values is finite (and any
// real latency, count or rate is far below it).
const maxValue = 1e300

func clampValue(v float64) float64 { return min(max(v, -maxValue), maxValue) }

// finiteRange is the smallest and largest finite value of vs, clamped.
func finiteRange(vs []float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if finite(v) {
			lo, hi = min(lo, clampValue(v)), max(hi, clampValue(v))
		}
	}
	return lo, hi, lo <= hi
}

// narrow is whether [lo, hi] is too narrow to spread out: empty,
// reversed, or narrower than minRelSpan of its magnitude.
func narrow(lo, hi float64) bool {
	return !(hi-lo > max(math.Abs(lo), math.Abs(hi))*minRelSpan)
}

// ticks returns about n round values spanning [lo, hi]: at most n+1 of
// them, counted by an integer index, so that a span too narrow for its
// magnitude (a few ulps wide, where adding the step to a tick would not
// move it) or too wide for a float64 (hi-lo overflows) still ends. A span
// that is empty, reversed, not finite, or narrower than a label can tell
// apart is one tick at lo.
func ticks(lo, hi float64, n int) []float64 {
	n = max(n, 1)
	if !finite(lo) || !finite(hi) || !(hi > lo) {
		return []float64{lo}
	}
	// Halves, so that the span of two finite ends stays finite.
	half := hi/2 - lo/2
	if half <= max(math.Abs(lo), math.Abs(hi))*minRelSpan/2 {
		return []float64{lo}
	}
	step := math.Pow(10, math.Floor(math.Log10(half/float64(n))+math.Log10(2)))
	for _, m := range []float64{1, 2, 5, 10} {
		if half/(step*m) <= float64(n)/2 {
			step *= m
			break
		}
	}
	if !finite(step) || step <= 0 {
		return []float64{lo}
	}
	first := math.Ceil(lo / step)
	out := make([]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		t := (first + float64(i)) * step
		if !finite(t) || t > hi+step*1e-9 {
			break
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		out = append(out, lo)
	}
	return out
}

// minRelSpan is the narrowest span, relative to the values' magnitude,
// that an axis spreads out as it is: fmtTick prints four significant
// digits, so ticks closer than this would read the same, and a chart
// whose points all lie closer than this is drawn as one value.
const minRelSpan = 1e-9

// fmtAttr is a value as a data attribute holds it: the shortest text
// that reads back as the same float64.
func fmtAttr(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func fmtTick(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}
