package datasets

import (
	"embed"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// The embedded corpus is prose written for this project (public domain,
// dedicated to CC0 in each file's header). It lets random work with no download.
//
//go:embed corpus/*.txt
var corpusFS embed.FS

// sentenceEnd finds sentence boundaries: terminal punctuation, optional
// closing quotes or brackets, then whitespace.
var sentenceEnd = regexp.MustCompile(`[.!?]["')\]’”]*\s+`)

// embeddedSentences splits the embedded corpus into sentences.
func embeddedSentences() []string {
	var out []string
	files, _ := fs.Glob(corpusFS, "corpus/*.txt")
	for _, f := range files {
		b, err := corpusFS.ReadFile(f)
		if err != nil {
			panic(err) // embedded; cannot fail
		}
		out = append(out, splitSentences(string(b))...)
	}
	return out
}

// splitSentences splits prose into single-line sentences of at least three
// words, so that every piece starts with a word and ends with punctuation.
func splitSentences(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		para = strings.Join(strings.Fields(para), " ")
		if para == "" || strings.HasPrefix(para, "#") {
			continue
		}
		last := 0
		for _, m := range sentenceEnd.FindAllStringIndex(para+" ", -1) {
			end := min(m[1], len(para))
			s := strings.TrimSpace(para[last:end])
			last = end
			if len(strings.Fields(s)) >= 3 && startsWord(s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func startsWord(s string) bool {
	for _, c := range s {
		return unicode.IsLetter(c) || unicode.IsDigit(c) || c == '"' || c == '“'
	}
	return false
}

// textCorpus is a sentence pool with every sentence's token ids cached, so
// prompts are assembled from ids instead of being re-encoded.
type textCorpus struct {
	sents []string
	first [][]int // Encode(sentence): the form that opens a prompt
	lead  [][]int // Encode(" " + sentence): the form that follows another
	// separable is true when encoding the whole corpus (sentences joined by
	// spaces) equals the concatenation of the cached pieces, that is, this
	// tokenizer never merges across a sentence boundary. Then a prompt's
	// token count is the sum of its pieces and needs no re-encode.
	separable bool
	maxLead   int
}

func newTextCorpus(tok Tokenizer, sents []string) (*textCorpus, error) {
	if len(sents) == 0 {
		return nil, fmt.Errorf("corpus has no sentences")
	}
	c := &textCorpus{sents: sents, first: make([][]int, len(sents)), lead: make([][]int, len(sents))}
	var joined []int
	for i, s := range sents {
		var err error
		if c.first[i], err = tok.Encode(s, false); err != nil {
			return nil, fmt.Errorf("encode corpus: %w", err)
		}
		if c.lead[i], err = tok.Encode(" "+s, false); err != nil {
			return nil, fmt.Errorf("encode corpus: %w", err)
		}
		c.maxLead = max(c.maxLead, len(c.lead[i]))
		if i == 0 {
			joined = append(joined, c.first[i]...)
		} else {
			joined = append(joined, c.lead[i]...)
		}
	}
	whole, err := tok.Encode(strings.Join(sents, " "), false)
	if err != nil {
		return nil, fmt.Errorf("encode corpus: %w", err)
	}
	c.separable = slices.Equal(whole, joined)
	return c, nil
}

// build assembles a prompt of target tokens from random sentences. ids is
// the concatenation of cached pieces (len target). text is exact by
// construction when ok is true: whole sentences where the corpus is
// separable, plus a tail cut from one sentence whose ids round-trip through
// decode and encode. When ok is false the caller must measure text.
func (c *textCorpus) build(tok Tokenizer, target int, r *rand.Rand, wantText bool) (text string, ids []int, ok bool, err error) {
	if target <= 0 {
		return "", nil, true, nil
	}
	ids = make([]int, 0, target)
	var sb strings.Builder
	if wantText {
		sb.Grow(target * 5)
	}
	exact := c.separable
	for len(ids) < target {
		i := r.IntN(len(c.sents))
		piece, sep := c.lead[i], " "
		if len(ids) == 0 {
			piece, sep = c.first[i], ""
		}
		if need := target - len(ids); len(piece) > need {
			// The tail: a prefix of one sentence. Find one that round-trips
			// so its count holds without context.
			tail, tailText := piece[:need], ""
			if wantText {
				var good bool
				tailText, good = roundTrips(tok, tail)
				for try := 0; !good && try < 32; try++ {
					j := r.IntN(len(c.sents))
					cand := c.lead[j]
					if len(ids) == 0 {
						cand = c.first[j]
					}
					if len(cand) < need {
						continue
					}
					tail = cand[:need]
					tailText, good = roundTrips(tok, tail)
				}
				if !good {
					exact = false
					if tailText, err = tok.Decode(tail, false); err != nil {
						return "", nil, false, fmt.Errorf("decode: %w", err)
					}
				}
				sb.WriteString(tailText)
			}
			ids = append(ids, tail...)
			break
		}
		ids = append(ids, piece...)
		if wantText {
			sb.WriteString(sep)
			sb.WriteString(c.sents[i])
		}
	}
	return sb.String(), ids, exact, nil
}

// filler returns a function yielding k corpus ids at a time, for topping up
// text in exactText.
func (c *textCorpus) filler(r *rand.Rand) func(k int) []int {
	return func(k int) []int {
		out := make([]int, 0, k)
		for len(out) < k {
			out = append(out, c.lead[r.IntN(len(c.lead))]...)
		}
		return out[:k]
	}
}

// exactCorpusText returns text of exactly target tokens (no special
// tokens), falling back to measuring when construction cannot vouch for it.
func (c *textCorpus) exactCorpusText(tok Tokenizer, target int, r *rand.Rand) (string, error) {
	text, _, ok, err := c.build(tok, target, r, true)
	if err != nil || ok {
		return text, err
	}
	return exactText(tok, text, target, c.filler(r))
}
