package exporter

import (
	"slices"
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

// histData is what one histogram series exposes: its classic buckets
// (cumulative), count, sum and the distinct values of its exemplars (a
// native histogram keeps a copy of the classic bucket's).
type histData struct {
	Buckets   []uint64
	Count     uint64
	Sum       float64
	Exemplars []float64
}

func histOf(t *testing.T, o prometheus.Observer) histData {
	t.Helper()
	var pb dtoMetric
	if err := o.(prometheus.Histogram).Write(&pb); err != nil {
		t.Fatal(err)
	}
	h := pb.GetHistogram()
	d := histData{Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
	for _, b := range h.GetBucket() {
		d.Buckets = append(d.Buckets, b.GetCumulativeCount())
		if e := b.GetExemplar(); e != nil {
			d.Exemplars = append(d.Exemplars, e.GetValue())
		}
	}
	for _, e := range h.GetExemplars() {
		d.Exemplars = append(d.Exemplars, e.GetValue())
	}
	slices.Sort(d.Exemplars)
	d.Exemplars = slices.Compact(d.Exemplars)
	return d
}

// approx compares sums, which the histogram adds in its own order.
var approx = cmp.Comparer(func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 })

// TestAnswerHistograms: a request that reasoned puts into the answer ITL
// histogram exactly the per-token samples `servingprobe probe --json`
// prints as its answer ITL (prober's AppendAnswerITLs), with its exemplar
// on the slowest of them, and into the answer TPOT histogram the history
// entry's answer_tpot_seconds: the surfaces agree. Its reasoning gaps stay
// out (the ITL histogram has them).
func TestAnswerHistograms(t *testing.T) {
	r := answerPhaseResult()
	m := NewMetrics(prometheus.NewRegistry())
	m.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm", Model: "m", Modules: []string{"mod"}}})
	m.Observer(ModeProbe).Observe(r)
	lv := []string{"t", "mod", "m", string(ModeProbe)}

	answerITLs := r.AppendAnswerITLs(nil, false)
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ref", Buckets: tokenLatencyBuckets})
	for _, v := range answerITLs {
		ref.Observe(v)
	}
	want := histOf(t, ref)
	want.Exemplars = []float64{slices.Max(answerITLs)}
	if diff := cmp.Diff(want, histOf(t, m.answerITL.WithLabelValues(lv...)), approx); diff != "" {
		t.Errorf("answer ITL histogram differs from prober's answer ITLs %v (-want +got):\n%s", answerITLs, diff)
	}
	if itl := histOf(t, m.itl.WithLabelValues(lv...)); itl.Count != uint64(len(r.AppendITLs(nil, false))) || itl.Count <= want.Count {
		t.Errorf("ITL histogram holds %d samples, want every gap (%d), more than the answer's %d", itl.Count, len(r.AppendITLs(nil, false)), want.Count)
	}

	e := entryOf(r, "m", ModeProbe, nil, &config.Redactor{})
	if e.AnswerTPOTSeconds == nil {
		t.Fatal("history entry has no answer_tpot_seconds")
	}
	got := histOf(t, m.answerTPOT.WithLabelValues(lv...))
	if got.Count != 1 || got.Sum != *e.AnswerTPOTSeconds {
		t.Errorf("answer TPOT histogram: %d samples summing %v, want one of the history's answer_tpot_seconds %v", got.Count, got.Sum, *e.AnswerTPOTSeconds)
	}
	if tpot := histOf(t, m.tpot.WithLabelValues(lv...)); tpot.Sum == got.Sum {
		t.Errorf("answer TPOT %v equals TPOT over reasoning and answer: the case cannot tell them apart", got.Sum)
	}
}

// TestAnswerHistogramsWithoutReasoning: without reasoning the answer phase
// is the whole stream, so the answer histograms hold what ITL and TPOT
// hold, bucket for bucket and exemplar for exemplar.
func TestAnswerHistogramsWithoutReasoning(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	m.SetTargets([]TargetSeries{{Name: "a", Backend: "vllm", Model: "x", Modules: []string{"m"}}})
	m.Observer(ModeProbe).Observe(successResult("a", "m", "x"))
	lv := []string{"a", "m", "x", string(ModeProbe)}
	for _, p := range []struct {
		name          string
		answer, whole *prometheus.HistogramVec
	}{{"ITL", m.answerITL, m.itl}, {"TPOT", m.answerTPOT, m.tpot}} {
		whole := histOf(t, p.whole.WithLabelValues(lv...))
		if whole.Count == 0 {
			t.Fatalf("%s holds no sample: the case tests nothing", p.name)
		}
		if diff := cmp.Diff(whole, histOf(t, p.answer.WithLabelValues(lv...))); diff != "" {
			t.Errorf("answer %s differs from %s without reasoning (-%s +answer):\n%s", p.name, p.name, p.name, diff)
		}
	}
}

// TestAnswerHistogramsNotObserved: the answer histograms count the requests
// the TTFAT histogram counts. A response that was not streamed has no
// answer phase to time, and a successful stream that ended while thinking
// has no answer.
func TestAnswerHistogramsNotObserved(t *testing.T) {
	thinking := answerPhaseResult()
	thinking.Events = thinking.Events[:6]
	thinking.FirstAnswer, thinking.End, thinking.OutputTokens = time.Time{}, thinking.Events[5].At, 6
	for _, tc := range []struct {
		name string
		r    prober.Result
	}{{"not streamed", nonStreamed()}, {"no answer", thinking}} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			m.SetTargets([]TargetSeries{{Name: tc.r.Target, Backend: "vllm", Model: tc.r.Model, Modules: []string{tc.r.Module}}})
			m.Observer(ModeProbe).Observe(tc.r)
			lv := []string{tc.r.Target, tc.r.Module, tc.r.Model, string(ModeProbe)}
			if e2e := histOf(t, m.e2e.WithLabelValues(lv...)); e2e.Count != 1 {
				t.Fatalf("E2E holds %d samples, want the request's one", e2e.Count)
			}
			for name, h := range map[string]*prometheus.HistogramVec{"ttfat": m.ttfat, "answer ITL": m.answerITL, "answer TPOT": m.answerTPOT} {
				if n := histOf(t, h.WithLabelValues(lv...)).Count; n != 0 {
					t.Errorf("%s holds %d samples, want none", name, n)
				}
			}
		})
	}
}
