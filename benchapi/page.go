package benchapi

import (
	"encoding/json"
	"fmt"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/exporter"
)

// headlineOf is the one mapping from a run's summary and record to the
// figures the gauges export and the landing page shows: typed fields of
// the summary the API returns, and the server's TTFT from the server
// metrics block of the record it returns, so that they cannot disagree.
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
const noServerBlock = "no server metrics in the record: the target sets no_server_metrics, or names no server_metrics and its url's /metrics did not answer with vLLM's or sglang's metrics (the daemon's log says why)"

// serverTTFT reads the server's TTFT p50 and p99 (ms) from a record's
// servingprobe.server block (its first endpoint, as the CLI's table
// shows first), or says why there is none. The block's keys are the
// bench package's JSONL (bench/server.go's serverRecord); a renamed key
// turns the landing cell into a dash, which TestLandingBenchRowIsTheAPIs
// and the llm-d integration test catch, since they read the API's value.
func serverTTFT(record json.RawMessage) (p50, p99 float64, missing string) {
	var r struct {
		Servingprobe struct {
			Server map[string]json.RawMessage `json:"server"`
		} `json:"servingprobe"`
	}
	if len(record) == 0 || json.Unmarshal(record, &r) != nil {
		return 0, 0, "the run has no record"
	}
	block := r.Servingprobe.Server
	if block == nil {
		return 0, 0, noServerBlock
	}
	var src, why string
	_ = json.Unmarshal(block["source"], &src)
	if json.Unmarshal(block["missing"], &why) == nil && why != "" {
		return 0, 0, "server metrics of " + src + " not read: " + why
	}
	var ttft struct {
		Count float64 `json:"count"`
		P50   float64 `json:"p50"`
		P99   float64 `json:"p99"`
	}
	raw, ok := block["ttft_ms"]
	if !ok || json.Unmarshal(raw, &ttft) != nil {
		return 0, 0, src + " has no TTFT histogram"
	}
	if ttft.Count == 0 {
		return 0, 0, src + " counted no TTFT in the run"
	}
	return ttft.P50, ttft.P99, ""
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
