package api

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
)

// SweepOutput is a finished sweep or SLO search as the API shows it and
// the results file stores it: every point's bench_serving record (with
// its "sweep" object) and, for a search, its answer, the one the search
// filled and its JSONL's answer line holds.
type SweepOutput struct {
	Mode string `json:"mode"`
	By   string `json:"by"`
	// Records are the points' JSONL records in the order run.
	Records []json.RawMessage `json:"records"`
	// Search is an SLO search's answer: its capacity, bound, what broke
	// first, how sure it is and the settings its words name. The API
	// also shows its words under "answer" (SearchAnswer.Words), derived
	// from it each time, never stored.
	Search *bench.SearchAnswer `json:"search,omitempty"`
	// progress is the ended sweep's progress, which its window shows in
	// place of the live one (see Progress).
	progress prober.ProgressSnapshot
}

// Progress is an ended sweep's progress: every request its points sent,
// all done, and those the server failed (not those a point cut at its
// end). The live progress counts one point at a time, so that a search
// whose last point ended early on its samples would read as half done
// (69/125) once finished.
func (o *SweepOutput) Progress() prober.ProgressSnapshot { return o.progress }

// MarshalJSON adds the answer's words, as the CLI's table prints them.
func (o SweepOutput) MarshalJSON() ([]byte, error) {
	type plain SweepOutput
	return json.Marshal(struct {
		plain
		Answer string `json:"answer,omitempty"`
	}{plain(o), o.Answer()})
}

// Answer is the search's answer in words ("" for a sweep).
func (o *SweepOutput) Answer() string {
	if o.Search == nil {
		return ""
	}
	return strings.TrimSpace(o.Search.Words())
}

// Landing is the window's sweep as the landing page lists it: a search's
// answer in words, or what a sweep ran.
func (o *SweepOutput) Landing() string {
	if o.Search != nil {
		return fmt.Sprintf("SLO search, %d points: %s", len(o.Records), o.Answer())
	}
	return fmt.Sprintf("%s sweep, %d points", o.Mode, len(o.Records))
}

// sweepOutput builds the API's view of a sweep and the headline the
// gauges export: the completed and failed requests of every point (not
// those a point cut at its end: bench.Summary.ServerFailed), the
// throughput of the point that reached the highest output throughput,
// and, for a search, the capacity its answer gives (searchCapacity).
func sweepOutput(res *runner.SweepResult, records []json.RawMessage) (*SweepOutput, exporter.BenchHeadline) {
	o := &SweepOutput{Mode: res.Spec.Mode, Records: records}
	var h exporter.BenchHeadline
	for _, p := range res.Points {
		o.By = p.Info.By
		h.Completed += p.Summary.Completed
		// A request a point cut at its end is not the server's failure.
		h.Failed += p.Summary.ServerFailed()
		o.progress.Total += p.Summary.Requests
		o.progress.Failed += p.Summary.ServerFailed()
		if p.Summary.OutputThroughput >= h.OutputThroughput {
			h.OutputThroughput, h.RequestThroughput = p.Summary.OutputThroughput, p.Summary.RequestThroughput
		}
	}
	o.progress.Dispatched, o.progress.Done = o.progress.Total, o.progress.Total
	if res.Spec.Mode == bench.SweepSLO && len(res.Points) > 0 {
		a := res.SearchAnswer
		o.Search = &a
		h.CapacityBy, h.Capacity = searchCapacity(o.Search)
		if h.CapacityBy != "" && o.Search.LowerBound() {
			// The one rule of lower-boundness, which the capacity
			// check's gauge reads too (checkCapacity).
			h.CapacityBoundedBy = o.Search.BoundedBy
		}
	}
	return o, h
}

// searchCapacity is the one mapping from a search's answer to the
// capacity the gauges export: by what it varied and the value, or "" when
// the answer gives no capacity (no stable answer, or a search cut short,
// whose figures are only what its points measured).
func searchCapacity(a *bench.SearchAnswer) (by string, value float64) {
	if !a.HasCapacity() {
		return "", 0
	}
	return a.By, a.Capacity
}
