package bench

import (
	"fmt"
	"math"
	"strconv"
)

// workloadFields are what makes two runs the same workload: a comparison
// of runs that differ in any of them measures the workload's change as
// much as the server's.
var workloadFields = []struct {
	name string
	get  func(*Summary) string
}{
	{"backend", func(s *Summary) string { return s.Backend }},
	{"dataset_name", func(s *Summary) string { return s.DatasetName }},
	{"random_input_len", func(s *Summary) string { return strconv.Itoa(s.RandomInputLen) }},
	{"random_output_len", func(s *Summary) string { return strconv.Itoa(s.RandomOutputLen) }},
	{"random_range_ratio", func(s *Summary) string { return strconv.FormatFloat(s.RandomRangeRatio, 'g', -1, 64) }},
	{"sharegpt_output_len", func(s *Summary) string { return strconv.Itoa(s.SharegptOutputLen) }},
	{"request_rate", func(s *Summary) string {
		if math.IsInf(float64(s.RequestRate), 1) {
			return "inf"
		}
		return strconv.FormatFloat(float64(s.RequestRate), 'g', -1, 64)
	}},
	{"max_concurrency", func(s *Summary) string { return strconv.Itoa(s.MaxConcurrency) }},
}

// WorkloadDifferences says, one line a field, where the runs of base and
// cand (and the runs within either side) were not the same workload:
// backend, dataset, lengths, rate or concurrency. Empty when they all
// match.
func WorkloadDifferences(base, cand []*Summary) []string {
	var out []string
	for _, f := range workloadFields {
		seen := func(side []*Summary) []string {
			var vs []string
			for _, s := range side {
				if v := f.get(s); len(vs) == 0 || vs[len(vs)-1] != v {
					vs = append(vs, v)
				}
			}
			return vs
		}
		b, c := seen(base), seen(cand)
		switch {
		case len(b) > 1:
			out = append(out, fmt.Sprintf("%s differs between the baseline's runs: %v", f.name, b))
		case len(c) > 1:
			out = append(out, fmt.Sprintf("%s differs between the candidate's runs: %v", f.name, c))
		case len(b) == 1 && len(c) == 1 && b[0] != c[0]:
			out = append(out, fmt.Sprintf("%s differs: %s in the baseline, %s in the candidate", f.name, b[0], c[0]))
		}
	}
	return out
}
