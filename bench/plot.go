package bench

import (
	"fmt"
	"io"
	"strings"
)

// Plot width and height, in characters: the plot fits an 80-column
// terminal with its labels.
const (
	plotCols = 64
	plotRows = 10
)

// WritePlot draws --plot-throughput in text, as bench_serving plots it in
// the terminal but without gnuplot: output tokens per second over the run,
// then the requests in flight. Each column is one or more intervals of the
// Timeline (their mean); each row a tenth of the highest value, with half
// blocks for a finer edge.
func (t *Timeline) WritePlot(w io.Writer) error {
	if t == nil || len(t.At) == 0 {
		_, err := fmt.Fprintln(w, "(no requests with times to plot)")
		return err
	}
	span := t.At[len(t.At)-1] + t.Width/2
	for _, p := range []struct {
		title string
		v     []float64
	}{
		{"Output token throughput (tok/s)", t.TokPerS},
		{"Concurrent requests (in flight)", t.InFlight},
	} {
		if err := plotPanel(w, p.title, resample(p.v, plotCols), span); err != nil {
			return err
		}
	}
	return nil
}

// resample averages v into n columns (or stretches it when shorter).
func resample(v []float64, n int) []float64 {
	out := make([]float64, n)
	for c := range out {
		lo, hi := c*len(v)/n, (c+1)*len(v)/n
		if hi <= lo {
			out[c] = v[min(lo, len(v)-1)]
			continue
		}
		sum := 0.0
		for _, x := range v[lo:hi] {
			sum += x
		}
		out[c] = sum / float64(hi-lo)
	}
	return out
}

func plotPanel(w io.Writer, title string, cols []float64, span float64) error {
	top := 0.0
	for _, v := range cols {
		top = max(top, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", center(" "+title+" ", '-', plotCols+10))
	for r := plotRows; r >= 1; r-- {
		label := ""
		if r == plotRows || r == 1 || r == plotRows/2 {
			label = fmtAxis(top * float64(r) / plotRows)
		}
		fmt.Fprintf(&b, "%8s |", label)
		for _, v := range cols {
			// Twice the rows' resolution: a full block, a lower half, or
			// nothing.
			h := 0.0
			if top > 0 {
				h = v / top * plotRows * 2
			}
			switch lvl := h - float64(2*(r-1)); {
			case lvl >= 1.5:
				b.WriteString("█")
			case lvl >= 0.5:
				b.WriteString("▄")
			default:
				b.WriteString(" ")
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%8s +%s\n", "0", strings.Repeat("-", plotCols))
	right := fmt.Sprintf("%.1f s", span)
	fmt.Fprintf(&b, "%10s%s%s\n", "0 s", strings.Repeat(" ", max(plotCols-len(right)-3+2, 1)), right)
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtAxis(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}
