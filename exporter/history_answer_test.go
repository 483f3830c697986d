package exporter

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// answerPhaseResult is a streamed request that reasons for six events 5 ms
// apart, waits 90 ms for its answer, then answers in gaps of 40, 60 (two
// tokens: 30 each) and 50 ms: its reasoning and answer gaps differ, so a
// measure over every gap cannot pass for the answer's.
func answerPhaseResult() prober.Result {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	r := prober.Result{RequestID: "sp-think", Target: "t", Module: "mod", Model: "m",
		Stream: true, Outcome: prober.OutcomeSuccess, Sent: ms(0), FirstToken: ms(100), FirstAnswer: ms(215), End: ms(365),
		OutputTokens: 11, OutputTokensSource: prober.TokenSourceUsage, ReasoningTokens: 6, ReasoningTokensSource: prober.TokenSourceCounted}
	for _, at := range []int{100, 105, 110, 115, 120, 125} {
		r.Events = append(r.Events, prober.Event{At: ms(at), Tokens: 1, Reasoning: true})
	}
	r.Events = append(r.Events, prober.Event{At: ms(215), Tokens: 1}, prober.Event{At: ms(255), Tokens: 1},
		prober.Event{At: ms(315), Tokens: 2}, prober.Event{At: ms(365), Tokens: 1})
	return r
}

// TestHistoryAnswerITL: a history entry's answer ITL median is the median
// (the lower one, as ITLMedianSeconds takes it) of the per-token answer
// samples `servingprobe probe --json` prints (prober's AppendAnswerITLs),
// and leaves out the reasoning's gaps; a request without reasoning has
// none.
func TestHistoryAnswerITL(t *testing.T) {
	r := answerPhaseResult()
	probeList := r.AppendAnswerITLs(nil, false) // what probe --json prints
	if len(probeList) != 4 {
		t.Fatalf("the case needs four answer samples, got %v", probeList)
	}
	sorted := slices.Sorted(slices.Values(probeList))
	want := sorted[int(math.Ceil(0.5*float64(len(sorted))))-1]
	e := entryOf(r, "m", ModeProbe, nil, &config.Redactor{})
	if e.AnswerITLMedianSeconds == nil || *e.AnswerITLMedianSeconds != want {
		t.Errorf("answer ITL median = %v, want %v (the lower median of %v)", e.AnswerITLMedianSeconds, want, probeList)
	}
	if e.ITLMedianSeconds == nil || *e.ITLMedianSeconds != (5*time.Millisecond).Seconds() || want != (30*time.Millisecond).Seconds() {
		t.Errorf("ITL median = %v, answer ITL median %v: want 5 ms and 30 ms", e.ITLMedianSeconds, want)
	}
	plain := r
	plain.ReasoningTokensSource, plain.ReasoningTokens, plain.FirstAnswer = "", 0, time.Time{}
	plain.Events = slices.Clone(r.Events)
	for i := range plain.Events {
		plain.Events[i].Reasoning = false
	}
	if e := entryOf(plain, "m", ModeProbe, nil, &config.Redactor{}); e.AnswerITLMedianSeconds != nil {
		t.Errorf("a request without reasoning has an answer ITL median %v", *e.AnswerITLMedianSeconds)
	}
}
