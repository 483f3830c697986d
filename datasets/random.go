package datasets

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// randomDataset is bench_serving's "random": token-space samples of a text
// corpus, cut or repeated to drawn lengths.
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

// Stream makes the prompts while they are sent (see Streamer). A ShareGPT
// file's prompts are generated first: empty entries are skipped, so the
// count and totals are known only once every entry is encoded.
func (d *randomDataset) Stream(n int, newRand func() *rand.Rand) (*Source, bool, error) {
	if d.entries != nil {
		return nil, false, nil
	}
	return lengthStream(n, newRand, d.opts, d.promptLen, false, func(r *rand.Rand) func(i, in, out int) (Prompt, error) {
		return func(i, in, out int) (Prompt, error) {
			p, err := d.fromCorpus(in, r)
			if err != nil {
				return Prompt{}, fmt.Errorf("random prompt %d: %w", i, err)
			}
			p.OutputLen = out
			return p, nil
		}
	})
}

// lengthStream is a Source whose n prompts have their lengths drawn first
// (bench_serving's order), so their totals are known before any is made:
// each pass draws the lengths again from a new generator, then lets
// prepare draw more (offsets, say) and make prompt i. independent says
// prompt i depends on nothing but its arguments (no generator), so that
// the prompts are made on every core (see inOrder).
//
// The prompts that are cheap to make are made here, before the run: as
// many as aheadTime and aheadBytes allow (all of a run of a few thousand
// random-ids prompts), so that the run's start does not wait for them and
// the client's core does not make them while it sends; the rest are made
// while the run sends, at most lookahead ahead of it (see Source.All).
func lengthStream(n int, newRand func() *rand.Rand, o Options, promptLen func(int) int, independent bool,
	prepare func(r *rand.Rand) func(i, in, out int) (Prompt, error)) (*Source, bool, error) {
	draw := func() (*rand.Rand, []int, []int) {
		r := newRand()
		return r, randomLens(o.RandomInputLen, o.RandomRangeRatio, n, r), randomLens(o.RandomOutputLen, o.RandomRangeRatio, n, r)
	}
	r, inLens, outLens := draw()
	in, out := 0, 0
	for i := range n {
		in += promptLen(inLens[i])
		out += outLens[i]
	}
	workers := 1
	if independent {
		workers = runtime.GOMAXPROCS(0)
	}
	mk := prepare(r)
	head, err := makeAhead(n, workers, func(i int) (Prompt, error) { return mk(i, inLens[i], outLens[i]) })
	if err != nil {
		return nil, false, err
	}
	if len(head) == n {
		return FromPrompts(head), true, nil
	}
	var liveTaken atomic.Bool
	return OnDemand(n, in, out, head[0], func(yield func(Prompt, error) bool) {
		for _, p := range head {
			if !yield(p, nil) {
				return
			}
		}
		m, inL, outL := mk, inLens, outLens
		if !independent && !liveTaken.CompareAndSwap(false, true) {
			// The generator mk draws from is past the head only for
			// the first pass: a later one draws everything again and
			// makes the head's prompts to move its generator on.
			var r *rand.Rand
			r, inL, outL = draw()
			m = prepare(r)
			for i := range head {
				if _, err := m(i, inL[i], outL[i]); err != nil {
					yield(Prompt{}, err)
					return
				}
			}
		}
		k := len(head)
		inOrder(n-k, workers, func(j int) (Prompt, error) { return m(k+j, inL[k+j], outL[k+j]) }, yield)
	}), true, nil
}

// aheadTime and aheadBytes bound the prompts a stream makes before the
// run (see lengthStream): a few tens of milliseconds before the first
// request, and memory that stays small beside the run's own.
var (
	aheadTime  = 25 * time.Millisecond
	aheadBytes = 8 << 20
)

// makeAhead makes prompts 0, 1, ... until all n are made or aheadTime or
// aheadBytes is spent, at least one when n > 0; an error stops it and is
// returned.
func makeAhead(n, workers int, mk func(i int) (Prompt, error)) ([]Prompt, error) {
	var (
		head  []Prompt
		err   error
		bytes int
		start = time.Now()
	)
	inOrder(n, workers, mk, func(p Prompt, e error) bool {
		if e != nil {
			err = e
			return false
		}
		head = append(head, p)
		bytes += int(unsafe.Sizeof(p)) + len(p.Text) + 8*len(p.IDs)
		return bytes < aheadBytes && time.Since(start) < aheadTime
	})
	return head, err
}

// inOrder yields mk(0), ..., mk(n-1) in order, making them on the
// given number of goroutines, a batch at a time, and stops at the first
// error (yielded) or when yield returns false.
func inOrder(n, workers int, mk func(i int) (Prompt, error), yield func(Prompt, error) bool) {
	if workers <= 1 {
		for i := range n {
			p, err := mk(i)
			if !yield(p, err) || err != nil {
				return
			}
		}
		return
	}
	batch := make([]Prompt, 0, 16*workers)
	errs := make([]error, cap(batch))
	for lo := 0; lo < n; lo += cap(batch) {
		k := min(cap(batch), n-lo)
		batch = batch[:k]
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for j := w; j < k; j += workers {
					batch[j], errs[j] = mk(lo + j)
				}
			})
		}
		wg.Wait()
		for j := range k {
			if !yield(batch[j], errs[j]) || errs[j] != nil {
				return
			}
		}
	}
}

// promptLen is the PromptLen a drawn length l gives. In compat mode it is
// the reduced target, as bench_serving records it; in exact mode what the
// server counts: the measured text tokens plus the special tokens.
func (d *randomDataset) promptLen(l int) int {
	if d.opts.TokenizePrompt {
		return l
	}
	t := d.textTarget(l)
	if !d.opts.Compat {
		t += d.nspecial
	}
	return t
}

// textTarget is the text token count for a drawn length: bench_serving
// subtracts the special tokens the server will add.
func (d *randomDataset) textTarget(l int) int {
	return max(0, l-d.nspecial)
}

// finish fills the length fields of a text prompt of drawn length l (see
// promptLen, which the totals of prompts made on demand also use).
func (d *randomDataset) finish(p *Prompt, l int) {
	p.PromptLen = d.promptLen(l)
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
	d.finish(&p, l)
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
		d.finish(&p, l)
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

// randomIDsDataset is bench_serving's "random-ids": id runs
// (offset+i+j) mod vocab, decoded to text unless TokenizePrompt.
type randomIDsDataset struct {
	randomDataset
	// pieces builds exact text without encoding it (see wordPieces); nil
	// when the tokenizer's pieces do not verify, or when no text is exact
	// (Compat, TokenizePrompt), and then prompts are measured.
	pieces *wordPieces
}

func newRandomIDs(opts Options, tok Tokenizer) (Dataset, error) {
	if err := checkRatio("random range ratio", opts.RandomRangeRatio); err != nil {
		return nil, err
	}
	if tok.VocabSize() <= 0 {
		return nil, fmt.Errorf("random-ids: tokenizer vocab size is %d", tok.VocabSize())
	}
	d := &randomIDsDataset{randomDataset: randomDataset{opts: opts, tok: tok, nspecial: tok.NumSpecialTokensToAdd()}}
	if !opts.Compat && !opts.TokenizePrompt {
		d.pieces = piecesFor(tok)
	}
	return d, nil
}

// Generate draws input lengths, output lengths, then one offset per prompt.
func (d *randomIDsDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	inLens := randomLens(d.opts.RandomInputLen, d.opts.RandomRangeRatio, n, r)
	outLens := randomLens(d.opts.RandomOutputLen, d.opts.RandomRangeRatio, n, r)
	offsets := d.offsets(n, r)
	out := make([]Prompt, 0, n)
	var err error
	inOrder(n, runtime.GOMAXPROCS(0), func(i int) (Prompt, error) { return d.prompt(i, offsets[i], inLens[i], outLens[i]) },
		func(p Prompt, e error) bool {
			out, err = append(out, p), e
			return true
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stream makes the prompts while they are sent (see Streamer). The
// offsets are drawn up front, after the lengths, as Generate draws them.
func (d *randomIDsDataset) Stream(n int, newRand func() *rand.Rand) (*Source, bool, error) {
	return lengthStream(n, newRand, d.opts, d.promptLen, true, func(r *rand.Rand) func(i, in, out int) (Prompt, error) {
		offsets := d.offsets(n, r)
		return func(i, in, out int) (Prompt, error) { return d.prompt(i, offsets[i], in, out) }
	})
}

func (d *randomIDsDataset) offsets(n int, r *rand.Rand) []int {
	vocab := d.tok.VocabSize()
	offsets := make([]int, n)
	for i := range offsets {
		offsets[i] = r.IntN(vocab)
	}
	return offsets
}

// prompt is prompt i: the id run from its offset, of its drawn length.
func (d *randomIDsDataset) prompt(i, offset, inLen, outLen int) (Prompt, error) {
	vocab := d.tok.VocabSize()
	run := func(from, k int) []int {
		ids := make([]int, k)
		for j := range ids {
			ids[j] = (offset + i + from + j) % vocab
		}
		return ids
	}
	if d.opts.TokenizePrompt {
		return Prompt{IDs: run(0, inLen), PromptLen: inLen, TextPromptLen: inLen, OutputLen: outLen}, nil
	}
	target := d.textTarget(inLen)
	if d.pieces != nil {
		p := Prompt{Text: d.pieces.text(offset, i, target), OutputLen: outLen}
		d.finish(&p, inLen)
		return p, nil
	}
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
		return Prompt{}, fmt.Errorf("random-ids prompt %d: %w", i, err)
	}
	p := Prompt{Text: text, OutputLen: outLen}
	d.finish(&p, inLen)
	return p, nil
}
