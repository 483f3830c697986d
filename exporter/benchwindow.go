package exporter

import (
	"fmt"
	"html/template"
	"strconv"
	"time"
)

// The exporter shows bench windows; it does not run them. The code that
// runs them (the daemon's /api/v1/benches) registers its routes on the
// Daemon, reports each run's figures through the gauges (BenchStarted,
// BenchPoint, BenchFinished) and hands the landing page its windows as
// BenchWindow values. Everything here is the shape of what is shown: typed
// figures the window code copies from its own typed summary, so that a
// number on the landing page is the number GET /api/v1/benches/{id}
// states, and cannot silently read as zero when a JSON key is renamed.

// BenchStatus is where a bench run is in its life.
type BenchStatus string

// Bench run statuses. queued: accepted, preparing (tokenizer, prompts,
// warmup); running: the measured requests are being sent; interrupted:
// the daemon was killed or crashed while the run was queued or running,
// found so at the next start.
const (
	BenchQueued      BenchStatus = "queued"
	BenchRunning     BenchStatus = "running"
	BenchSucceeded   BenchStatus = "completed"
	BenchFail        BenchStatus = "failed"
	BenchCancel      BenchStatus = "canceled"
	BenchInterrupted BenchStatus = "interrupted"
	// BenchWriteFailed is a result of servingprobe_bench_runs_total, not a
	// status: a run whose result could not be written is counted so, and
	// its status is failed with the write error.
	BenchWriteFailed BenchStatus = "write_failed"
)

// BenchResults are the result label values of
// servingprobe_bench_runs_total, listed for pre-creating series.
var BenchResults = []BenchStatus{BenchSucceeded, BenchFail, BenchCancel, BenchWriteFailed}

// BenchHeadline is the summary of a finished bench run that is exported
// and shown on the landing page. Every field is copied from the run's
// bench summary, the value the API returns in "summary".
type BenchHeadline struct {
	RequestThroughput float64 // completed requests per second: the summary's request_throughput
	OutputThroughput  float64 // output tokens per second: the summary's output_throughput
	Completed, Failed int
	// TTFTP99Ms and ITLP99Ms are the summary's ttft_ms.p99 and itl_ms.p99,
	// in milliseconds as the summary states them, so that the page shows
	// the API's number without a conversion. They are shown, not exported:
	// quantiles over the bench requests are PromQL's to compute from the
	// mode="bench" histograms.
	TTFTP99Ms, ITLP99Ms float64
	// ServerTTFTP50Ms and ServerTTFTP99Ms are the server's own TTFT over
	// the run, read from its metrics endpoint: the run record's
	// servingprobe.server.ttft_ms p50 and p99, in milliseconds. They are
	// estimates from the server's histogram buckets, as
	// histogram_quantile's. Set only when ServerMissing is "".
	ServerTTFTP50Ms, ServerTTFTP99Ms float64
	// ServerMissing says why the run has no server TTFT; "" when it has.
	ServerMissing string
	// CapacityBy and Capacity are an SLO search's capacity, as the window
	// code maps the search's one answer to them: what the search varied
	// ("request_rate" or "max_concurrency") and the highest value at which
	// every objective held (0 when none did). CapacityBy is "" for a run
	// that is no search and for a search whose answer gives no capacity.
	CapacityBy string
	Capacity   float64
	// CapacityBoundedBy names the limit of ours that bounded the answer
	// (bench.SearchAnswer.BoundedBy: max_request_rate, max_concurrency,
	// slo_max, slo_budget); "" when a point the server failed did. A
	// bounded capacity is exported as a lower bound only, never as the
	// server's capacity.
	CapacityBoundedBy string
}

// BenchWindow is one bench window as the landing page lists it.
type BenchWindow struct {
	ID             string
	Created        time.Time
	Target, Module string
	Status         BenchStatus
	// Progress is nil before the run has planned its requests.
	Progress *BenchProgress
	// Headline is nil until the run has a summary; a sweep or SLO search
	// shows Sweep instead.
	Headline *BenchHeadline
	// Sweep says what a sweep or SLO search ran and found; "" otherwise.
	Sweep string
	Error string
	// Report is the path of the run's HTML report relative to the landing
	// page; "" until it is written.
	Report string
}

// BenchProgress is how far a bench window has got. Done, Failed and Total
// count the requests of one run: the whole window, or, in a sweep or SLO
// search, the point that is running (or ran last), so Done never exceeds
// Total.
type BenchProgress struct {
	Done, Total, Failed int
	// Point is the 1-based number of the sweep point the counts are of,
	// Points how many points the sweep plans: 0 when it cannot know in
	// advance (an SLO search stops when it has bracketed the capacity).
	// Both are 0 for a run that is not a sweep.
	Point, Points int
}

// String is the progress as the landing page prints it: "7/10 (1 failed)",
// and for a sweep "point 2/4: 7/10" ("point 2: 7/10" for a search).
func (p *BenchProgress) String() string {
	if p == nil || p.Total == 0 {
		return ""
	}
	s := strconv.Itoa(p.Done) + "/" + strconv.Itoa(p.Total)
	if p.Failed > 0 {
		s += " (" + strconv.Itoa(p.Failed) + " failed)"
	}
	switch {
	case p.Point > 0 && p.Points > 0:
		s = fmt.Sprintf("point %d/%d: %s", p.Point, p.Points, s)
	case p.Point > 0:
		s = fmt.Sprintf("point %d: %s", p.Point, s)
	}
	return s
}

// landingBenches is how many bench windows the landing page lists; the
// API lists them all.
const landingBenches = 10

// SetBenchWindows makes the landing page list bench windows: list returns
// them newest first. It must be called before the handler serves.
func (d *Daemon) SetBenchWindows(list func() []BenchWindow) { d.benches = list }

// benchesView is the landing page's bench section: the newest windows and
// how many older ones the API lists besides.
type benchesView struct {
	Rows []BenchWindow
	More int
}

func (d *Daemon) benchesView() *benchesView {
	if d.benches == nil {
		return nil
	}
	all := d.benches()
	n := min(len(all), landingBenches)
	return &benchesView{Rows: all[:n], More: len(all) - n}
}

// benchFuncs format a window's figures for the landing page.
var benchFuncs = template.FuncMap{
	"reqRate": func(h *BenchHeadline) string { return strconv.FormatFloat(h.RequestThroughput, 'f', 2, 64) + " req/s" },
	"outRate": func(h *BenchHeadline) string { return strconv.FormatFloat(h.OutputThroughput, 'f', 1, 64) + " tok/s" },
	"msVal":   func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ms" },
	// msPairMs is landing.go's msPair for figures already in ms, as the
	// bench summary states them.
	"msPairMs": func(a, b float64) string { return msPair(a/1000, b/1000) },
}

// StatusText is the window's status as the landing page shows it. A
// completed run whose requests failed in part says how many of how many
// ("completed, 104/150 failed"): the headline's Failed and
// Completed+Failed, the summary's failed and completed that the API
// returns. Every request the run sent is one or the other.
func (w BenchWindow) StatusText() string {
	if h := w.Headline; w.Status == BenchSucceeded && h != nil && h.Failed > 0 {
		return fmt.Sprintf("%s, %d/%d failed", w.Status, h.Failed, h.Completed+h.Failed)
	}
	return string(w.Status)
}

// StatusClass is the CSS class of the window's status: a completed run
// with failed requests and an interrupted one are warnings, not green.
func (w BenchWindow) StatusClass() string {
	switch w.Status {
	case BenchFail:
		return "bad"
	case BenchInterrupted:
		return "warn"
	case BenchSucceeded:
		if w.Headline != nil && w.Headline.Failed > 0 {
			return "warn"
		}
		return "ok"
	}
	return "dim"
}

const benchesHTML = `{{define "benches"}}
<h2>Bench windows</h2>
{{if not .Rows}}<p>No bench window has run. Start one with <code>POST api/v1/benches</code>.</p>{{else}}
<div class="scroll"><table class="results benches"><tr><th>id</th><th>created</th><th>target</th><th>module</th><th>status</th><th>progress</th><th>requests</th><th>output</th><th>TTFT p99</th><th title="the server's own TTFT over the run, from its metrics endpoint (bucket estimates)">server TTFT p50 / p99</th><th>ITL p99</th><th>error</th></tr>
{{range .Rows}}<tr class="bench"><td><a href="api/v1/benches/{{.ID}}">{{.ID}}</a>{{if .Report}} <a href="{{.Report}}">report</a>{{end}}</td><td>{{time .Created}}</td><td>{{.Target}}</td><td>{{.Module}}</td><td class="{{.StatusClass}}">{{.StatusText}}</td><td class="progress">{{.Progress}}</td>{{if .Sweep}}<td colspan="5" class="sweep">{{.Sweep}}</td>{{else if .Headline}}<td class="reqrate">{{reqRate .Headline}}</td><td class="outrate">{{outRate .Headline}}</td><td class="ttftp99">{{msVal .Headline.TTFTP99Ms}}</td>{{with .Headline}}{{if .ServerMissing}}<td class="serverttft dim" title="{{.ServerMissing}}">–</td>{{else}}<td class="serverttft" title="the server's own histogram over the run: bucket estimates, as histogram_quantile's">{{msPairMs .ServerTTFTP50Ms .ServerTTFTP99Ms}}</td>{{end}}{{end}}<td class="itlp99">{{msVal .Headline.ITLP99Ms}}</td>{{else}}<td></td><td></td><td></td><td></td><td></td>{{end}}<td>{{.Error}}</td></tr>
{{end}}</table></div>{{if .More}}<p class="dim">{{.More}} older runs: <a href="api/v1/benches">api/v1/benches</a></p>{{end}}{{end}}
{{end}}`
