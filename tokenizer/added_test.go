package tokenizer

import (
	"slices"
	"testing"
)

// TestAddedMatcherFirstBytes: added tokens that share one first byte are
// found by skipping to it; tokens with several first bytes are found by
// the byte-by-byte scan. Both cut the same text the same way.
func TestAddedMatcherFirstBytes(t *testing.T) {
	const text = "x<a>y[b]z<a>"
	for _, tc := range []struct {
		name string
		toks []*AddedToken
		only int
		want []string
	}{
		{"one first byte", []*AddedToken{{ID: 1, Content: "<a>"}}, '<', []string{"x", "<a>", "y[b]z", "<a>"}},
		{"two first bytes", []*AddedToken{{ID: 1, Content: "<a>"}, {ID: 2, Content: "[b]"}}, -1, []string{"x", "<a>", "y", "[b]", "z", "<a>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newAddedMatcher(tc.toks)
			if m.only != tc.only {
				t.Errorf("only = %d, want %d", m.only, tc.only)
			}
			var got []string
			for _, seg := range m.split(nil, text, 0) {
				got = append(got, seg.text)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("split %q = %q, want %q", text, got, tc.want)
			}
		})
	}
}
