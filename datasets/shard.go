package datasets

import "fmt"

// Every is the Source of the prompts at indices offset, offset+step,
// offset+2·step, ... of s, in order: one shard of a run split across
// processes by prompt index. Every process makes the whole Source from the
// same seed and keeps its own indices, so that the shards' prompts
// together are exactly, and in the same order, the prompts of the one
// process run. Prompts made on demand stay made on demand: their totals
// and first prompt are counted by one pass here, and each pass of All
// makes every prompt again and skips those of the other shards (a shard
// pays for making all the prompts, never for holding them).
func (s *Source) Every(offset, step int) (*Source, error) {
	if step < 1 || offset < 0 || offset >= step {
		return nil, fmt.Errorf("shard %d of %d: out of range", offset, step)
	}
	if !s.OnDemand() {
		var kept []Prompt
		for i := offset; i < len(s.prompts); i += step {
			kept = append(kept, s.prompts[i])
		}
		return FromPrompts(kept), nil
	}
	pass := func(yield func(Prompt, error) bool) {
		i := 0
		for p, err := range s.pass {
			if err != nil {
				yield(p, err)
				return
			}
			mine := i%step == offset
			i++
			if mine && !yield(p, nil) {
				return
			}
		}
	}
	var n, in, out int
	var first Prompt
	for p, err := range pass {
		if err != nil {
			return nil, err
		}
		if n == 0 {
			first = p
		}
		n++
		a, b := p.Totals()
		in += a
		out += b
	}
	return OnDemand(n, in, out, first, pass), nil
}
