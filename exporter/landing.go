package exporter

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/internal/inlinesvg"
	"github.com/servingprobe/servingprobe/prober"
)

// The landing page is the page an on-call engineer opens first: one row
// per configured target and module with its current state and small charts
// of its kept history, then the bench windows, then the newest results.
// Charts are inline SVG from internal/inlinesvg: the page must work offline behind the web config, with no script
// or file to fetch.

// landingResults is how many history entries the landing page lists.
const landingResults = 25

func (d *Daemon) handleLanding(w http.ResponseWriter, r *http.Request) {
	var links []web.LandingLinks
	for _, l := range d.links {
		links = append(links, web.LandingLinks{Address: l.path, Text: l.text, Description: l.desc})
	}
	entries := d.history.List()
	var extra bytes.Buffer
	if err := landingTmpl.Execute(&extra, landingData{
		Targets: targetViews(d.Config(), d.history.recentEntries(), d.health.figures),
		Benches: d.benchesView(),
		Recent:  entries[:min(len(entries), landingResults)],
		More:    len(entries) > landingResults,
		Kept:    d.o.HistorySize,
	}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	lp, err := web.NewLandingPage(web.LandingConfig{
		Name:        "servingprobe",
		Description: "Prometheus exporter, continuous prober and benchmark client for LLM inference servers",
		Version:     version.Info(),
		Links:       links,
		ExtraHTML:   extra.String(),
		ExtraCSS:    landingCSS,
		Profiling:   "false",
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	lp.ServeHTTP(w, r)
}

type landingData struct {
	Targets []targetView
	// Benches is nil when the daemon runs no bench windows.
	Benches *benchesView
	Recent  []HistoryEntry
	More    bool
	// Kept is how many last results the history keeps.
	Kept int
}

// targetView is one target and module's row: its success ratio from the
// request counters over a stated window, and its latencies and charts over
// its last results (the newest landingResults are listed below it).
type targetView struct {
	Target, Module, Backend, Model string
	// Last is the newest kept result; nil before the first probe ends.
	Last *HistoryEntry
	// Health is the success ratio from servingprobe_requests_total.
	Health healthFigures
	// Answers is the answer checks' pass rate over the kept results, with
	// the last failure's reason; empty for a module without checks.
	Answers string
	// Quantiles in seconds over the kept successes, -1 when none.
	TTFT50, TTFT99, ITL50, ITL99, E2E50 float64
	// Charts of the kept results, oldest first.
	TTFTChart, ITLChart, OutcomeChart template.HTML
}

// targetViews builds a row per configured target and module, in the
// config's order: its health from health, the rest from recent (the last
// results, oldest first, without failures kept apart, so that the charts
// are one uniform sample in time). Results of targets no longer
// configured, and ad-hoc probes, stay in the results list only.
func targetViews(cfg *config.Config, recent []HistoryEntry, health func(target, module string) healthFigures) []targetView {
	if cfg == nil {
		return nil
	}
	type key struct{ target, module string }
	byKey := map[key][]HistoryEntry{}
	for _, e := range recent {
		if e.Mode == ModeProbe {
			k := key{e.Target, e.Module}
			byKey[k] = append(byKey[k], e)
		}
	}
	var out []targetView
	for _, t := range cfg.Targets {
		for _, m := range t.Modules {
			es := byKey[key{t.Name, m}]
			v := targetView{Target: t.Name, Module: m, Backend: t.Backend, Model: t.Model,
				Health: health(t.Name, m), TTFT50: -1, TTFT99: -1, ITL50: -1, ITL99: -1, E2E50: -1}
			if len(es) > 0 {
				v.Last = &es[len(es)-1]
				if v.Model == "" {
					v.Model = v.Last.Model
				}
			}
			var ttft, e2e, itl []itlSample
			ttftLine, itlLine := make([]float64, len(es)), make([]float64, len(es))
			outcomes := make([]bool, len(es))
			for i, e := range es {
				ttftLine[i], itlLine[i], outcomes[i] = -1, -1, e.Success
				if !e.Success {
					continue
				}
				if e.TTFTSeconds != nil {
					ttft = append(ttft, itlSample{PerToken: *e.TTFTSeconds, Tokens: 1})
					ttftLine[i] = *e.TTFTSeconds
				}
				if e.E2ESeconds != nil {
					e2e = append(e2e, itlSample{PerToken: *e.E2ESeconds, Tokens: 1})
				}
				if e.ITLMedianSeconds != nil {
					itlLine[i] = *e.ITLMedianSeconds
				}
				itl = append(itl, e.itl...)
			}
			v.TTFT50, v.TTFT99 = weightedQuantile(ttft, 0.5), weightedQuantile(ttft, 0.99)
			v.ITL50, v.ITL99 = weightedQuantile(itl, 0.5), weightedQuantile(itl, 0.99)
			v.E2E50 = weightedQuantile(e2e, 0.5)
			v.TTFTChart = sparkline(ttftLine, "TTFT of each kept probe")
			v.ITLChart = sparkline(itlLine, "median ITL of each kept probe")
			v.OutcomeChart = outcomeStrip(outcomes)
			v.Answers = answersCell(es)
			out = append(out, v)
		}
	}
	return out
}

// weightedQuantile is the nearest-rank q-quantile of samples, each of
// which counts n times (an event of n tokens is n ITL samples, as in the
// histograms); -1 when there are none. It sorts s.
func weightedQuantile(s []itlSample, q float64) float64 {
	total := 0
	for _, x := range s {
		total += x.Tokens
	}
	if total == 0 {
		return -1
	}
	slices.SortFunc(s, func(a, b itlSample) int { return cmp.Compare(a.PerToken, b.PerToken) })
	rank := max(1, int(q*float64(total)+0.999999999))
	seen := 0
	for _, x := range s {
		seen += x.Tokens
		if seen >= rank {
			return x.PerToken
		}
	}
	return s[len(s)-1].PerToken
}

// Chart sizes, in CSS pixels: small enough that the target table, with
// its three charts, fits a 1,400 px window beside the figures.
const (
	chartW, chartH = 120, 28
)

// sparkline draws a kept series (seconds, oldest first, < 0 a gap) with
// report's toolkit, its top in ms in the title so the scale can be read.
func sparkline(v []float64, what string) template.HTML {
	return inlinesvg.Sparkline(v, chartW, chartH, what, ms)
}

// outcomeStrip draws one cell per kept result, oldest first.
func outcomeStrip(ok []bool) template.HTML {
	return inlinesvg.OutcomeStrip(ok, chartW, chartH/2, "outcome of each kept probe, oldest to newest")
}

// ms formats seconds as milliseconds; "–" for an undefined (negative)
// value, as every surface shows one.
func ms(s float64) string {
	if s < 0 {
		return "–"
	}
	return strconv.FormatFloat(s*1000, 'f', 1, 64) + " ms"
}

// msPair formats two quantiles in seconds as "p50 / p99 ms", the unit
// once so that the target table fits a 1,400 px window; "–" for an
// undefined (negative) value.
func msPair(a, b float64) string {
	if a < 0 && b < 0 {
		return "–"
	}
	f := func(s float64) string {
		if s < 0 {
			return "–"
		}
		return strconv.FormatFloat(s*1000, 'f', 1, 64)
	}
	return f(a) + " / " + f(b) + " ms"
}

// healthCell formats a success ratio with its counts, and the window's
// start when it is shorter than healthWindow; "–" without a request.
func healthCell(f healthFigures) template.HTML {
	if f.N == 0 {
		return "–"
	}
	out := fmt.Sprintf("%.1f%% (%d/%d)", 100*float64(f.OK)/float64(f.N), f.OK, f.N)
	if !f.Full {
		out += `<br><span class="dim">since ` + f.Since.UTC().Format(time.RFC3339) + `</span>`
	}
	return template.HTML(out)
}

// msPtr is ms for an optional value.
func msPtr(s *float64) string {
	if s == nil {
		return "–"
	}
	return ms(*s)
}

var landingTmpl = template.Must(template.Must(template.New("landing").Funcs(benchFuncs).Funcs(template.FuncMap{
	"ms":     ms,
	"msPtr":  msPtr,
	"msPair": msPair,
	"health": healthCell,
	"window": func() string { return strconv.FormatFloat(healthWindow.Minutes(), 'g', -1, 64) + "m" },
	"time":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"trunc":  func(s string) string { return prober.TruncateUTF8(s, 200) },
}).Parse(`
<h2>Targets</h2>
{{if not .Targets}}<p>No target is configured.</p>{{else}}
<div class="scroll"><table class="targets">
<tr><th>target</th><th>module</th><th>model</th><th>last outcome</th><th>success, last {{window}}</th><th>TTFT p50 / p99</th><th>ITL p50 / p99</th><th>E2E p50</th><th>TTFT</th><th>ITL</th><th>outcomes</th></tr>
{{range .Targets}}<tr class="target">
<td>{{.Target}}</td><td>{{.Module}}</td><td>{{.Model}}<br><span class="dim">{{.Backend}}</span></td>
<td>{{with .Last}}<span class="{{if .Success}}ok{{else}}bad{{end}}">{{.Outcome}}</span><br><span class="dim">{{time .Time}}</span>{{if .Error}}<br><span class="err">{{trunc .Error}}</span>{{end}}{{else}}<span class="dim">no probe has ended yet</span>{{end}}</td>
<td>{{health .Health}}{{with .Answers}}<br><span class="dim">{{.}}</span>{{end}}</td><td>{{msPair .TTFT50 .TTFT99}}</td><td>{{msPair .ITL50 .ITL99}}</td><td>{{ms .E2E50}}</td>
<td>{{.TTFTChart}}</td><td>{{.ITLChart}}</td><td>{{.OutcomeChart}}</td>
</tr>
{{end}}</table></div>
<p class="dim">Success is the increase of servingprobe_requests_total{mode="probe"} over the last {{window}} (or since the stated time, when the daemon is younger), canceled probes left out, as the burn-rate rules count it. Quantiles, charts and strip are over each target's results among the last {{.Kept}} kept, oldest to newest; quantiles are nearest-rank over successful probes, ITL weighted by tokens as in the histograms. Prometheus has the long view.</p>
{{end}}
{{with .Benches}}{{template "benches" .}}{{end}}

<h2>Recent results</h2>
{{if not .Recent}}<p>No probe has finished yet.</p>{{else}}
<div class="scroll"><table class="results"><tr><th>time</th><th>target</th><th>module</th><th>model</th><th>outcome</th><th>TTFT</th><th>ITL median</th><th>E2E</th><th>tokens in/out</th><th>error</th></tr>
{{range .Recent}}<tr><td>{{time .Time}}</td><td>{{.Target}}</td><td>{{.Module}}</td><td>{{.Model}}</td><td class="{{if .Success}}ok{{else}}bad{{end}}">{{.Outcome}}</td><td>{{msPtr .TTFTSeconds}}</td><td>{{msPtr .ITLMedianSeconds}}</td><td>{{msPtr .E2ESeconds}}</td><td>{{.InputTokens}}/{{.OutputTokens}}</td><td>{{trunc .Error}}</td></tr>
{{end}}</table></div>{{end}}
<p>All kept results: <a href="api/v1/results">api/v1/results</a></p>
`)).Parse(benchesHTML))

const landingCSS = `div.scroll{overflow-x:auto;max-width:100%}
table.results,table.targets{border-collapse:collapse;font-size:smaller}
table.results td,table.results th,table.targets td,table.targets th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:left;vertical-align:middle}
table.targets td{white-space:nowrap}table.targets td .err{white-space:normal}
.ok{color:#1a7f37}.bad{color:#cf222e;font-weight:bold}.warn{color:#9a6700;font-weight:bold}.dim{color:#666}.err{color:#cf222e;font-size:smaller}
svg.spark polyline{fill:none;stroke:#0969da;stroke-width:1.5}svg.spark circle{fill:#0969da}
svg.outcomes rect.ok{fill:#2da44e}svg.outcomes rect.bad{fill:#cf222e}
@media print{svg.outcomes rect.bad{fill:#000}}`
