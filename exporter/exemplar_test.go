package exporter

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/prober"
)

func TestITLExemplarOnSlowestGap(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm", Model: "m", Modules: []string{"mod"}}})
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r := prober.Result{
		RequestID: "req-7", Target: "t", Module: "mod", Model: "m", Backend: "vllm",
		Scheduled: t0, Sent: t0, FirstToken: at(100), End: at(200),
		Events:       []prober.Event{{At: at(100), Tokens: 1}, {At: at(110), Tokens: 1}, {At: at(160), Tokens: 1}, {At: at(170), Tokens: 1}},
		OutputTokens: 4, Outcome: prober.OutcomeSuccess,
	}
	m.Observer(ModeProbe).Observe(r)

	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var exemplars []float64
	var count uint64
	for _, mf := range fams {
		if mf.GetName() != "servingprobe_inter_token_latency_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			h := mt.GetHistogram()
			count += h.GetSampleCount()
			for _, b := range h.GetBucket() {
				if e := b.GetExemplar(); e != nil {
					exemplars = append(exemplars, e.GetValue())
					if e.GetLabel()[0].GetValue() != "req-7" {
						t.Errorf("exemplar labels = %v, want request_id req-7", e.GetLabel())
					}
				}
			}
			for _, e := range h.GetExemplars() { // native histograms keep their own
				exemplars = append(exemplars, e.GetValue())
			}
		}
	}
	if count != 3 {
		t.Fatalf("ITL samples = %d, want 3 gaps", count)
	}
	if len(exemplars) == 0 {
		t.Fatal("no ITL exemplar")
	}
	for _, v := range exemplars {
		if v != 0.05 {
			t.Errorf("ITL exemplar value = %v, want the slowest gap 0.05", v)
		}
	}
}
