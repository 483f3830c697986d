package exporter

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/config"
)

// TestSecondsViewSurfaces: the histograms, the history entry and the
// /probe gauges show one Result's TTFT, E2E and TPOT as the same numbers,
// prober.Result.SampleSeconds' (`probe --json` is held to the histograms
// by cmd/servingprobe's TestSurfacesExact).
func TestSecondsViewSurfaces(t *testing.T) {
	r := successResult("vllm", "chat", "qwen")
	sv := r.SampleSeconds()
	if sv.TTFT <= 0 || sv.E2E <= 0 || sv.TPOT <= 0 {
		t.Fatalf("SampleSeconds() = %+v: the case needs every sample defined", sv)
	}
	_, m := newTestMetrics()
	m.Observer(ModeProbe).Observe(r)
	lv := []string{"vllm", "chat", "qwen", string(ModeProbe)}
	e := entryOf(r, "qwen", ModeProbe, nil, &config.Redactor{})
	reg := prometheus.NewRegistry()
	setProbeMetrics(newProbeMetrics(reg), r)
	gauges := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		gauges[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
	}
	for _, tc := range []struct {
		name  string
		want  float64
		hist  *prometheus.HistogramVec
		entry *float64
		gauge string
	}{
		{"ttft", sv.TTFT, m.ttft, e.TTFTSeconds, "servingprobe_probe_time_to_first_token_seconds"},
		{"e2e", sv.E2E, m.e2e, e.E2ESeconds, "servingprobe_probe_e2e_request_latency_seconds"},
		{"tpot", sv.TPOT, m.tpot, e.TPOTSeconds, "servingprobe_probe_time_per_output_token_seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h := histOf(t, tc.hist.WithLabelValues(lv...)); h.Count != 1 || h.Sum != tc.want {
				t.Errorf("histogram: %d observations summing to %v, want 1 of %v", h.Count, h.Sum, tc.want)
			}
			if tc.entry == nil || *tc.entry != tc.want {
				t.Errorf("history entry = %v, want %v", tc.entry, tc.want)
			}
			if g, ok := gauges[tc.gauge]; !ok || g != tc.want {
				t.Errorf("/probe gauge %s = %v (present %t), want %v", tc.gauge, g, ok, tc.want)
			}
		})
	}
	// The history's ITL median is of the same per-token gaps the
	// histogram counts.
	if h := histOf(t, m.itl.WithLabelValues(lv...)); h.Count != uint64(len(sv.ITL.PerToken())) {
		t.Errorf("ITL histogram counted %d samples, SampleSeconds has %d", h.Count, len(sv.ITL.PerToken()))
	}
	if e.ITLMedianSeconds == nil || *e.ITLMedianSeconds != sv.ITL[0].PerToken {
		t.Errorf("history ITL median = %v, want %v", e.ITLMedianSeconds, sv.ITL[0].PerToken)
	}
}
