package datasets

import (
	"fmt"
	"math/rand/v2"
)

// randomDataset is bench_serving's "random": token-space samples of a text
// corpus, cut or repeated to drawn lengths (§4.2).
type randomDataset struct {
	opts     Options
	tok      Tokenizer
	nspecial int

	corpus  *textCorpus // the embedded corpus, when no file is given
	entries []string    // first human turns of a ShareGPT file
	cache   [][]int     // entries' token ids, filled lazily
}

func newRandom(opts Options, tok Tokenizer) (Dataset, error) {
	if err := checkRatio("random range ratio", opts.RandomRangeRatio); err != nil {
		return nil, err
	}
	d := &randomDataset{opts: opts, tok: tok, nspecial: tok.NumSpecialTokensToAdd()}
	if opts.DatasetPath != "" {
		convs, err := loadShareGPT(opts.DatasetPath)
		if err != nil {
			return nil, err
		}
		d.entries = make([]string, len(convs))
		for i, c := range convs {
			d.entries[i] = c.prompt
		}
		d.cache = make([][]int, len(d.entries))
		return d, nil
	}
	c, err := embeddedCorpus(tok)
	if err != nil {
		return nil, err
	}
	d.corpus = c
	return d, nil
}

// embeddedCorpus tokenizes the embedded sentences. It is cheap (tens of KB),
// so it is done per dataset rather than cached behind a global.
func embeddedCorpus(tok Tokenizer) (*textCorpus, error) {
	return newTextCorpus(tok, embeddedSentences())
}

// Generate draws n input lengths, then n output lengths, then builds the
// prompts. With a ShareGPT file it returns fewer than n prompts when the
// file has fewer usable entries, as bench_serving does.
func (d *randomDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	inLens := randomLens(d.opts.RandomInputLen, d.opts.RandomRangeRatio, n, r)
	outLens := randomLens(d.opts.RandomOutputLen, d.opts.RandomRangeRatio, n, r)
	if d.entries != nil {
		return d.fromEntries(inLens, outLens, r)
	}
	out := make([]Prompt, n)
	for i := range out {
		p, err := d.fromCorpus(inLens[i], r)
		if err != nil {
			return nil, fmt.Errorf("random prompt %d: %w", i, err)
		}
		p.OutputLen = outLens[i]
		out[i] = p
	}
	return out, nil
}

// textTarget is the text token count for a drawn length: bench_serving
// subtracts the special tokens the server will add.
func (d *randomDataset) textTarget(l int) int {
	return max(0, l-d.nspecial)
}

// finish fills the length fields. In compat mode prompt_len is the reduced
// target, as bench_serving records it; in exact mode it is what the server
// counts: the measured text tokens plus the special tokens.
func (d *randomDataset) finish(p *Prompt, target int) {
	p.PromptLen = target
	if !d.opts.Compat {
		p.PromptLen = target + d.nspecial
	}
	p.TextPromptLen = p.PromptLen
}

func (d *randomDataset) fromCorpus(l int, r *rand.Rand) (Prompt, error) {
	if d.opts.TokenizePrompt {
		_, ids, _, err := d.corpus.build(d.tok, l, r, false)
		return Prompt{IDs: ids, PromptLen: l, TextPromptLen: l}, err
	}
	target := d.textTarget(l)
	var (
		text string
		err  error
	)
	if d.opts.Compat {
		var ids []int
		if _, ids, _, err = d.corpus.build(d.tok, target, r, false); err == nil {
			text, err = d.tok.Decode(ids, false)
		}
	} else {
		text, err = d.corpus.exactCorpusText(d.tok, target, r)
	}
	if err != nil {
		return Prompt{}, err
	}
	p := Prompt{Text: text}
	d.finish(&p, target)
	return p, nil
}

func (d *randomDataset) entryIDs(i int) ([]int, error) {
	if d.cache[i] == nil {
		// bench_serving encodes with special tokens, so a BOS is repeated at
		// every repeat boundary; exact mode leaves them out.
		ids, err := d.tok.Encode(d.entries[i], d.opts.Compat)
		if err != nil {
			return nil, err
		}
		d.cache[i] = ids
	}
	return d.cache[i], nil
}

func (d *randomDataset) fromEntries(inLens, outLens []int, r *rand.Rand) ([]Prompt, error) {
	out := make([]Prompt, 0, len(inLens))
	for _, e := range r.Perm(len(d.entries)) {
		i := len(out)
		if i == len(inLens) {
			break
		}
		src, err := d.entryIDs(e)
		if err != nil {
			return nil, fmt.Errorf("random prompt %d: encode entry: %w", i, err)
		}
		if len(src) == 0 {
			continue
		}
		l := inLens[i]
		if d.opts.TokenizePrompt {
			ids := repeatTo(src, l)
			out = append(out, Prompt{IDs: ids, PromptLen: l, TextPromptLen: l, OutputLen: outLens[i]})
			continue
		}
		target := d.textTarget(l)
		text, err := d.tok.Decode(repeatTo(src, target), false)
		if err == nil && !d.opts.Compat {
			c := &cycler{ids: src, pos: target}
			text, err = exactText(d.tok, text, target, c.next)
		}
		if err != nil {
			return nil, fmt.Errorf("random prompt %d: %w", i, err)
		}
		p := Prompt{Text: text, OutputLen: outLens[i]}
		d.finish(&p, target)
		out = append(out, p)
	}
	return out, nil
}

// repeatTo truncates ids to n, or repeats them ⌈n/len⌉ times and truncates.
func repeatTo(ids []int, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = ids[i%len(ids)]
	}
	return out
}

// randomIDsDataset is bench_serving's "random-ids" (§4.3): id runs
// (offset+i+j) mod vocab, decoded to text unless TokenizePrompt.
type randomIDsDataset struct {
	randomDataset
}

func newRandomIDs(opts Options, tok Tokenizer) (Dataset, error) {
	if err := checkRatio("random range ratio", opts.RandomRangeRatio); err != nil {
		return nil, err
	}
	if tok.VocabSize() <= 0 {
		return nil, fmt.Errorf("random-ids: tokenizer vocab size is %d", tok.VocabSize())
	}
	return &randomIDsDataset{randomDataset{opts: opts, tok: tok, nspecial: tok.NumSpecialTokensToAdd()}}, nil
}

// Generate draws input lengths, output lengths, then one offset per prompt.
func (d *randomIDsDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	inLens := randomLens(d.opts.RandomInputLen, d.opts.RandomRangeRatio, n, r)
	outLens := randomLens(d.opts.RandomOutputLen, d.opts.RandomRangeRatio, n, r)
	vocab := d.tok.VocabSize()
	offsets := make([]int, n)
	for i := range offsets {
		offsets[i] = r.IntN(vocab)
	}
	out := make([]Prompt, n)
	for i := range out {
		run := func(from, k int) []int {
			ids := make([]int, k)
			for j := range ids {
				ids[j] = (offsets[i] + i + from + j) % vocab
			}
			return ids
		}
		if d.opts.TokenizePrompt {
			l := inLens[i]
			out[i] = Prompt{IDs: run(0, l), PromptLen: l, TextPromptLen: l, OutputLen: outLens[i]}
			continue
		}
		target := d.textTarget(inLens[i])
		text, err := d.tok.Decode(run(0, target), false)
		if err == nil && !d.opts.Compat {
			pos := target
			text, err = exactText(d.tok, text, target, func(k int) []int {
				ids := run(pos, k)
				pos += k
				return ids
			})
		}
		if err != nil {
			return nil, fmt.Errorf("random-ids prompt %d: %w", i, err)
		}
		out[i] = Prompt{Text: text, OutputLen: outLens[i]}
		d.finish(&out[i], target)
	}
	return out, nil
}
