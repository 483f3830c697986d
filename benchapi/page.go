package benchapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/exporter"
)

// landingBenches is how many bench windows the landing page lists; the
// API lists them all.
const landingBenches = 10

// benchRow is one bench window on the landing page.
type benchRow struct {
	View
	Done, Total, Failed int
	// Headline numbers from the summary; "" before the run ends.
	ReqRate, OutRate, TTFTp99, ITLp99 string
	// Sweep says what a sweep or SLO search ran and found; "" otherwise.
	Sweep string
}

// landingSection renders the newest bench windows for the daemon's
// landing page: their state, progress and headline numbers, each linking
// to its full result.
func (b *Windows) landingSection() template.HTML {
	b.mu.Lock()
	views := b.listLocked()
	b.mu.Unlock()
	rows := make([]benchRow, 0, min(len(views), landingBenches))
	for _, v := range views[:min(len(views), landingBenches)] {
		r := benchRow{View: v}
		if v.Progress != nil {
			r.Done, r.Total, r.Failed = v.Progress.Done, v.Progress.Total, v.Progress.Failed
		}
		// The API's summary, read back into the type it was written
		// from: a field it does not have fails to compile, not to show.
		var s bench.Summary
		if len(v.Summary) > 0 && json.Unmarshal(v.Summary, &s) == nil {
			r.ReqRate = fmt.Sprintf("%.2f req/s", s.RequestThroughput)
			r.OutRate = fmt.Sprintf("%.1f tok/s", s.OutputThroughput)
			r.TTFTp99 = fmt.Sprintf("%.1f ms", s.TTFT.P99)
			r.ITLp99 = fmt.Sprintf("%.1f ms", s.ITL.P99)
		}
		if sw := v.Sweep; sw != nil {
			r.Sweep = fmt.Sprintf("%s sweep, %d points", sw.Mode, len(sw.Records))
			if sw.Capacity != nil {
				r.Sweep = fmt.Sprintf("SLO search, %d points: capacity %s", len(sw.Records), benchrun.FormatValue(sw.By, *sw.Capacity))
			}
		}
		rows = append(rows, r)
	}
	var buf bytes.Buffer
	if err := benchesTmpl.Execute(&buf, struct {
		Rows []benchRow
		More int
	}{rows, len(views) - len(rows)}); err != nil {
		return template.HTML(template.HTMLEscapeString("bench windows: " + err.Error()))
	}
	return template.HTML(buf.String())
}

var benchesTmpl = template.Must(template.New("benches").Funcs(template.FuncMap{
	"time": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"class": func(s exporter.BenchStatus) string {
		switch s {
		case exporter.BenchFail:
			return "bad"
		case exporter.BenchSucceeded:
			return "ok"
		}
		return "dim"
	},
}).Parse(`
<h2>Bench windows</h2>
{{if not .Rows}}<p>No bench window has run. Start one with <code>POST api/v1/benches</code>.</p>{{else}}
<table class="results benches"><tr><th>id</th><th>created</th><th>target</th><th>module</th><th>status</th><th>progress</th><th>requests</th><th>output</th><th>TTFT p99</th><th>ITL p99</th><th>error</th></tr>
{{range .Rows}}<tr class="bench"><td><a href="api/v1/benches/{{.ID}}">{{.ID}}</a>{{if .Report}} <a href="{{.Report}}">report</a>{{end}}</td><td>{{time .Created}}</td><td>{{.Target}}</td><td>{{.Module}}</td><td class="{{class .Status}}">{{.Status}}</td><td>{{if .Total}}{{.Done}}/{{.Total}}{{if .Failed}} ({{.Failed}} failed){{end}}{{end}}</td>{{if .Sweep}}<td colspan="4" class="sweep">{{.Sweep}}</td>{{else}}<td>{{.ReqRate}}</td><td>{{.OutRate}}</td><td>{{.TTFTp99}}</td><td>{{.ITLp99}}</td>{{end}}<td>{{.Error}}</td></tr>
{{end}}</table>{{if .More}}<p class="dim">{{.More}} older runs: <a href="api/v1/benches">api/v1/benches</a></p>{{end}}{{end}}
`))
