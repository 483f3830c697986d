package datasets

import (
	"fmt"
	"math/rand/v2"
)

// newRandomWithPrefix is random, with vLLM's --random-prefix-len: a
// prefix of that many tokens, drawn once, put before every prompt, whose
// length adds to each prompt's (vllm/benchmarks/datasets: RandomDataset
// samples prefix_len + input_len tokens per request). Without a prefix it
// is random itself, its streaming included.
func newRandomWithPrefix(opts Options, tok Tokenizer) (Dataset, error) {
	d, err := newRandom(opts, tok)
	if err != nil || opts.RandomPrefixLen == 0 {
		return d, err
	}
	if opts.RandomPrefixLen < 0 {
		return nil, fmt.Errorf("random prefix len must be at least 0, got %d", opts.RandomPrefixLen)
	}
	rd := d.(*randomDataset)
	if rd.corpus == nil {
		c, err := embeddedCorpus(tok)
		if err != nil {
			return nil, err
		}
		rd.corpus = c
	}
	return &randomPrefix{inner: rd}, nil
}

// randomPrefix puts one shared prefix before every random prompt.
type randomPrefix struct{ inner *randomDataset }

func (d *randomPrefix) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	tok, l := d.inner.tok, d.inner.opts.RandomPrefixLen
	text, ids, _, err := d.inner.corpus.build(tok, l, r, true)
	if err == nil && !d.inner.opts.TokenizePrompt {
		text, err = d.inner.corpus.exactCorpusText(tok, l, r)
	}
	if err != nil {
		return nil, fmt.Errorf("random prefix: %w", err)
	}
	out, err := d.inner.Generate(n, r)
	if err != nil {
		return nil, err
	}
	for i := range out {
		p := &out[i]
		if p.IDs != nil {
			p.IDs = append(append(make([]int, 0, len(ids)+len(p.IDs)), ids...), p.IDs...)
		} else {
			p.Text = text + " " + p.Text
		}
		p.PromptLen += l
		p.TextPromptLen += l
	}
	return out, nil
}
