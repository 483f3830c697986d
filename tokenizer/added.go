package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AddedToken is an entry of tokenizer.json's added_tokens: matched in the
// text before the model runs, never split by BPE.
type AddedToken struct {
	ID         int
	Content    string
	SingleWord bool // only matches as a whole word
	LStrip     bool // swallows whitespace on its left
	RStrip     bool // swallows whitespace on its right
	Normalized bool // matched against normalized rather than raw text
	Special    bool // removed by Decode with skipSpecialTokens
}

// addedMatcher finds added tokens leftmost-longest, as HF's Aho-Corasick
// automaton (MatchKind::LeftmostLongest) does. Candidates are indexed by
// first byte; real tokenizers have a few hundred added tokens at most.
type addedMatcher struct {
	byFirst [256][]*AddedToken // longest first
	// only is the first byte all the tokens share, or -1: real
	// tokenizers' added tokens all begin with '<', and
	// strings.IndexByte skips the text between them many bytes at a time.
	only int
}

func newAddedMatcher(toks []*AddedToken) *addedMatcher {
	if len(toks) == 0 {
		return nil
	}
	m := &addedMatcher{only: -1}
	for _, t := range toks {
		if t.Content == "" {
			continue
		}
		c := t.Content[0]
		m.byFirst[c] = append(m.byFirst[c], t)
	}
	firsts := 0
	for i := range m.byFirst {
		l := m.byFirst[i]
		if len(l) > 0 {
			firsts++
			m.only = i
		}
		sort.SliceStable(l, func(a, b int) bool { return len(l[a].Content) > len(l[b].Content) })
	}
	if firsts != 1 {
		m.only = -1
	}
	return m
}

// segment is a piece of input: either an added token (tok != nil) or text
// for the model; start is its byte offset in the input.
type segment struct {
	text  string
	start int
	tok   *AddedToken
}

// split cuts s into text and added-token segments, applying single_word,
// lstrip and rstrip as HF's AddedVocabulary::find_matches does.
func (m *addedMatcher) split(dst []segment, s string, base int) []segment {
	if m == nil {
		return append(dst, segment{text: s, start: base})
	}
	startOffset := 0
	for i := 0; i < len(s); {
		if m.only >= 0 {
			k := strings.IndexByte(s[i:], byte(m.only))
			if k < 0 {
				break
			}
			i += k
		}
		cands := m.byFirst[s[i]]
		var tok *AddedToken
		for _, c := range cands {
			if strings.HasPrefix(s[i:], c.Content) {
				tok = c
				break
			}
		}
		if tok == nil {
			i++
			continue
		}
		start, stop := i, i+len(tok.Content)
		i = stop // the automaton resumes after the match, kept or not
		if tok.SingleWord && (endsWithWord(s[:start]) || startsWithWord(s[stop:])) {
			continue
		}
		if tok.LStrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), startOffset)
		}
		if tok.RStrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		if start > startOffset {
			dst = append(dst, segment{text: s[startOffset:start], start: base + startOffset})
		}
		dst = append(dst, segment{text: s[start:stop], start: base + start, tok: tok})
		startOffset = stop
		i = max(i, stop)
	}
	if startOffset < len(s) {
		dst = append(dst, segment{text: s[startOffset:], start: base + startOffset})
	}
	return dst
}

func isWordChar(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}
