package benchapi

import (
	"encoding/json"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/exporter"
)

// SweepOutput is a finished sweep or SLO search as the API shows it: every
// point's bench_serving record (with its "sweep" object) and, for a
// search, the answer.
type SweepOutput struct {
	Mode string `json:"mode"`
	By   string `json:"by"`
	// Records are the points' JSONL records in the order run.
	Records []json.RawMessage `json:"records"`
	// Capacity is the highest value at which every objective held (0: none
	// did; absent when the search found no stable answer) and Bound the lowest that failed (0: none did); Answer says it
	// in words, with what broke first and the cost against a fixed grid.
	Capacity *float64        `json:"capacity,omitempty"`
	Bound    *float64        `json:"bound,omitempty"`
	Broke    []bench.Verdict `json:"broke,omitempty"`
	Answer   string          `json:"answer,omitempty"`
}

// sweepOutput builds the API's view of a sweep and the headline the
// gauges export: the completed and failed requests of every point, the
// throughput of the point that reached the highest output throughput,
// and, for a search, the capacity.
func sweepOutput(res *benchrun.SweepResult, records []json.RawMessage) (*SweepOutput, exporter.BenchHeadline) {
	o := &SweepOutput{Mode: res.Spec.Mode, Records: records}
	var h exporter.BenchHeadline
	for _, p := range res.Points {
		o.By = p.Info.By
		h.Completed += p.Summary.Completed
		h.Failed += p.Summary.Failed
		if p.Summary.OutputThroughput >= h.OutputThroughput {
			h.OutputThroughput, h.RequestThroughput = p.Summary.OutputThroughput, p.Summary.RequestThroughput
		}
	}
	if res.Spec.Mode == bench.SweepSLO && len(res.Points) > 0 {
		o.Answer = strings.TrimSpace(res.Table().Answer(o.By))
		if res.Unstable {
			// No stable answer: no capacity, in the API as in the
			// answer's words, and no gauge.
			return o, h
		}
		capacity, bound := res.Capacity, res.Bound
		o.Capacity, o.Bound, o.Broke = &capacity, &bound, res.Broke
		h.Capacity = &exporter.BenchCapacity{By: o.By, Value: capacity}
	}
	return o, h
}
