package datasets

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// fixedDataset repeats one configured prompt, for continuous probes where
// every request should cost the same.
type fixedDataset struct {
	p Prompt
}

func newFixed(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.FixedPrompt == "" {
		return nil, errors.New("fixed: the prompt is empty")
	}
	if opts.FixedOutputLen < 1 {
		return nil, fmt.Errorf("fixed: output len must be at least 1, got %d", opts.FixedOutputLen)
	}
	ids, err := tok.Encode(opts.FixedPrompt, true)
	if err != nil {
		return nil, fmt.Errorf("fixed: encode: %w", err)
	}
	return &fixedDataset{p: Prompt{
		Text: opts.FixedPrompt, PromptLen: len(ids), TextPromptLen: len(ids), OutputLen: opts.FixedOutputLen,
	}}, nil
}

// Generate returns n copies of the prompt. r is not used.
func (d *fixedDataset) Generate(n int, _ *rand.Rand) ([]Prompt, error) {
	out := make([]Prompt, max(n, 0))
	for i := range out {
		out[i] = d.p
	}
	return out, nil
}
