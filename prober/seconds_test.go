package prober

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// secondsSuccess is a 5-token streamed request: sent 1 ms after being
// scheduled, first token 100 ms later, then events of 1, 2 and 1 tokens
// 20, 40 and 20 ms apart, [DONE] 5 ms after the last event.
func secondsSuccess() Result {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sent := t0.Add(time.Millisecond)
	ft := sent.Add(100 * time.Millisecond)
	return Result{
		Stream: true, Scheduled: t0, Sent: sent, FirstToken: ft,
		Events: []Event{
			{At: ft, Tokens: 1},
			{At: ft.Add(20 * time.Millisecond), Tokens: 1},
			{At: ft.Add(60 * time.Millisecond), Tokens: 2},
			{At: ft.Add(80 * time.Millisecond), Tokens: 1},
		},
		End: ft.Add(85 * time.Millisecond), OutputTokens: 5, Outcome: OutcomeSuccess,
	}
}

// t0 is a fixed instant for the cases below.
var secondsT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestSampleSeconds(t *testing.T) {
	ms := func(v float64) float64 { return v / 1000 }
	tests := []struct {
		name string
		r    Result
		want SampleSeconds
	}{
		{
			name: "success",
			r:    secondsSuccess(),
			want: SampleSeconds{
				Queue: ms(1), TTFT: ms(100), TTFAT: ms(100), E2E: ms(185), TPOT: (ms(185) - ms(100)) / 4,
				ITL: ITLSamples{{ms(20), 1}, {ms(20), 2}, {ms(20), 1}},
				// Without reasoning the answer phase is the whole stream.
				AnswerTPOT: (ms(185) - ms(100)) / 4, AnswerITL: ITLSamples{{ms(20), 1}, {ms(20), 2}, {ms(20), 1}},
			},
		},
		{
			name: "never sent (connect error before Sent is impossible, but a failed build is)",
			r:    Result{Scheduled: secondsT0, Outcome: OutcomeConnectError},
			want: SampleSeconds{Queue: -1, TTFT: -1, TTFAT: -1, E2E: -1, TPOT: -1, AnswerTPOT: -1},
		},
		{
			name: "one token: no TPOT, no ITL",
			r: Result{Stream: true, Sent: secondsT0, FirstToken: secondsT0.Add(time.Second), End: secondsT0.Add(2 * time.Second),
				Events: []Event{{At: secondsT0.Add(time.Second), Tokens: 1}}, OutputTokens: 1},
			want: SampleSeconds{Queue: -1, TTFT: 1, TTFAT: 1, E2E: 2, TPOT: -1, AnswerTPOT: -1},
		},
		{
			name: "reasoning first: TTFAT at the first answer event",
			r: Result{Stream: true, Sent: secondsT0, FirstToken: secondsT0.Add(time.Second), FirstAnswer: secondsT0.Add(3 * time.Second), End: secondsT0.Add(4 * time.Second),
				Events:       []Event{{At: secondsT0.Add(time.Second), Tokens: 1, Reasoning: true}, {At: secondsT0.Add(3 * time.Second), Tokens: 1}},
				OutputTokens: 2, ReasoningTokens: 1, ReasoningTokensSource: TokenSourceCounted},
			// The one gap runs from reasoning to the answer: it is not the
			// answer's, and one answer token has no TPOT.
			want: SampleSeconds{Queue: -1, TTFT: 1, TTFAT: 3, E2E: 4, TPOT: 3, ITL: ITLSamples{{2, 1}}, AnswerTPOT: -1, ReasoningTokens: 1},
		},
		{
			// No backend stamps two events on an unstreamed response; if one
			// did, its gaps would still not be an answer phase TTFAT times.
			name: "not streamed: no answer phase, whatever the events",
			r: Result{Sent: secondsT0, FirstToken: secondsT0.Add(time.Second), End: secondsT0.Add(2 * time.Second), OutputTokens: 3,
				Events: []Event{{At: secondsT0.Add(time.Second), Tokens: 1}, {At: secondsT0.Add(2 * time.Second), Tokens: 2}}},
			want: SampleSeconds{Queue: -1, TTFT: -1, TTFAT: -1, E2E: 2, TPOT: -1, ITL: ITLSamples{{0.5, 2}}, AnswerTPOT: -1},
		},
		{
			name: "zero-token events are skipped without moving the reference; huge claims are kept whole (the exporter caps what it observes)",
			r: Result{Stream: true, Sent: secondsT0, FirstToken: secondsT0, End: secondsT0.Add(time.Second),
				Events: []Event{{At: secondsT0, Tokens: 1}, {At: secondsT0.Add(time.Second)}, {At: secondsT0.Add(2 * time.Second), Tokens: 1 << 30}}},
			want: SampleSeconds{Queue: -1, TTFT: 0, TTFAT: 0, E2E: 1, TPOT: -1,
				ITL: ITLSamples{{2.0 / (1 << 30), 1 << 30}}, AnswerTPOT: -1, AnswerITL: ITLSamples{{2.0 / (1 << 30), 1 << 30}}},
		},
		{
			name: "clock going backwards clamps at zero",
			r:    Result{Stream: true, Scheduled: secondsT0.Add(time.Second), Sent: secondsT0, FirstToken: secondsT0.Add(-time.Second), End: secondsT0},
			want: SampleSeconds{Queue: 0, TTFT: 0, TTFAT: 0, E2E: 0, TPOT: -1, AnswerTPOT: -1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.SampleSeconds()
			want := tc.want
			if want.ServerTTFT == 0 && want.OutsideServerTTFT == 0 {
				want.ServerTTFT, want.OutsideServerTTFT = -1, -1 // no server statement in these results
			}
			// Samples' own fields, copied as they are.
			sm := tc.r.Samples()
			want.Reasoning, want.ReasoningTokensSource, want.AnswerTokens = sm.Reasoning, sm.ReasoningTokensSource, sm.AnswerTokens
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("SampleSeconds() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestITLSamplesPerToken: the expansion is Result.AppendITLs', and an
// empty list is an empty array, not null, in JSON.
func TestITLSamplesPerToken(t *testing.T) {
	r := secondsSuccess()
	if diff := cmp.Diff(r.AppendITLs([]float64{}, false), r.SampleSeconds().ITL.PerToken()); diff != "" {
		t.Errorf("PerToken differs from AppendITLs (-want +got):\n%s", diff)
	}
	if got := ITLSamples(nil).PerToken(); got == nil || len(got) != 0 {
		t.Errorf("ITLSamples(nil).PerToken() = %#v, want an empty non-nil slice", got)
	}
}
