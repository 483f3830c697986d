package api

import (
	"encoding/json"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// headlineOf is the one mapping from a run's summary to the figures the
// gauges export and the landing page shows: typed fields of the summary
// the API returns, and the server's TTFT from its server metrics blocks,
// which the record the API returns holds, so that they cannot disagree.
func headlineOf(sum *bench.Summary) exporter.BenchHeadline {
	h := exporter.BenchHeadline{
		RequestThroughput: sum.RequestThroughput,
		OutputThroughput:  sum.OutputThroughput,
		Completed:         sum.Completed,
		Failed:            sum.ServerFailed(), // not those the run cut at its time limit
		TTFTP99Ms:         sum.TTFT.P99,
		ITLP99Ms:          sum.ITL.P99,
	}
	h.ServerTTFTP50Ms, h.ServerTTFTP99Ms, h.ServerMissing = serverTTFTOf(sum.Server)
	return h
}

// fromRecord reads a run's record back into the summary the API shows
// and the headline the gauges export and the page shows: the one
// derivation of both, for a live run when it ends and for a run loaded
// from its results file, so that they cannot disagree. The record holds
// every figure the summary does (bench.ParseRecord gives it back), and
// the server blocks the summary's JSON leaves out. Nil, nil for a run
// without a record (a sweep, a failed run) or one that cannot be read.
func fromRecord(record json.RawMessage) (json.RawMessage, *exporter.BenchHeadline) {
	if len(record) == 0 || string(record) == "null" {
		return nil, nil
	}
	sum, err := bench.ParseRecord(record)
	if err != nil {
		return nil, nil
	}
	h := headlineOf(sum)
	sum.Details = nil
	js, err := json.Marshal(sum)
	if err != nil {
		return nil, nil
	}
	return js, &h
}

// noServerBlock is why a run's record has no server metrics block: the
// bench leaves it out when the endpoints were not named (the target's
// /metrics is then tried, and a miss is only logged, as the CLI does) or
// when the target turns the reads off.
const noServerBlock = "no server metrics in the record: the target sets no_server_metrics, or names no server_metrics and its url's /metrics did not answer with a known engine's metrics (the daemon's log says why)"

// serverTTFTOf is the server's TTFT p50 and p99 (ms) of a run's server
// blocks: the first block with a TTFT (a GPU exporter listed first has
// none), or why no block has one.
func serverTTFTOf(blocks []servermetrics.Report) (p50, p99 float64, missing string) {
	if len(blocks) == 0 {
		return 0, 0, noServerBlock
	}
	var why []string
	for i := range blocks {
		r := &blocks[i]
		l, ok := r.Latency(servermetrics.TTFT)
		switch {
		case r.Missing != "":
			why = append(why, "server metrics of "+r.Source+" not read: "+r.Missing)
		case !ok:
			why = append(why, r.Source+" has no TTFT histogram")
		case l.Count == 0:
			why = append(why, r.Source+" counted no TTFT in the run")
		default:
			return l.P50.Value * 1000, l.P99.Value * 1000, ""
		}
	}
	return 0, 0, strings.Join(why, "; ")
}

// landingWindows lists the bench windows for the daemon's landing page,
// newest first.
func (b *Windows) landingWindows() []exporter.BenchWindow {
	b.mu.Lock()
	defer b.mu.Unlock()
	views := b.listLocked()
	out := make([]exporter.BenchWindow, 0, len(views))
	for _, v := range views {
		w := exporter.BenchWindow{ID: v.ID, Created: v.Created, Target: v.Target, Module: v.Module,
			Status: v.Status, Error: v.Error, Report: v.Report}
		if p := v.Progress; p != nil {
			w.Progress = &exporter.BenchProgress{Done: p.Done, Total: p.Total, Failed: p.Failed}
		}
		if r := b.runs[v.ID]; r != nil {
			r.mu.Lock()
			w.Headline = r.headline
			r.mu.Unlock()
		}
		if sw := v.Sweep; sw != nil {
			w.Sweep = sw.Landing()
			if v.Tag == CapacityTag {
				// The schedule's windows, told from those a caller started.
				w.Sweep = "Scheduled capacity check: " + w.Sweep
			}
		}
		out = append(out, w)
	}
	return out
}
