package bench

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestRecordKeysOnce: every key of a written record, at the top level and
// in the servingprobe object, is written by one row only (a row added
// twice, or a block that writes a key another row writes, shows here).
// The run has goodput, vLLM-style percentiles (whose keys the standard
// ones already hold in part) and the details.
func TestRecordKeysOnce(t *testing.T) {
	results, rows := fixture()
	p := fixtureParams()
	p.Details = true
	p.Goodput = Goodput{"ttft": 150, "e2el": 1000}
	p.PercentileMetrics = []string{MetricTTFT, MetricE2EL, MetricClientQueueTime}
	p.MetricPercentiles = []float64{50, 99.9}
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	line, err := s.Record(JSONOptions{Details: true})
	if err != nil {
		t.Fatal(err)
	}
	top, err := objectFields(pythonToJSON(line))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := objectFields(rawKey(top, "servingprobe"))
	if err != nil {
		t.Fatalf("servingprobe: %v", err)
	}
	for _, o := range []struct {
		where  string
		fields []rawField
	}{{"the record", top}, {"servingprobe", sp}} {
		seen := map[string]bool{}
		for _, f := range o.fields {
			if seen[f.key] {
				t.Errorf("%s holds %q twice", o.where, f.key)
			}
			seen[f.key] = true
		}
		if len(seen) < 10 {
			t.Errorf("%s has only %d keys: %v", o.where, len(seen), seen)
		}
	}
}

// TestEchoParams: the run parameters a summary echoes go from Params into
// the Summary (Accumulator.Summary) and back (Merge) unchanged, and are
// the ones its record writes.
func TestEchoParams(t *testing.T) {
	accept := 2.5
	p := Params{Tag: "t", Backend: "sglang", Dataset: "random", RequestRate: math.Inf(1), MaxConcurrency: 7,
		Options:    datasets.Options{SharegptOutputLen: 9, RandomInputLen: 11, RandomOutputLen: 13, RandomRangeRatio: 0.5},
		ServerInfo: json.RawMessage(`{"v":1}`), AcceptLength: &accept}
	var s Summary
	s.echoParams(&p)
	want := Summary{Tag: "t", Backend: "sglang", DatasetName: "random", RequestRate: Rate(math.Inf(1)), MaxConcurrency: 7,
		SharegptOutputLen: 9, RandomInputLen: 11, RandomOutputLen: 13, RandomRangeRatio: 0.5,
		ServerInfo: json.RawMessage(`{"v":1}`), AcceptLength: &accept}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("echoParams (-want +got):\n%s", d)
	}
	if d := cmp.Diff(p, s.params()); d != "" {
		t.Errorf("params (-want +got):\n%s", d)
	}
	// Trace timestamps are the rate's other form, echoed with it.
	p = Params{UseTraceTimestamps: true}
	s = Summary{}
	s.echoParams(&p)
	if !s.UseTraceTimestamps || !s.params().UseTraceTimestamps {
		t.Errorf("UseTraceTimestamps not echoed: %+v", s)
	}
}
