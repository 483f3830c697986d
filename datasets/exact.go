package datasets

import (
	"errors"
	"fmt"
	"slices"
)

// maxExactIterations bounds the decode/re-encode loop. In practice one or
// two rounds settle; the bound only stops a pathological oscillation.
const maxExactIterations = 24

// errNotExact reports that no text with the target token count was found.
var errNotExact = errors.New("could not reach the exact token count")

// exactText returns text that encodes (without special tokens) to exactly
// target tokens. It starts from text, re-encodes it, and repairs only the
// boundary: too many tokens are cut at target, too few are topped up with
// ids from more. Each round is re-measured, so the result is exact by
// measurement, not by assumption.
func exactText(tok Tokenizer, text string, target int, more func(k int) []int) (string, error) {
	if target <= 0 {
		return "", nil
	}
	ids, err := tok.Encode(text, false)
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	for range maxExactIterations {
		switch n := len(ids); {
		case n == target:
			return text, nil
		case n > target:
			ids = ids[:target]
		default:
			ids = append(ids, more(target-n)...)
		}
		if text, err = tok.Decode(ids, false); err != nil {
			return "", fmt.Errorf("decode: %w", err)
		}
		if ids, err = tok.Encode(text, false); err != nil {
			return "", fmt.Errorf("encode: %w", err)
		}
	}
	if len(ids) == target {
		return text, nil
	}
	return "", fmt.Errorf("%w (target %d, last %d)", errNotExact, target, len(ids))
}

// roundTrips reports whether ids decode to text that encodes back to the
// same ids, which makes the text's token count known without context.
func roundTrips(tok Tokenizer, ids []int) (string, bool) {
	text, err := tok.Decode(ids, false)
	if err != nil {
		return "", false
	}
	back, err := tok.Encode(text, false)
	if err != nil {
		return "", false
	}
	return text, slices.Equal(back, ids)
}

// cycler yields ids from a list, wrapping around, from a position.
type cycler struct {
	ids []int
	pos int
}

func (c *cycler) next(k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = c.ids[c.pos%len(c.ids)]
		c.pos++
	}
	return out
}
