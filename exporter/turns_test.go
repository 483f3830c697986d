package exporter

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/servingprobe/servingprobe/prober"
)

// TestTurnSeries: a conversation module gets per-turn series for its
// configured turns, pre-created at zero; its turns are observed there
// (and in the per-request series); a turn beyond the configured ones, a
// failed turn and a single-turn module add nothing per turn; lowering
// the turns on reload deletes the turns that went.
func TestTurnSeries(t *testing.T) {
	_, m := newTestMetrics()
	m.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm", Model: "x", Modules: []string{"conv", "single"}, Turns: map[string]int{"conv": 3}}})
	if got := testutil.CollectAndCount(m.turns.ttft); got != 3 {
		t.Fatalf("turn TTFT series after load = %d, want 3 (turns 1 to 3 of conv only)", got)
	}
	turn := func(module string, k int, cached int, outcome prober.Outcome) prober.Result {
		r := successResult("t", module, "x")
		r.Turn, r.CachedTokens, r.Outcome = k, cached, outcome
		return r
	}
	o := m.Observer(ModeProbe)
	for _, r := range []prober.Result{
		turn("conv", 1, 0, prober.OutcomeSuccess),
		turn("conv", 2, 10, prober.OutcomeSuccess),
		turn("conv", 3, 11, prober.OutcomeSuccess),
		turn("conv", 3, 11, prober.OutcomeHTTP5xx), // failed: per-request series only
		turn("conv", 4, 12, prober.OutcomeSuccess), // beyond the configured turns: dropped
		turn("single", 0, 5, prober.OutcomeSuccess),
	} {
		o.Observe(r)
	}
	for _, tc := range []struct {
		turn           string
		ttftCount      uint64
		prompt, cached float64
	}{
		{"1", 1, 12, 0},
		{"2", 1, 12, 10},
		{"3", 1, 12, 11},
	} {
		lv := []string{"t", "conv", "x", tc.turn}
		if got := turnHistCount(t, m.turns.ttft.WithLabelValues(lv...)); got != tc.ttftCount {
			t.Errorf("turn %s TTFT count = %d, want %d", tc.turn, got, tc.ttftCount)
		}
		if got := testutil.ToFloat64(m.turns.prompt.WithLabelValues(lv...)); got != tc.prompt {
			t.Errorf("turn %s prompt tokens = %v, want %v", tc.turn, got, tc.prompt)
		}
		if got := testutil.ToFloat64(m.turns.cached.WithLabelValues(lv...)); got != tc.cached {
			t.Errorf("turn %s cached tokens = %v, want %v", tc.turn, got, tc.cached)
		}
	}
	if got := testutil.CollectAndCount(m.turns.ttft); got != 3 {
		t.Errorf("turn TTFT series after observing = %d, want 3", got)
	}
	if got := turnHistCount(t, m.ttft.WithLabelValues("t", "conv", "x", string(ModeProbe))); got != 4 {
		t.Errorf("conv's TTFT count = %d, want every successful turn (4)", got)
	}

	m.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm", Model: "x", Modules: []string{"conv", "single"}, Turns: map[string]int{"conv": 2}}})
	if got := testutil.CollectAndCount(m.turns.ttft); got != 2 {
		t.Errorf("turn TTFT series after lowering turns to 2 = %d, want 2", got)
	}
	m.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm", Model: "x", Modules: []string{"single"}}})
	if got := testutil.CollectAndCount(m.turns.ttft) + testutil.CollectAndCount(m.turns.cached); got != 0 {
		t.Errorf("turn series after removing conv = %d, want 0", got)
	}
}

// turnHistCount is a histogram's sample count.
func turnHistCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var pb dto.Metric
	if err := o.(prometheus.Metric).Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetHistogram().GetSampleCount()
}
