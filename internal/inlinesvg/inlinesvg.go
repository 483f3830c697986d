package inlinesvg

import (
	"fmt"
	"html/template"
	"strings"
)

// Sparkline draws v (oldest first; a negative value is a gap, a failed or
// undefined sample) as a w×h inline chart: polylines scaled from 0 to the
// maximum, a lone point between gaps as a dot, and a title naming what it
// shows with its top, formatted by format, so that the scale can be read.
// With no positive value it is a dash, not an empty box. The daemon's
// landing page draws its TTFT and ITL history with it.
func Sparkline(v []float64, w, h int, what string, format func(float64) string) template.HTML {
	top := 0.0
	for _, x := range v {
		top = max(top, x)
	}
	if top <= 0 {
		return template.HTML(`<span class="nochart">–</span>`)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" width="%d" height="%d" viewBox="0 0 %d %d" role="img"><title>%s, oldest to newest; top %s</title>`,
		w, h, w, h, template.HTMLEscapeString(what), template.HTMLEscapeString(format(top)))
	step := float64(w-2) / float64(max(len(v)-1, 1))
	var pts [][2]float64
	flush := func() {
		switch len(pts) {
		case 0:
		case 1:
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.5"/>`, pts[0][0], pts[0][1])
		default:
			b.WriteString(`<polyline points="`)
			for i, p := range pts {
				if i > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%.1f,%.1f", p[0], p[1])
			}
			b.WriteString(`"/>`)
		}
		pts = pts[:0]
	}
	for i, x := range v {
		if x < 0 {
			flush()
			continue
		}
		pts = append(pts, [2]float64{1 + float64(i)*step, float64(h-2) - x/top*float64(h-4)})
	}
	flush()
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// OutcomeStrip draws one w/len(ok) wide cell per outcome, oldest first:
// class "ok" for a success, "bad" for anything else (the page colours
// them). With no outcome it is a dash.
func OutcomeStrip(ok []bool, w, h int, title string) template.HTML {
	if len(ok) == 0 {
		return template.HTML(`<span class="nochart">–</span>`)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="outcomes" width="%d" height="%d" viewBox="0 0 %d %d" role="img"><title>%s</title>`,
		w, h, w, h, template.HTMLEscapeString(title))
	cw := float64(w) / float64(len(ok))
	for i, good := range ok {
		class := "ok"
		if !good {
			class = "bad"
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.2f" y="0" width="%.2f" height="%d"/>`, class, float64(i)*cw, max(cw-0.5, 0.5), h)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
