package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/bench"
)

// TestConversationSection: a run of conversations gets a section with the
// console's "Conversation turns" rows (not repeated in the summary), TTFT
// by turn and, where the server stated cached tokens, the cached share by
// turn; a run without conversations gets none.
func TestConversationSection(t *testing.T) {
	s := reasoningRun(t)
	s.Conversations = &bench.Conversations{Sessions: 4, EndedByFailure: 1, Turns: []bench.TurnStats{
		{Turn: 1, Requests: 4, Completed: 4, TTFT: bench.Stats{Median: 600, P99: 700}, InputTokens: 4000},
		{Turn: 2, Requests: 4, Completed: 3, TTFT: bench.Stats{Median: 40, P99: 60}, InputTokens: 3300, CachedTokens: 3000},
	}}
	page := render(t, Run{Name: "run.jsonl", Summary: s})
	rows := pageRows(t, page, "conversation-turns")
	if diff := cmp.Diff(consoleSection(t, s, "Conversation turns", 0), rows); diff != "" {
		t.Errorf("conversation rows: console (-) and page (+) differ:\n%s", diff)
	}
	if strings.Count(page, "Turn 2 median TTFT (ms):") != 1 {
		t.Error("the turn rows are not shown exactly once (the summary must leave them to their section)")
	}
	byID, _ := charts(page)
	for id, n := range map[string]string{"turn-ttft": "4", "turn-cached": "2"} {
		if c, ok := byID[id]; !ok || !strings.Contains(c, `data-points="`+n+`"`) {
			t.Errorf("chart %s missing or not %s bars", id, n)
		}
	}
	// No cached token stated (ollama): no cached chart.
	for i := range s.Conversations.Turns {
		s.Conversations.Turns[i].CachedTokens = 0
	}
	if byID, _ := charts(render(t, Run{Name: "run.jsonl", Summary: s})); byID["turn-cached"] != "" {
		t.Error("a cached-share chart for a server that stated no cached tokens")
	}
	s.Conversations = nil
	if page := render(t, Run{Name: "run.jsonl", Summary: s}); strings.Contains(page, "Conversation turns") {
		t.Error("a run without conversations has a conversation section")
	}
}
