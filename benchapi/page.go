package benchapi

import (
	"encoding/json"
	"fmt"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/exporter"
)

// headlineOf is the one mapping from a run's summary to the figures the
// gauges export and the landing page shows: typed fields of the summary
// the API returns, so that the two cannot disagree.
func headlineOf(sum *bench.Summary) exporter.BenchHeadline {
	return exporter.BenchHeadline{
		RequestThroughput: sum.RequestThroughput,
		OutputThroughput:  sum.OutputThroughput,
		Completed:         sum.Completed,
		Failed:            sum.Failed,
		TTFTP99Ms:         sum.TTFT.P99,
		ITLP99Ms:          sum.ITL.P99,
	}
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
			h := headlineOf(&sum)
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
