package report

import (
	"fmt"
	"math"

	"github.com/servingprobe/servingprobe/bench"
)

// conversationSection draws a run of conversations by turn: the console's
// "Conversation turns" rows (bench's own, so that the page and the
// console agree), each turn's TTFT, turn 1 cold and the later turns warm,
// and the share of each turn's input the server said it cached. Every
// figure is the summary's (bench.Conversations); none is derived here.
func conversationSection(s *bench.Summary) (section, bool) {
	c := s.Conversations
	if c == nil {
		return section{}, false
	}
	sec := section{Title: "Conversation turns",
		Note: fmt.Sprintf("%d conversations, %d ended by a failed turn. Turn 1 finds nothing of its prompt in the server's prefix cache (cold); each later turn resends the history, which the cache can serve (warm): a warm turn whose TTFT climbs to turn 1's means the cache no longer serves the history. The cached share is what the server stated (usage.prompt_tokens_details.cached_tokens, sglang's cached_tokens, llama.cpp's timings.cache_n); ollama states none, and its prompt evaluation time, where stated, is in the table instead.",
			c.Sessions, c.EndedByFailure)}
	if rows := tableSections(s, "Conversation turns"); len(rows) > 0 {
		sec.Table = consoleRows("conversation-turns", rows[0])
	}
	var turns []string
	var median, p99, cached []float64
	anyCached := false
	for _, t := range c.Turns {
		turns = append(turns, t.Name())
		median, p99 = append(median, t.TTFT.Median), append(p99, t.TTFT.P99)
		p := t.CachedPct()
		if math.IsNaN(p) {
			p = 0
		}
		anyCached = anyCached || t.CachedTokens > 0
		cached = append(cached, p)
	}
	sec.Charts = append(sec.Charts, groupedBars("turn-ttft", "TTFT by turn", "TTFT (ms)", turns,
		[]string{"p50", "p99"}, [][]float64{median, p99}))
	if anyCached {
		sec.Charts = append(sec.Charts, groupedBars("turn-cached", "Input the server took from its cache, by turn", "cached (% of input tokens)", turns,
			[]string{"cached"}, [][]float64{cached}))
	}
	return sec, true
}
