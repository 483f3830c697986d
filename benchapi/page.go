package benchapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// headlineOf is the one mapping from a run's summary and record to the
// figures the gauges export and the landing page shows: typed fields of
// the summary the API returns, and the server's TTFT from the server
// metrics blocks of the record it returns, so that they cannot disagree.
// It is called on the run's output live and on the stored view after a
// restart, which hold the same summary and record.
func headlineOf(sum *bench.Summary, record json.RawMessage) exporter.BenchHeadline {
	h := exporter.BenchHeadline{
		RequestThroughput: sum.RequestThroughput,
		OutputThroughput:  sum.OutputThroughput,
		Completed:         sum.Completed,
		Failed:            sum.Failed,
		TTFTP99Ms:         sum.TTFT.P99,
		ITLP99Ms:          sum.ITL.P99,
	}
	h.ServerTTFTP50Ms, h.ServerTTFTP99Ms, h.ServerMissing = serverTTFT(record)
	return h
}

// noServerBlock is why a run's record has no server metrics block: the
// bench leaves it out when the endpoints were not named (the target's
// /metrics is then tried, and a miss is only logged, as the CLI does) or
// when the target turns the reads off.
const noServerBlock = "no server metrics in the record: the target sets no_server_metrics, or names no server_metrics and its url's /metrics did not answer with a known engine's metrics (the daemon's log says why)"

// serverTTFT is the server's TTFT p50 and p99 (ms) of a record, read back
// by bench.ParseRecord as the report and merge read it: the first server
// block with a TTFT (a GPU exporter listed first has none), or why no
// block has one.
func serverTTFT(record json.RawMessage) (p50, p99 float64, missing string) {
	if len(record) == 0 {
		return 0, 0, "the run has no record"
	}
	sum, err := bench.ParseRecord(record)
	if err != nil {
		return 0, 0, "the record cannot be read: " + err.Error()
	}
	if len(sum.Server) == 0 {
		return 0, 0, noServerBlock
	}
	var why []string
	for i := range sum.Server {
		r := &sum.Server[i]
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
	views := b.listLocked()
	b.mu.Unlock()
	out := make([]exporter.BenchWindow, 0, len(views))
	for _, v := range views {
		w := exporter.BenchWindow{ID: v.ID, Created: v.Created, Target: v.Target, Module: v.Module,
			Status: v.Status, Error: v.Error, Report: v.Report}
		if p := v.Progress; p != nil {
			w.Progress = &exporter.BenchProgress{Done: p.Done, Total: p.Total, Failed: p.Failed}
		}
		// The stored summary is decoded into the type that wrote it: its
		// fields, not keys typed here, name the figures.
		var sum bench.Summary
		if len(v.Summary) > 0 && string(v.Summary) != "null" && json.Unmarshal(v.Summary, &sum) == nil {
			h := headlineOf(&sum, v.Record)
			w.Headline = &h
		}
		if sw := v.Sweep; sw != nil {
			w.Sweep = fmt.Sprintf("%s sweep, %d points", sw.Mode, len(sw.Records))
			if sw.Capacity != nil {
				w.Sweep = fmt.Sprintf("SLO search, %d points: capacity %s", len(sw.Records), benchrun.FormatValue(sw.By, *sw.Capacity))
			}
		}
		out = append(out, w)
	}
	return out
}
