package config

import (
	"strings"
	"testing"
)

// TestWarnings: a fixed prompt without cache_bust is warned about (its
// TTFT is the prefix cache's warm path); with cache_bust, or any other
// dataset, it is not.
func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Module
		want string
	}{
		{"fixed", Module{Dataset: "fixed", Prompt: "hi"}, `modules["m"]: dataset fixed sends the same prompt on every probe`},
		{"fixed with cache_bust", Module{Dataset: "fixed", Prompt: "hi", CacheBust: true}, ""},
		{"random", Module{Dataset: "random"}, ""},
		{"conversation", Module{Dataset: "conversation"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join((&Config{Modules: map[string]Module{"m": tc.m}}).Warnings(), "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Warnings() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConversationTurns: the default turns apply to conversation
// modules only; other modules send one request per probe.
func TestConversationTurns(t *testing.T) {
	for _, tc := range []struct {
		m    Module
		want int
	}{
		{Module{Dataset: "conversation"}, DefaultTurns},
		{Module{Dataset: "conversation", Turns: 5}, 5},
		{Module{Dataset: "random", Turns: 5}, 0},
	} {
		if got := tc.m.ConversationTurns(); got != tc.want {
			t.Errorf("%+v.ConversationTurns() = %d, want %d", tc.m, got, tc.want)
		}
	}
}
