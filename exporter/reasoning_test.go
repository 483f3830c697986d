package exporter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// reasoningResult is successResult with its first two events reasoning:
// the answer begins at the third, 160 ms after sending.
func reasoningResult() prober.Result {
	r := successResult("a", "m", "x")
	r.Events[0].Reasoning, r.Events[1].Reasoning = true, true
	r.FirstAnswer = r.Events[2].At
	r.ReasoningTokens, r.ReasoningTokensSource = 2, prober.TokenSourceCounted
	return r
}

// TestHistoryAnswerPhase: a request that reasoned keeps its answer phase
// in its history entry; one that did not keeps the entry it always had.
func TestHistoryAnswerPhase(t *testing.T) {
	e := entryOf(reasoningResult(), "m", ModeProbe, nil, &config.Redactor{})
	ptr := func(v float64) *float64 { return &v }
	got := struct {
		TTFAT, AnswerTPOT *float64
		Reasoning, Answer int
		Source            string
	}{e.TTFATSeconds, e.AnswerTPOTSeconds, e.ReasoningTokens, e.AnswerTokens, e.ReasoningTokenSource}
	want := got
	want.TTFAT, want.AnswerTPOT = ptr(0.160), ptr((0.185-0.160)/2)
	want.Reasoning, want.Answer, want.Source = 2, 3, "counted"
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("entryOf(reasoning) answer phase (-want +got):\n%s", diff)
	}
	plain := entryOf(successResult("a", "m", "x"), "m", ModeProbe, nil, &config.Redactor{})
	if plain.TTFATSeconds != nil || plain.AnswerTPOTSeconds != nil || plain.ReasoningTokens != 0 || plain.AnswerTokens != 0 {
		t.Errorf("entryOf(no reasoning) has an answer phase: %+v", plain)
	}
}

// TestTTFATHistogram: the answer histogram takes the first answer token
// where the request reasoned, and TTFT where it did not.
func TestTTFATHistogram(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    prober.Result
		want float64
	}{
		{"reasoning", reasoningResult(), 0.160},
		{"no reasoning", successResult("a", "m", "x"), 0.100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			(&observer{m: m, mode: ModeProbe}).record(tc.r, "x")
			h := m.ttfat.WithLabelValues("a", "m", "x", string(ModeProbe)).(prometheus.Histogram)
			if n := testutil.CollectAndCount(m.ttfat); n != 1 {
				t.Fatalf("ttfat series = %d, want 1", n)
			}
			var pb dtoMetric
			if err := h.Write(&pb); err != nil {
				t.Fatal(err)
			}
			if got := pb.GetHistogram().GetSampleSum(); got < tc.want-time.Microsecond.Seconds() || got > tc.want+time.Microsecond.Seconds() {
				t.Errorf("ttfat sum = %v, want %v", got, tc.want)
			}
		})
	}
}
