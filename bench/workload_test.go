package bench

import (
	"math"
	"slices"
	"testing"
)

func TestWorkloadDifferences(t *testing.T) {
	run := func(edit func(*Summary)) *Summary {
		s := &Summary{Backend: "vllm", DatasetName: "random", RandomInputLen: 64, RandomOutputLen: 16, RandomRangeRatio: 1, RequestRate: Rate(math.Inf(1)), MaxConcurrency: 4}
		if edit != nil {
			edit(s)
		}
		return s
	}
	for _, tc := range []struct {
		name       string
		base, cand []*Summary
		want       []string
	}{
		{"same", []*Summary{run(nil), run(nil)}, []*Summary{run(nil)}, nil},
		{"lengths", []*Summary{run(nil)}, []*Summary{run(func(s *Summary) { s.RandomInputLen = 128 })},
			[]string{"random_input_len differs: 64 in the baseline, 128 in the candidate"}},
		{"rate and backend", []*Summary{run(nil)}, []*Summary{run(func(s *Summary) { s.RequestRate, s.Backend = 4, "sglang" })},
			[]string{"backend differs: vllm in the baseline, sglang in the candidate", "request_rate differs: inf in the baseline, 4 in the candidate"}},
		{"within a side", []*Summary{run(nil), run(func(s *Summary) { s.MaxConcurrency = 8 })}, []*Summary{run(nil)},
			[]string{"max_concurrency differs between the baseline's runs: [4 8]"}},
		{"dataset", []*Summary{run(nil)}, []*Summary{run(func(s *Summary) { s.DatasetName = "sharegpt" })},
			[]string{"dataset_name differs: random in the baseline, sharegpt in the candidate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorkloadDifferences(tc.base, tc.cand); !slices.Equal(got, tc.want) {
				t.Errorf("WorkloadDifferences = %q, want %q", got, tc.want)
			}
		})
	}
}
