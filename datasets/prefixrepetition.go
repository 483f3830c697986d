package datasets

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// prefixRepetition is vLLM's prefix_repetition
// (vllm/benchmarks/datasets: PrefixRepetitionRandomDataset): a number of
// prefixes of --prefix-repetition-prefix-len tokens, each shared by
// num_prompts / --prefix-repetition-num-prefixes prompts that end in a
// suffix of their own (--prefix-repetition-suffix-len tokens), shuffled.
// vLLM decodes random token ids; here the text is the embedded corpus at
// exact token lengths, as the random dataset's, so that a prefix is
// text a prefix cache sees whole.
type prefixRepetition struct {
	opts   Options
	tok    Tokenizer
	corpus *textCorpus
}

func newPrefixRepetition(opts Options, tok Tokenizer) (Dataset, error) {
	var errs []error
	if opts.PrefixRepetitionNumPrefixes < 1 {
		errs = append(errs, fmt.Errorf("prefix_repetition: num prefixes must be at least 1, got %d", opts.PrefixRepetitionNumPrefixes))
	}
	if opts.PrefixRepetitionPrefixLen < 0 || opts.PrefixRepetitionSuffixLen < 0 {
		errs = append(errs, errors.New("prefix_repetition: prefix and suffix lens must be at least 0"))
	}
	if opts.PrefixRepetitionOutputLen < 1 {
		errs = append(errs, fmt.Errorf("prefix_repetition: output len must be at least 1, got %d", opts.PrefixRepetitionOutputLen))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c, err := embeddedCorpus(tok)
	if err != nil {
		return nil, err
	}
	return &prefixRepetition{opts: opts, tok: tok, corpus: c}, nil
}

func (d *prefixRepetition) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	o := d.opts
	per := n / o.PrefixRepetitionNumPrefixes
	if per == 0 {
		return nil, fmt.Errorf("prefix_repetition: %d prompts are fewer than the %d prefixes (each prefix needs one prompt at least)", n, o.PrefixRepetitionNumPrefixes)
	}
	out := make([]Prompt, 0, n)
	for range o.PrefixRepetitionNumPrefixes {
		prefix, err := d.corpus.exactCorpusText(d.tok, o.PrefixRepetitionPrefixLen, r)
		if err != nil {
			return nil, fmt.Errorf("prefix_repetition: %w", err)
		}
		for range per {
			suffix, err := d.corpus.exactCorpusText(d.tok, o.PrefixRepetitionSuffixLen, r)
			if err != nil {
				return nil, fmt.Errorf("prefix_repetition: %w", err)
			}
			text := prefix + " " + suffix
			ids, err := d.tok.Encode(text, true)
			if err != nil {
				return nil, fmt.Errorf("prefix_repetition: %w", err)
			}
			out = append(out, Prompt{Text: text, PromptLen: len(ids), TextPromptLen: len(ids), OutputLen: o.PrefixRepetitionOutputLen})
		}
	}
	// vLLM shuffles unless --disable-shuffle, which it offers for its
	// other datasets too; the prompts of a prefix then arrive apart.
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	// num_prompts / num_prefixes drops the remainder, as vLLM does.
	return out, nil
}
