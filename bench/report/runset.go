package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
)

// side is the runs of one set (Run.Side), in the order read.
type side struct {
	name string
	runs []Run
}

func (s side) summaries() []*bench.Summary {
	out := make([]*bench.Summary, len(s.runs))
	for i, r := range s.runs {
		out[i] = r.Summary
	}
	return out
}

// sets groups runs by Side, in the order each side first appears, when
// some side holds two runs or more (bench --runs N, an A/B set's two
// files, a bench window's runs): the run, not the request, is then the
// unit, and a set is drawn as one. Nil otherwise, and for a sweep's
// points, which are separate runs by design.
func sets(runs []Run) []side {
	var out []side
	at := map[string]int{}
	grouped := false
	for i, r := range runs {
		if r.Summary.Sweep != nil {
			return nil
		}
		key := r.Side
		if key == "" {
			key = fmt.Sprintf("\x00%d", i) // a side of its own
		}
		k, ok := at[key]
		if !ok {
			k = len(out)
			at[key] = k
			name := r.Side
			if name == "" {
				name = r.Name
			}
			out = append(out, side{name: name})
		}
		out[k].runs = append(out[k].runs, r)
		grouped = grouped || len(out[k].runs) > 1
	}
	if !grouped {
		return nil
	}
	return out
}

func setTitle(sides []side) string {
	parts := make([]string, len(sides))
	for i, s := range sides {
		parts[i] = fmt.Sprintf("%s (%s)", s.name, runsWord(len(s.runs)))
	}
	if len(sides) == 1 {
		return "servingprobe runs: " + parts[0]
	}
	return "servingprobe comparison of sets: " + strings.Join(parts, " against ")
}

func runsWord(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// setSections draws sets of runs: each figure of each side as the mean
// over its runs with the spread between them (bench.AcrossRuns, the
// values compare shows), each run's value beside it, and, against the
// first side, the change and its significance from bench.CompareRuns, the
// one comparison compare and the gate make; then each run's summary.
func setSections(sides []side) []section {
	var b strings.Builder
	b.WriteString(`<table class="compare"><tr><th>figure</th>`)
	for i, s := range sides {
		fmt.Fprintf(&b, `<th>%s: mean of %s</th><th>spread</th><th>each run</th>`, template.HTMLEscapeString(s.name), runsWord(len(s.runs)))
		if i > 0 {
			fmt.Fprintf(&b, `<th>Δ %% vs %s</th><th>Δ interval</th><th>significance</th>`, template.HTMLEscapeString(sides[0].name))
		}
	}
	b.WriteString(`</tr>`)
	across := make([][]bench.FigureRuns, len(sides))
	rows := make([][]bench.Comparison, len(sides))
	for i, s := range sides {
		across[i] = bench.AcrossRuns(s.summaries())
		if i > 0 {
			rows[i] = bench.CompareRuns(sides[0].summaries(), s.summaries())
		}
	}
	for k, f := range across[0] {
		fmt.Fprintf(&b, `<tr><td>%s</td>`, template.HTMLEscapeString(f.Label))
		for i := range sides {
			if k >= len(across[i]) || across[i][k].Figure != f.Figure {
				b.WriteString(`<td class="num">–</td><td></td><td></td>`)
				if i > 0 {
					b.WriteString(`<td></td><td></td><td></td>`)
				}
				continue
			}
			a := across[i][k]
			vals := make([]string, len(a.Runs))
			for j, v := range a.Runs {
				vals[j] = fmt.Sprintf("%.2f", v)
			}
			spread := "–"
			if !math.IsNaN(a.Spread) {
				spread = fmt.Sprintf("%.1f%%", 100*a.Spread)
			}
			fmt.Fprintf(&b, `<td class="num">%.2f</td><td class="num">%s</td><td class="num">%s</td>`, a.Mean, spread, strings.Join(vals, ", "))
			if i == 0 {
				continue
			}
			c := rows[i][k]
			pct, cls := "–", ""
			if p := c.Pct(); !math.IsNaN(p) {
				pct = fmt.Sprintf("%+.1f%%", p)
			}
			if c.Significant {
				cls = map[bool]string{true: "worse", false: "better"}[c.Worse()]
			}
			fmt.Fprintf(&b, `<td class="num %s">%s</td><td class="num">%s</td><td class="num %s">%s</td>`, cls, pct,
				template.HTMLEscapeString(c.DiffText()), cls, template.HTMLEscapeString(c.Verdict()))
		}
		b.WriteString(`</tr>`)
	}
	b.WriteString(`</table>`)
	note := "Each figure is the mean over the side's runs; spread is the standard deviation between its runs over that mean, " +
		"the drift between runs of the same server that a change must exceed."
	if len(sides) > 1 {
		note += " Each side against the first: Δ interval and significance are compare's (Welch's t test on the runs' figures, " +
			"on their logarithms, p-values Holm-adjusted over the rows), which takes two runs or more a side; red is a " +
			"significant worsening, green a significant improvement, nothing else is coloured. With one run on a side every " +
			"row reads \"? (one run)\": " + bench.OneRunNote + "."
	}
	secs := []section{{Title: "Across runs", Note: note, Table: template.HTML(b.String())}}
	for _, s := range sides {
		for _, r := range s.runs {
			secs = append(secs, section{Title: "Summary: " + r.Name, Table: tableHTML(r.Summary, nil)})
		}
	}
	return secs
}
