package servermetrics

import (
	"slices"
	"testing"
)

// TestCompletedRequests reads each engine's completed-request counter
// from its captured exposition, summed over its labels, and finds none
// where the engine states none (llama.cpp).
func TestCompletedRequests(t *testing.T) {
	for _, tc := range []struct {
		file   string
		count  float64
		metric string // "": none stated
	}{
		{"llmd.txt", 3, "vllm:request_success"},
		{"trtllm.txt", 4, "trtllm_request_success"},
		{"dynamo.txt", 5, "dynamo_frontend_requests"},
		{"llamacpp.txt", 0, ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s := mustParse(t, "testdata/"+tc.file)
			n, metric, ok := CompletedRequests(s)
			if ok != (tc.metric != "") || n != tc.count || metric != tc.metric {
				t.Errorf("CompletedRequests = %v, %q, %v; want %v, %q", n, metric, ok, tc.count, tc.metric)
			}
		})
	}
}

// TestRequestNamesTable holds the completed-request names to Names'
// rules: an engine in Engines, under its prefix, not also in Names.
func TestRequestNamesTable(t *testing.T) {
	for _, n := range requestNames {
		if !slices.Contains(Engines, n.Engine) || !hasEnginePrefix(n.Metric) {
			t.Errorf("%s: engine %q unknown or prefix missing", n.Metric, n.Engine)
		}
		for _, m := range Names {
			if m.Metric == n.Metric {
				t.Errorf("%s is in Names too", n.Metric)
			}
		}
	}
}
