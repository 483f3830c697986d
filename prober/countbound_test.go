package prober

import (
	"context"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
)

// bytesCounter counts one token per 4 bytes and records how many bytes it
// was asked to count; it honours its context as the tokenizer does.
type bytesCounter struct{ seen int }

func (c *bytesCounter) Count(text string) (int, error) {
	c.seen += len(text)
	return len(text) / 4, nil
}

func (c *bytesCounter) CountContext(ctx context.Context, text string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return c.Count(text)
}

// TestCountTokensIsBounded: the output count tokenizes at most
// maxCountBytes of server text for a request, whatever its size; beyond
// that the count is scaled and its source says it is an estimate, and the
// events are weighted by bytes. A done context stops counting: the result
// falls back to one token per event rather than outliving its deadline.
func TestCountTokensIsBounded(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		events     int
		eventBytes int
		wantTokens int
		wantSource TokenSource
		maxSeen    int
	}{
		{"small text is counted whole", context.Background(), 4, 1000, 1000, TokenSourceTokenizer, 2 * 4000},
		{"3 MiB text is an estimate", context.Background(), 3, 1 << 20, 3 << 18, TokenSourceTokenizerEstimate, maxCountBytes},
		{"a done context stops counting", canceled, 3, 1000, 3, TokenSourceEvents, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &bytesCounter{}
			p := &Prober{Counter: c}
			res := Result{Outcome: OutcomeSuccess, Stream: true, EventTokensSource: TokenSourceEvents}
			var text strings.Builder
			for range tc.events {
				text.WriteString(strings.Repeat("abcd", tc.eventBytes/4))
				res.Events = append(res.Events, Event{Tokens: 1, TextEnd: text.Len()})
			}
			res.GeneratedText = text.String()
			p.countTokens(tc.ctx, datasets.Prompt{}, &res)
			if res.OutputTokens != tc.wantTokens || res.OutputTokensSource != tc.wantSource {
				t.Errorf("output = %d (%s), want %d (%s)", res.OutputTokens, res.OutputTokensSource, tc.wantTokens, tc.wantSource)
			}
			if c.seen > tc.maxSeen {
				t.Errorf("tokenized %d bytes, want at most %d", c.seen, tc.maxSeen)
			}
			if got := eventTokens(res.Events); got != res.OutputTokens {
				t.Errorf("events add up to %d, want the output count %d", got, res.OutputTokens)
			}
		})
	}
}
