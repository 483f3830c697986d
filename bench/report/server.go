package report

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
)

// serverReqs pair what a server stated about each successful request's
// time (the details' server_timings, ollama's final object) with what the
// client measured for the same request, in ms, the x values in seconds
// from the start. Each pair of slices holds only requests that have both
// sides: a request not streamed has no TTFT and a one-token request no
// TPOT, as in reqs.
type serverReqs struct {
	// n counts the successful requests that stated timings, of ok.
	n, ok                   int
	prefillSent, ttftMs     []float64
	prefillMs               []float64 // load + prompt eval
	e2eSent, e2eMs, totalMs []float64
	tpotMs, perTokenMs      []float64 // each alone: distributions, not pairs
	load, promptEval, eval  []float64 // the server's, for the table
}

// serverRequestsOf reads the server's timings of s's measured successes
// (bench.Summary.DetailRequests, the requests the summary's latencies
// count, with their samples); ok is false when none stated any.
func serverRequestsOf(s *bench.Summary) (serverReqs, bool) {
	var v serverReqs
	for r := range s.DetailRequests() {
		if !r.Measured() {
			continue
		}
		v.ok++
		st := r.Server
		if st == nil {
			continue
		}
		v.n++
		v.load, v.promptEval, v.eval = append(v.load, st.LoadDuration*1000), append(v.promptEval, st.PromptEvalDuration*1000),
			append(v.eval, st.EvalDuration*1000)
		if pt := st.PerOutputToken(); pt >= 0 {
			v.perTokenMs = append(v.perTokenMs, pt*1000)
		}
		v.e2eSent, v.e2eMs, v.totalMs = append(v.e2eSent, r.Sent), append(v.e2eMs, r.E2E*1000), append(v.totalMs, st.TotalDuration*1000)
		// The server's prefill is set beside the client's TTFT only where
		// a first token arrived: an empty success has a TTFT of 0 that is
		// no wait for a token.
		if r.FirstToken < 0 || r.TTFT < 0 {
			continue
		}
		v.prefillSent, v.ttftMs = append(v.prefillSent, r.Sent), append(v.ttftMs, r.TTFT*1000)
		v.prefillMs = append(v.prefillMs, (st.LoadDuration+st.PromptEvalDuration)*1000)
		if r.TPOT >= 0 {
			v.tpotMs = append(v.tpotMs, r.TPOT*1000)
		}
	}
	return v, v.n > 0
}

// serverSection draws the server's timings beside the client's; false
// when no successful request of the run stated any.
func serverSection(s *bench.Summary) (section, bool) {
	v, ok := serverRequestsOf(s)
	if !ok {
		return section{}, false
	}
	note := fmt.Sprintf("What the server stated about each request in its final object (ollama's load, prompt eval and eval durations), beside what the client measured for the same request: "+
		"the server's load and prompt eval are its part of TTFT, its eval per output token its part of TPOT, and its total its part of E2E; the rest is the network, the stream and any wait the server does not count. "+
		"%d of the run's %d successful requests stated timings.", v.n, v.ok)
	var charts []template.HTML
	if len(v.ttftMs) > 0 {
		c := chart{ID: "server-prefill", Title: "TTFT and the server's load + prompt eval", XLabel: "sent (s from start)", YLabel: "ms", YFromZero: true,
			Series: []series{{Name: "TTFT (client)", Kind: points, X: v.prefillSent, Y: v.ttftMs},
				{Name: "load + prompt eval (server)", Kind: points, X: v.prefillSent, Y: v.prefillMs}}}
		charts = append(charts, c.SVG())
	}
	c := chart{ID: "server-e2e", Title: "E2E latency and the server's total duration", XLabel: "sent (s from start)", YLabel: "ms", YFromZero: true,
		Series: []series{{Name: "E2E (client)", Kind: points, X: v.e2eSent, Y: v.e2eMs},
			{Name: "total (server)", Kind: points, X: v.e2eSent, Y: v.totalMs}}}
	charts = append(charts, c.SVG())
	if len(v.tpotMs) > 0 || len(v.perTokenMs) > 0 {
		c := chart{ID: "server-per-token", Title: "TPOT and the server's eval per output token: cumulative distributions", XLabel: "ms per output token", YLabel: "fraction ≤ x", YFromZero: true}
		for _, s := range []struct {
			name string
			vals []float64
		}{{"TPOT (client)", v.tpotMs}, {"eval per token (server)", v.perTokenMs}} {
			if len(finiteValues(s.vals)) > 0 {
				x, y := cdf(s.vals)
				c.Series = append(c.Series, series{Name: s.name, Kind: line, X: x, Y: y})
			}
		}
		charts = append(charts, c.SVG())
	}
	return section{Title: "Server timings", Note: note, Table: serverTable(v), Charts: charts}, true
}

// serverTable states the server's durations across the requests that
// stated them: how many, their mean, median and maximum in ms.
func serverTable(v serverReqs) template.HTML {
	var b strings.Builder
	b.WriteString(`<table class="compare server-timings" style="margin:4px 0 12px"><tr><th>stated by the server</th><th>requests</th><th>mean (ms)</th><th>median (ms)</th><th>max (ms)</th></tr>`)
	for _, r := range []struct {
		name string
		vals []float64
	}{{"load", v.load}, {"prompt eval", v.promptEval}, {"eval", v.eval}, {"eval per output token", v.perTokenMs}, {"total", v.totalMs}} {
		if len(r.vals) == 0 {
			continue
		}
		mean, median, most := meanMedianMax(r.vals)
		fmt.Fprintf(&b, `<tr><td>%s</td><td class="num">%d</td><td class="num">%.2f</td><td class="num">%.2f</td><td class="num">%.2f</td></tr>`,
			template.HTMLEscapeString(r.name), len(r.vals), mean, median, most)
	}
	b.WriteString(`</table>`)
	return template.HTML(b.String())
}

// meanMedianMax of a non-empty slice; the median of an even count is the
// mean of the middle two, as NumPy's.
func meanMedianMax(vals []float64) (mean, median, most float64) {
	s := slices.Sorted(slices.Values(vals))
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	median = s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return mean, median, s[len(s)-1]
}
