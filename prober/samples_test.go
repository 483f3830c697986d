package prober

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSamples states the rules of Result.Samples, one case each.
func TestSamples(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
	events := func(at ...float64) []Event {
		var ev []Event
		for _, a := range at {
			ev = append(ev, Event{At: ms(a), Tokens: 1})
		}
		return ev
	}
	tests := []struct {
		name string
		r    Result
		want Samples
	}{
		{
			name: "streamed: TTFT from the first token, TPOT over the tokens after it",
			r: Result{Stream: true, Scheduled: ms(-5), Sent: ms(0), FirstToken: ms(100), End: ms(130),
				Events: events(100, 110, 120, 130), OutputTokens: 4, OutputTokensSource: TokenSourceUsage},
			want: Samples{Queue: 5 * time.Millisecond, TTFT: 100 * time.Millisecond, E2E: 130 * time.Millisecond,
				TPOTSeconds: (0.130 - 0.100) / 3, OutputTokens: 4, OutputTokensSource: TokenSourceUsage, FirstTokens: 1},
		},
		{
			name: "not streamed: the answer arrives whole, so only E2E is measured",
			r: Result{Stream: false, Scheduled: ms(-5), Sent: ms(0), FirstToken: ms(100), End: ms(100),
				Events: []Event{{At: ms(100), Tokens: 4}}, OutputTokens: 4},
			want: Samples{Queue: 5 * time.Millisecond, TTFT: -1, E2E: 100 * time.Millisecond, TPOTSeconds: -1,
				OutputTokens: 4, FirstTokens: 4},
		},
		{
			name: "streamed, one token: no TPOT",
			r:    Result{Stream: true, Sent: ms(0), FirstToken: ms(100), End: ms(200), Events: events(100), OutputTokens: 1},
			want: Samples{Queue: -1, TTFT: 100 * time.Millisecond, E2E: 200 * time.Millisecond, TPOTSeconds: -1,
				OutputTokens: 1, FirstTokens: 1},
		},
		{
			name: "streamed, no output: no TTFT or TPOT",
			r:    Result{Stream: true, Sent: ms(0), End: ms(50), OutputTokens: 3},
			want: Samples{Queue: -1, TTFT: -1, E2E: 50 * time.Millisecond, TPOTSeconds: -1, OutputTokens: 3},
		},
		{
			name: "never sent: nothing is measured but the counts",
			r:    Result{Stream: true, Scheduled: ms(0), InputTokens: 7, InputTokensSource: TokenSourceDataset},
			want: Samples{Queue: -1, TTFT: -1, E2E: -1, TPOTSeconds: -1, InputTokens: 7, InputTokensSource: TokenSourceDataset},
		},
		{
			name: "a clock going backwards clamps at zero",
			r:    Result{Stream: true, Scheduled: ms(1000), Sent: ms(0), FirstToken: ms(-1000), End: ms(0), OutputTokens: 2},
			want: Samples{Queue: 0, TTFT: 0, E2E: 0, TPOTSeconds: 0, OutputTokens: 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.r.Samples()); diff != "" {
				t.Errorf("Samples() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
