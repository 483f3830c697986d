package tokenizer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer is a HF tokenizer.json tokenizer: normalizer, added tokens,
// pre-tokenizer, BPE model, post-processor and decoder. It is immutable after
// New and safe for concurrent use.
type Tokenizer struct {
	normalize normalizer
	pre       preTokenizers
	model     *bpe
	post      template
	decode    decoder
	config    Config

	added      []*AddedToken
	addedByID  map[int]*AddedToken
	addedByStr map[string]*AddedToken
	rawAdded   *addedMatcher // normalized: false
	normAdded  *addedMatcher // normalized: true

	bos, eos int // -1 when unknown

	chatOnce sync.Once
	chat     *ChatTemplate
	chatErr  error
}

var _ Any = (*Tokenizer)(nil)

// New builds a tokenizer from the bytes of tokenizer.json and, optionally
// (nil), tokenizer_config.json.
func New(tokenizerJSON, configJSON []byte) (*Tokenizer, error) {
	f, m, err := parseFile(tokenizerJSON)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{bos: -1, eos: -1}
	if t.normalize, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if t.model, err = newBPE(m, t.pre.byteLevel); err != nil {
		return nil, err
	}
	if t.post, err = parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if t.decode, err = parseDecoder(f.Decoder); err != nil {
		return nil, err
	}
	t.addedByID = make(map[int]*AddedToken, len(f.AddedTokens))
	t.addedByStr = make(map[string]*AddedToken, len(f.AddedTokens))
	var raw, norm []*AddedToken
	for _, a := range f.AddedTokens {
		at := &AddedToken{ID: a.ID, Content: a.Content, SingleWord: a.SingleWord, LStrip: a.LStrip,
			RStrip: a.RStrip, Normalized: a.Normalized, Special: a.Special}
		t.added = append(t.added, at)
		t.addedByID[a.ID] = at
		t.addedByStr[a.Content] = at
		if a.Normalized {
			norm = append(norm, at)
		} else {
			raw = append(raw, at)
		}
	}
	t.rawAdded, t.normAdded = newAddedMatcher(raw), newAddedMatcher(norm)
	if configJSON != nil {
		c, err := ParseConfig(configJSON)
		if err != nil {
			return nil, err
		}
		t.config = *c
		t.applyConfig()
	}
	return t, nil
}

// applyConfig resolves BOS/EOS ids and, for the tokenizer classes whose
// transformers implementation rebuilds the post-processor from
// add_bos_token/add_eos_token (Llama, Gemma), does the same.
func (t *Tokenizer) applyConfig() {
	if id, ok := t.TokenToID(t.config.BOSToken); ok && t.config.BOSToken != "" {
		t.bos = id
	}
	if id, ok := t.TokenToID(t.config.EOSToken); ok && t.config.EOSToken != "" {
		t.eos = id
	}
	switch strings.TrimSuffix(t.config.TokenizerClass, "Fast") {
	case "LlamaTokenizer", "CodeLlamaTokenizer", "GemmaTokenizer":
	default:
		return
	}
	if t.config.AddBOSToken == nil && t.config.AddEOSToken == nil {
		return
	}
	var tpl template
	if t.config.AddBOSToken != nil && *t.config.AddBOSToken && t.bos >= 0 {
		tpl.prefix = []int{t.bos}
	}
	if t.config.AddEOSToken != nil && *t.config.AddEOSToken && t.eos >= 0 {
		tpl.suffix = []int{t.eos}
	}
	t.post = tpl
}

// wordsPool recycles the per-call word slices of Encode.
var wordsPool = sync.Pool{New: func() any { s := make([]string, 0, 64); return &s }}

// Encode returns the ids of text. With addSpecialTokens the post-processor's
// tokens (e.g. BOS) are added. Invalid UTF-8 is replaced by U+FFFD first:
// HF takes only valid strings.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) ([]int, error) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	ids := make([]int, 0, len(text)/3+4)
	ids = t.encode(ids, text)
	if addSpecialTokens {
		ids = t.post.apply(ids)
	}
	return ids, nil
}

// Count returns the number of tokens in text without special tokens.
func (t *Tokenizer) Count(text string) (int, error) {
	ids, err := t.Encode(text, false)
	return len(ids), err
}

// CountContext is Count that gives up, returning ctx's error, once ctx is
// done: it looks at ctx every ctxCheckBytes of words, so a caller with a
// deadline (a probe's timeout) gets its answer in time, whatever the text.
func (t *Tokenizer) CountContext(ctx context.Context, text string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	var ids [countBatch]int
	dst, n, err := t.encodeContext(ctx, ids[:0], text, true)
	return n + len(dst), err
}

// countBatch is how many ids CountContext holds before it counts them and
// lets them go: a count needs no ids, and a text's ids took 8 bytes per
// 3 bytes of text.
const countBatch = 1 << 10

// ctxCheckBytes is how much text CountContext tokenizes between looks at
// its context: about a millisecond of work.
const ctxCheckBytes = 64 << 10

// maxWordBytes bounds the pre-tokenized word the BPE merge loop takes
// whole. The loop holds about 32 bytes per byte of its word (a symbol and
// a merge candidate), and a word is as long as its text allows: a server
// that streams letters without a space made a 48 MiB word, and the merge
// 1.7 GB of heap. Words are split into pieces of at most this size (at a
// rune boundary, before a space marker where there is one), so the merge
// holds at most about 128 KiB. No word of real text is this long; a
// longer one (a Metaspace tokenizer with split off takes its whole text
// as one word) may count a token more or less per piece.
const maxWordBytes = 4 << 10

// wordPieces calls f with w cut into pieces of at most maxWordBytes, until
// f returns false; it reports whether f took every piece.
func wordPieces(w string, f func(string) bool) bool {
	for len(w) > maxWordBytes {
		cut := maxWordBytes
		// Cut before a space or Metaspace's U+2581 if there is one in the
		// second half, so that pieces start where words would.
		if i := strings.LastIndexAny(w[maxWordBytes/2:maxWordBytes], " \u2581"); i > 0 {
			cut = maxWordBytes/2 + i
		} else {
			for cut > 1 && !utf8.RuneStart(w[cut]) {
				cut--
			}
		}
		if !f(w[:cut]) {
			return false
		}
		w = w[cut:]
	}
	return f(w)
}

func (t *Tokenizer) encode(dst []int, text string) []int {
	dst, _, _ = t.encodeContext(context.Background(), dst, text, false)
	return dst
}

// encodeContext is encode that stops, with ctx's error, once ctx is done.
// With count, ids past countBatch are counted in n
// and dropped from dst.
func (t *Tokenizer) encodeContext(ctx context.Context, dst []int, text string, count bool) (_ []int, n int, err error) {
	since := 0 // bytes of words since ctx was last looked at
	word := func(w string) bool {
		if since += len(w); since > ctxCheckBytes {
			since = 0
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		if count && len(dst) > countBatch/2 {
			n += len(dst)
			dst = dst[:0]
		}
		dst = t.model.encodeWord(dst, w)
		return true
	}
	wp := wordsPool.Get().(*[]string)
	words := (*wp)[:0]
	var segs, subs []segment
	segs = t.rawAdded.split(segs, text, 0)
segments:
	for _, seg := range segs {
		if seg.tok != nil {
			dst = append(dst, seg.tok.ID)
			continue
		}
		s := seg.text
		if t.normalize != nil {
			s = t.normalize(s)
		}
		subs = t.normAdded.split(subs[:0], s, seg.start)
		for _, sub := range subs {
			if sub.tok != nil {
				dst = append(dst, sub.tok.ID)
				continue
			}
			words = t.preTokenize(words[:0], sub.text, seg.start == 0 && sub.start == 0)
			for _, w := range words {
				if !wordPieces(w, word) {
					break segments
				}
			}
		}
	}
	clear(words)
	*wp = words[:0]
	wordsPool.Put(wp)
	return dst, n, err
}

func (t *Tokenizer) preTokenize(dst []string, s string, first bool) []string {
	if s == "" {
		return dst
	}
	if len(t.pre.chain) == 1 {
		// Most tokenizers (Qwen, Llama 3) split once: straight into dst,
		// which encode pools, without a second slice per text.
		return t.pre.chain[0].split(dst, s, first)
	}
	dst = append(dst, s)
	var next []string
	for _, p := range t.pre.chain {
		next = next[:0]
		for _, w := range dst {
			next = p.split(next, w, first)
		}
		dst, next = next, dst
	}
	return dst
}

// Decode returns the text of ids. With skipSpecialTokens, special added
// tokens are dropped. An id outside the vocabulary is an error.
func (t *Tokenizer) Decode(ids []int, skipSpecialTokens bool) (string, error) {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if a, ok := t.addedByID[id]; ok {
			if !(skipSpecialTokens && a.Special) {
				toks = append(toks, a.Content)
			}
			continue
		}
		tok, ok := t.model.vocab.token(id)
		if !ok {
			return "", fmt.Errorf("decode: token id %d out of vocabulary", id)
		}
		toks = append(toks, tok)
	}
	var s string
	if t.decode != nil {
		s = strings.Join(t.decode(toks), "")
	} else {
		s = strings.Join(toks, " ")
	}
	if t.config.CleanUpTokenizationSpaces {
		s = cleanUpTokenization(s)
	}
	return s, nil
}

// cleanUpTokenization is transformers' clean_up_tokenization.
func cleanUpTokenization(s string) string {
	return cleanUpReplacer.Replace(s)
}

var cleanUpReplacer = strings.NewReplacer(" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'",
	" n't", "n't", " 'm", "'m", " 's", "'s", " 've", "'ve", " 're", "'re")

// NumSpecialTokensToAdd is the number of ids Encode adds with
// addSpecialTokens (transformers' num_special_tokens_to_add(pair=False)).
func (t *Tokenizer) NumSpecialTokensToAdd() int { return t.post.count() }

// VocabSize is the size of the model's vocabulary without added tokens,
// as transformers' tokenizer.vocab_size (bench_serving samples random ids
// below it).
func (t *Tokenizer) VocabSize() int { return t.model.vocab.n }

// Len is the number of distinct tokens including added ones, as
// transformers' len(tokenizer).
func (t *Tokenizer) Len() int {
	n := t.model.vocab.n
	for _, a := range t.added {
		if _, inVocab := t.model.vocab.id(a.Content); !inVocab {
			n++
		}
	}
	return n
}

// TokenToID returns the id of a token (vocabulary symbol or added token).
func (t *Tokenizer) TokenToID(tok string) (int, bool) {
	if a, ok := t.addedByStr[tok]; ok {
		return a.ID, true
	}
	return t.model.vocab.id(tok)
}

// IDToToken returns the token of an id, as stored in the vocabulary (for
// byte-level tokenizers, in the GPT-2 alphabet: "Ġthe").
func (t *Tokenizer) IDToToken(id int) (string, bool) {
	if a, ok := t.addedByID[id]; ok {
		return a.Content, true
	}
	return t.model.vocab.token(id)
}

// Vocab returns a copy of the model vocabulary plus added tokens.
func (t *Tokenizer) Vocab() map[string]int {
	v := make(map[string]int, t.model.vocab.n+len(t.added))
	t.model.vocab.all(func(tok string, id int) { v[tok] = id })
	for _, a := range t.added {
		v[a.Content] = a.ID
	}
	return v
}

// AddedTokens returns the added tokens in file order.
func (t *Tokenizer) AddedTokens() []AddedToken {
	out := make([]AddedToken, len(t.added))
	for i, a := range t.added {
		out[i] = *a
	}
	return out
}

// SpecialIDs returns the ids of special added tokens.
func (t *Tokenizer) SpecialIDs() []int {
	var out []int
	for _, a := range t.added {
		if a.Special {
			out = append(out, a.ID)
		}
	}
	return out
}

// BOS returns the BOS token id from tokenizer_config.json.
func (t *Tokenizer) BOS() (int, bool) { return t.bos, t.bos >= 0 }

// EOS returns the EOS token id from tokenizer_config.json.
func (t *Tokenizer) EOS() (int, bool) { return t.eos, t.eos >= 0 }

// Config returns the parsed tokenizer_config.json (zero if there was none).
func (t *Tokenizer) Config() Config { return t.config }
