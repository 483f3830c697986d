package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// preTokenizer splits a normalized segment into words for the model. first
// is true for the segment that starts the input (Metaspace's
// prepend_scheme "first").
type preTokenizer interface {
	split(dst []string, s string, first bool) []string
}

// preTokenizers is what parsing a pre_tokenizer yields: the chain, and
// whether a ByteLevel step maps bytes to the GPT-2 alphabet (done by the
// model on raw bytes, which is equivalent and cheaper).
type preTokenizers struct {
	chain     []preTokenizer
	byteLevel bool
}

func parsePreTokenizer(raw json.RawMessage) (preTokenizers, error) {
	var p preTokenizers
	if isNull(raw) {
		return p, nil
	}
	if err := p.add(raw); err != nil {
		return p, err
	}
	return p, nil
}

func (p *preTokenizers) add(raw json.RawMessage) error {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("pre_tokenizer: %w", err)
	}
	if p.byteLevel {
		return unsupported("pre_tokenizer: %q after ByteLevel", t.Type)
	}
	switch t.Type {
	case "Sequence":
		var seq struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return fmt.Errorf("pre_tokenizer Sequence: %w", err)
		}
		for _, r := range seq.PreTokenizers {
			if err := p.add(r); err != nil {
				return err
			}
		}
	case "Split":
		var sp struct {
			Pattern  patternJSON `json:"pattern"`
			Behavior string      `json:"behavior"`
			Invert   bool        `json:"invert"`
		}
		if err := json.Unmarshal(raw, &sp); err != nil {
			return fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		s, err := newSplit(sp.Pattern, sp.Behavior, sp.Invert)
		if err != nil {
			return err
		}
		p.chain = append(p.chain, s)
	case "ByteLevel":
		var bl struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &bl); err != nil {
			return fmt.Errorf("pre_tokenizer ByteLevel: %w", err)
		}
		if bl.AddPrefixSpace {
			p.chain = append(p.chain, prefixSpace{})
		}
		if bl.UseRegex == nil || *bl.UseRegex { // HF's default is true
			s, err := newSplit(patternJSON{Regex: ptr(patGPT2)}, "Isolated", false)
			if err != nil {
				return err
			}
			p.chain = append(p.chain, s)
		}
		p.byteLevel = true
	case "Metaspace":
		var m struct {
			Replacement    string  `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			AddPrefixSpace *bool   `json:"add_prefix_space"` // before tokenizers 0.19
			Split          *bool   `json:"split"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("pre_tokenizer Metaspace: %w", err)
		}
		ms, err := newMetaspace(m.Replacement, m.PrependScheme, m.AddPrefixSpace)
		if err != nil {
			return err
		}
		ms.splitWords = m.Split == nil || *m.Split
		p.chain = append(p.chain, ms)
	case "Digits":
		var d struct {
			Individual bool `json:"individual_digits"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("pre_tokenizer Digits: %w", err)
		}
		pat := `\p{Nd}+`
		if d.Individual {
			pat = `\p{Nd}`
		}
		s, err := newSplit(patternJSON{Regex: &pat}, "Isolated", false)
		if err != nil {
			return err
		}
		p.chain = append(p.chain, s)
	default:
		return unsupported("pre_tokenizer type %q", t.Type)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// prefixSpace is ByteLevel's add_prefix_space: a leading space unless the
// word already starts with one.
type prefixSpace struct{}

func (prefixSpace) split(dst []string, s string, _ bool) []string {
	if s != "" && s[0] != ' ' {
		s = " " + s
	}
	return append(dst, s)
}

type behavior int

const (
	isolated behavior = iota
	removed
	mergedWithPrevious
	mergedWithNext
	contiguous
)

// splitter is HF's Split pre-tokenizer. It uses a hand-written matcher when
// the pattern is one we know, else regexp2 (Oniguruma-like syntax with
// lookaround, which Go's regexp lacks).
type splitter struct {
	hand     matcher
	re       *regexp2.Regexp
	literal  string
	behavior behavior
	invert   bool
}

func newSplit(p patternJSON, b string, invert bool) (*splitter, error) {
	s := &splitter{invert: invert}
	switch b {
	case "Isolated":
		s.behavior = isolated
	case "Removed":
		s.behavior = removed
	case "MergedWithPrevious":
		s.behavior = mergedWithPrevious
	case "MergedWithNext":
		s.behavior = mergedWithNext
	case "Contiguous":
		s.behavior = contiguous
	default:
		return nil, unsupported("Split behavior %q", b)
	}
	switch {
	case p.String != nil:
		if *p.String == "" {
			return nil, fmt.Errorf("split: empty pattern")
		}
		s.literal = *p.String
	case p.Regex != nil:
		if s.behavior == isolated && !invert {
			s.hand = handMatcher(*p.Regex)
		}
		re, err := regexp2.Compile(*p.Regex, regexp2.Unicode)
		if err != nil {
			return nil, fmt.Errorf("split pattern %q: %w", *p.Regex, err)
		}
		s.re = re
	default:
		return nil, fmt.Errorf("split: pattern needs String or Regex")
	}
	return s, nil
}

func (s *splitter) split(dst []string, text string, _ bool) []string {
	if text == "" {
		return dst
	}
	if s.hand != nil {
		return splitHand(dst, text, s.hand)
	}
	return s.apply(dst, text, s.matches(text))
}

// splitHand is the fast path: Isolated behaviour over a matcher that always
// matches (a gap is still emitted correctly if it does not).
func splitHand(dst []string, text string, m matcher) []string {
	gap := 0
	for i := 0; i < len(text); {
		e := m(text, i)
		if e <= i {
			_, n := at(text, i)
			i += n
			continue
		}
		if gap < i {
			dst = append(dst, text[gap:i])
		}
		dst = append(dst, text[i:e])
		i, gap = e, e
	}
	if gap < len(text) {
		dst = append(dst, text[gap:])
	}
	return dst
}

// matches returns the byte ranges matched in text; empty matches are dropped
// as HF does.
func (s *splitter) matches(text string) [][2]int {
	var out [][2]int
	if s.literal != "" {
		for i := 0; i < len(text); {
			k := strings.Index(text[i:], s.literal)
			if k < 0 {
				break
			}
			out = append(out, [2]int{i + k, i + k + len(s.literal)})
			i += k + len(s.literal)
		}
		return out
	}
	runes := []rune(text)
	// rune index -> byte offset
	offs := make([]int, len(runes)+1)
	for i, b := 0, 0; i < len(runes); i++ {
		offs[i] = b
		b += utf8.RuneLen(runes[i])
		offs[i+1] = b
	}
	m, err := s.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		if m.Length > 0 {
			out = append(out, [2]int{offs[m.Index], offs[m.Index+m.Length]})
		}
		m, err = s.re.FindNextMatch(m)
	}
	return out
}

// apply turns matches into words according to the Split behaviour, as HF's
// NormalizedString::split does.
func (s *splitter) apply(dst []string, text string, ms [][2]int) []string {
	type piece struct {
		lo, hi  int
		isMatch bool
	}
	var ps []piece
	prev := 0
	for _, m := range ms {
		if prev < m[0] {
			ps = append(ps, piece{prev, m[0], s.invert})
		}
		ps = append(ps, piece{m[0], m[1], !s.invert})
		prev = m[1]
	}
	if prev < len(text) {
		ps = append(ps, piece{prev, len(text), s.invert})
	}
	var out []piece
	switch s.behavior {
	case isolated:
		out = ps
	case removed:
		for _, p := range ps {
			if !p.isMatch {
				out = append(out, p)
			}
		}
	case mergedWithPrevious:
		prevMatch := false
		for _, p := range ps {
			if p.isMatch && !prevMatch && len(out) > 0 {
				out[len(out)-1].hi = p.hi
			} else {
				out = append(out, p)
			}
			prevMatch = p.isMatch
		}
	case mergedWithNext:
		prevMatch := false
		for i := len(ps) - 1; i >= 0; i-- {
			p := ps[i]
			if p.isMatch && !prevMatch && len(out) > 0 {
				out[len(out)-1].lo = p.lo
			} else {
				out = append(out, p)
			}
			prevMatch = p.isMatch
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	case contiguous:
		for _, p := range ps {
			if p.isMatch && len(out) > 0 && out[len(out)-1].isMatch {
				out[len(out)-1].hi = p.hi
			} else {
				out = append(out, p)
			}
		}
	}
	for _, p := range out {
		if p.lo < p.hi {
			dst = append(dst, text[p.lo:p.hi])
		}
	}
	return dst
}

// metaspace replaces spaces with the replacement rune (U+2581), prepends one
// per prepend_scheme, and optionally splits before each replacement.
type metaspace struct {
	rep        string
	prepend    string // "always", "first" or "never"
	splitWords bool
}

func newMetaspace(rep string, scheme *string, addPrefix *bool) (*metaspace, error) {
	if rep == "" {
		rep = "\u2581"
	}
	m := &metaspace{rep: rep, prepend: "always"}
	switch {
	case scheme != nil:
		m.prepend = *scheme
	case addPrefix != nil && !*addPrefix:
		m.prepend = "never"
	}
	switch m.prepend {
	case "always", "first", "never":
	default:
		return nil, fmt.Errorf("metaspace: unsupported prepend_scheme %q", m.prepend)
	}
	return m, nil
}

func (m *metaspace) split(dst []string, s string, first bool) []string {
	if s == "" {
		return dst
	}
	s = strings.ReplaceAll(s, " ", m.rep)
	if !strings.HasPrefix(s, m.rep) && (m.prepend == "always" || m.prepend == "first" && first) {
		s = m.rep + s
	}
	if !m.splitWords {
		return append(dst, s)
	}
	// MergedWithNext on each replacement rune.
	start := 0
	for i := 0; ; {
		k := strings.Index(s[i:], m.rep)
		if k < 0 {
			break
		}
		if p := i + k; p > start {
			dst = append(dst, s[start:p])
			start = p
		}
		i += k + len(m.rep)
	}
	return append(dst, s[start:])
}
