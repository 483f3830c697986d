package exporter

import (
	"slices"
	"strings"
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

// targetInfoSources returns the token_source and reasoning_token_source
// of every servingprobe_target_info series of target: one pair, unless a
// change left a stale series behind.
func targetInfoSources(t *testing.T, m *Metrics, target string) [][2]string {
	t.Helper()
	ch := make(chan prometheus.Metric, 16)
	go func() { m.targetInfo.Collect(ch); close(ch) }()
	var out [][2]string
	for mt := range ch {
		var pb dtoMetric
		if err := mt.Write(&pb); err != nil {
			t.Fatal(err)
		}
		l := map[string]string{}
		for _, lp := range pb.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l[labelTarget] == target {
			out = append(out, [2]string{l[labelTokenSource], l[labelReasoningSource]})
		}
	}
	return out
}

// TestReasoningTokensCounter: the counter adds a successful request's
// reasoning count (prober.Samples.ReasoningTokens, whichever its source),
// 0 for one that did not reason, nothing for a failure; target_info says
// where the count came from.
func TestReasoningTokensCounter(t *testing.T) {
	stated := reasoningResult()
	stated.ReasoningTokens, stated.ReasoningTokensSource = 3, prober.TokenSourceUsage
	cut := reasoningResult()
	cut.Outcome = prober.OutcomeStreamCut
	for _, tc := range []struct {
		name       string
		mode       Mode
		r          prober.Result
		want, gen  float64
		wantSource string
	}{
		{"counted", ModeProbe, reasoningResult(), 2, 5, "counted"},
		{"stated by the server", ModeProbe, stated, 3, 5, "usage"},
		{"bench", ModeBench, stated, 3, 5, "usage"},
		{"no reasoning adds 0", ModeProbe, successResult("a", "m", "x"), 0, 5, "none"},
		{"failure adds nothing", ModeProbe, cut, 0, 0, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			m.SetTargets([]TargetSeries{{Name: "a", Backend: "vllm-chat", Model: "x", Modules: []string{"m"}}})
			if tc.mode == ModeBench {
				m.PrepareBench("a", "m")
			}
			lv := []string{"a", "m", "x", string(tc.mode)}
			if got := testutil.ToFloat64(m.reasoningTokens.WithLabelValues(lv...)); got != 0 {
				t.Fatalf("reasoning tokens before any request = %v, want a pre-created 0", got)
			}
			m.Observer(tc.mode).Observe(tc.r)
			if got := testutil.ToFloat64(m.reasoningTokens.WithLabelValues(lv...)); got != tc.want {
				t.Errorf("reasoning tokens = %v, want %v", got, tc.want)
			}
			if got := testutil.ToFloat64(m.genTokens.WithLabelValues(lv...)); got != tc.gen {
				t.Errorf("generation tokens = %v, want %v", got, tc.gen)
			}
			if got := tc.r.Samples().ReasoningTokens; tc.r.Outcome == prober.OutcomeSuccess && float64(got) != tc.want {
				t.Errorf("Samples().ReasoningTokens = %d, the counter added %v: two computations", got, tc.want)
			}
			srcs := targetInfoSources(t, m, "a")
			if len(srcs) != 1 || srcs[0][1] != tc.wantSource {
				t.Errorf("target_info (token_source, reasoning_token_source) = %v, want one with reasoning source %q", srcs, tc.wantSource)
			}
		})
	}
}

// TestReasoningSourceLabel: reasoning_token_source follows the last
// successful request that reasoned, keeps its value through requests
// that did not, never takes a value outside the closed set, moves
// token_source independently, leaves one target_info series, and a reload
// that changes the model resets it.
func TestReasoningSourceLabel(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	ts := []TargetSeries{{Name: "a", Backend: "vllm-chat", Model: "x", Modules: []string{"m"}}}
	m.SetTargets(ts)
	obs := m.Observer(ModeProbe)
	stated := reasoningResult()
	stated.ReasoningTokens, stated.ReasoningTokensSource = 3, prober.TokenSourceUsage
	tokenized := successResult("a", "m", "x")
	tokenized.OutputTokensSource = prober.TokenSourceTokenizer
	bogus := reasoningResult()
	bogus.ReasoningTokensSource = "made up by a future decoder"
	failed := stated
	failed.Outcome = prober.OutcomeTimeout
	counted := reasoningResult()
	counted.OutputTokensSource = prober.TokenSourceEvents
	steps := []struct {
		name string
		r    prober.Result
		want [2]string
	}{
		{"before any request", prober.Result{}, [2]string{"unknown", "none"}},
		{"counted", reasoningResult(), [2]string{"usage", "counted"}},
		{"no reasoning keeps it", successResult("a", "m", "x"), [2]string{"usage", "counted"}},
		{"stated", stated, [2]string{"usage", "usage"}},
		{"tokenizer count without reasoning", tokenized, [2]string{"tokenizer", "usage"}},
		{"a source outside the set is no label", bogus, [2]string{"usage", "usage"}},
		{"a failure changes nothing", failed, [2]string{"usage", "usage"}},
		{"both change at once", counted, [2]string{"events", "counted"}},
	}
	for _, st := range steps {
		if st.r.Target != "" {
			obs.Observe(st.r)
		}
		if got := targetInfoSources(t, m, "a"); len(got) != 1 || got[0] != st.want {
			t.Errorf("%s: target_info (token_source, reasoning_token_source) = %v, want one series %v", st.name, got, st.want)
		}
	}
	m.SetTargets(ts) // unchanged: the sources stay
	if got := targetInfoSources(t, m, "a"); len(got) != 1 || got[0] != [2]string{"events", "counted"} {
		t.Errorf("after an unchanged reload: %v, want the sources kept", got)
	}
	ts[0].Model = "y"
	m.SetTargets(ts)
	if got := targetInfoSources(t, m, "a"); len(got) != 1 || got[0] != [2]string{"unknown", "none"} {
		t.Errorf("after a reload that changed the model: %v, want both sources reset", got)
	}
}

// TestProbeReasoningGauge: /probe's reasoning gauge holds the request's
// reasoning count, the one the daemon's counter adds, 0 without reasoning;
// the debug text names its source.
func TestProbeReasoningGauge(t *testing.T) {
	stated := reasoningResult()
	stated.ReasoningTokens, stated.ReasoningTokensSource = 3, prober.TokenSourceUsage
	for _, tc := range []struct {
		name     string
		r        prober.Result
		want     float64
		wantText string
	}{
		{"counted", reasoningResult(), 2, "reasoning_tokens: 2 (counted)\n"},
		{"stated", stated, 3, "reasoning_tokens: 3 (usage)\n"},
		{"no reasoning", successResult("a", "m", "x"), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pm := newProbeMetrics(prometheus.NewRegistry())
			setProbeMetrics(pm, tc.r)
			if got := testutil.ToFloat64(pm.reasoningTokens); got != tc.want {
				t.Errorf("servingprobe_probe_reasoning_tokens = %v, want %v", got, tc.want)
			}
			m := NewMetrics(prometheus.NewRegistry())
			(&observer{m: m, mode: ModeProbe}).record(tc.r, "x")
			if got := testutil.ToFloat64(m.reasoningTokens.WithLabelValues("a", "m", "x", string(ModeProbe))); got != tc.want {
				t.Errorf("the daemon's counter added %v, /probe's gauge %v", got, tc.want)
			}
			txt := resultText(tc.r)
			if tc.wantText != "" && !strings.Contains(txt, tc.wantText) {
				t.Errorf("/probe?debug=true result lacks %q:\n%s", tc.wantText, txt)
			}
			if tc.wantText == "" && strings.Contains(txt, "reasoning_tokens") {
				t.Errorf("/probe?debug=true states reasoning for a request without:\n%s", txt)
			}
		})
	}
}
