package e2e

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/servingprobe/servingprobe/prober"
)

// snapshot is what the tests read from the daemon's registry.
type snapshot struct {
	outcomes map[string]map[prober.Outcome]int // target -> outcome -> probes (mode probe)
	lag      map[string]*dto.Histogram         // target -> scheduler lag
	skipped  map[string]float64
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func scrape(t *testing.T, g prometheus.Gatherer) snapshot {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	s := snapshot{outcomes: map[string]map[prober.Outcome]int{}, lag: map[string]*dto.Histogram{}, skipped: map[string]float64{}}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			target := label(m, "target")
			switch mf.GetName() {
			case "servingprobe_requests_total":
				if label(m, "mode") != "probe" {
					continue
				}
				if s.outcomes[target] == nil {
					s.outcomes[target] = map[prober.Outcome]int{}
				}
				if v := int(m.GetCounter().GetValue()); v > 0 {
					s.outcomes[target][prober.Outcome(label(m, "outcome"))] += v
				}
			case "servingprobe_scheduler_lag_seconds":
				s.lag[target] = m.GetHistogram()
			case "servingprobe_probes_skipped_total":
				s.skipped[target] += m.GetCounter().GetValue()
			}
		}
	}
	return s
}

// probes is the number of finished probes of target.
func (s snapshot) probes(target string) int {
	n := 0
	for _, v := range s.outcomes[target] {
		n += v
	}
	return n
}

// lagOver counts the lag observations of target above bound seconds.
func (s snapshot) lagOver(target string, bound float64) uint64 {
	h := s.lag[target]
	if h == nil {
		return 0
	}
	var under uint64
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() <= bound {
			under = b.GetCumulativeCount()
		}
	}
	return h.GetSampleCount() - under
}
