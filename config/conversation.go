package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MaxTurns bounds a conversation module's turns: each turn is a value of
// the turn label on the per-turn series, so their number must stay small,
// and eight turns already resend the history seven times per probe.
const MaxTurns = 8

// Defaults of a conversation module that leaves them out: three turns
// show the cold first turn and two warm ones; a later user message of 64
// tokens is a short follow-up question, so that a warm turn's prefill is
// mostly the cached history.
const (
	DefaultTurns        = 3
	DefaultTurnInputLen = 64
)

// ConversationTurns is how many requests one probe of the module sends:
// its turns (DefaultTurns when unset) for dataset conversation, else 0.
func (m Module) ConversationTurns() int {
	if m.Dataset != "conversation" {
		return 0
	}
	if m.Turns == 0 {
		return DefaultTurns
	}
	return m.Turns
}

// ConversationTurnInputLen is the length in tokens of each user message
// after a conversation's first (DefaultTurnInputLen when unset).
func (m Module) ConversationTurnInputLen() int {
	if m.TurnInputLen == 0 {
		return DefaultTurnInputLen
	}
	return m.TurnInputLen
}

// validateConversation checks the fields of docs/conversations.md: the
// conversation's shape only on conversation modules, cache_bust only on
// single-turn ones (a conversation busts its first turn already, and
// busting a later one would defeat what it measures).
func (m Module) validateConversation(v *validator, p string) {
	if m.Dataset == "conversation" {
		if m.Turns < 0 || m.Turns > MaxTurns {
			v.add(p+".turns", "must be between 1 and %d", MaxTurns)
		}
		if m.TurnInputLen < 0 {
			v.add(p+".turn_input_len", "must be at least 1")
		}
		if m.CacheBust {
			v.add(p+".cache_bust", "only for single-turn modules: a conversation's first turn always starts with a fresh random prefix")
		}
	} else {
		if m.Turns != 0 {
			v.add(p+".turns", "only used by dataset conversation (dataset is %q)", m.Dataset)
		}
		if m.TurnInputLen != 0 {
			v.add(p+".turn_input_len", "only used by dataset conversation (dataset is %q)", m.Dataset)
		}
		if m.CacheBust && m.Dataset == "random-ids" {
			v.add(p+".cache_bust", "needs a text prompt: dataset random-ids sends token ids")
		}
	}
	if h := m.SessionHeader; h != "" {
		if !validHeaderName(h) {
			v.add(p+".session_header", "%q is not a valid HTTP header name", h)
		} else if strings.EqualFold(h, "x-request-id") {
			v.add(p+".session_header", "must not be X-Request-Id, which carries each request's own id")
		}
		for k := range m.Headers {
			if strings.EqualFold(k, h) {
				v.add(p+".session_header", "also set in headers: the session id would replace it")
			}
		}
	}
}

// validHeaderName reports whether s is an RFC 9110 field name (a token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Warnings returns what a valid config measures other than a reader may
// expect, each prefixed with its path: a fixed prompt probed again and
// again is a prefix-cache hit after the first probe, so its TTFT shows
// the cache's warm path, not prefill.
func (c *Config) Warnings() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.Modules)) {
		m := c.Modules[name]
		if m.Dataset == "fixed" && !m.CacheBust {
			out = append(out, fmt.Sprintf("modules[%q]: dataset fixed sends the same prompt on every probe, so after the first one the server's prefix cache serves it and TTFT measures the warm path only; set cache_bust: true to measure prefill (docs/conversations.md)", name))
		}
	}
	return out
}
