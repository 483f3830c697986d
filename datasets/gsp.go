package datasets

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// gspDataset is bench_serving's "generated-shared-prefix": G groups
// share a system prompt; each of P prompts per group adds its own question.
type gspDataset struct {
	opts   Options
	tok    Tokenizer
	corpus *textCorpus // exact mode only
}

func newGSP(opts Options, tok Tokenizer) (Dataset, error) {
	var errs []error
	for _, c := range []struct {
		name string
		v    int
	}{
		{"gsp num groups", opts.GSPNumGroups}, {"gsp prompts per group", opts.GSPPromptsPerGroup},
		{"gsp num turns", opts.GSPNumTurns},
	} {
		if c.v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", c.name, c.v))
		}
	}
	if err := checkRatio("gsp range ratio", opts.GSPRangeRatio); err != nil {
		errs = append(errs, err)
	}
	switch opts.GSPGroupDistribution {
	case "", "uniform":
		if opts.GSPZipfAlpha != 0 {
			errs = append(errs, errors.New("gsp zipf alpha is only meaningful with the zipf group distribution"))
		}
	case "zipf":
		if !(opts.GSPZipfAlpha > 0) || math.IsInf(opts.GSPZipfAlpha, 0) {
			errs = append(errs, fmt.Errorf("gsp zipf alpha must be a finite number > 0, got %v", opts.GSPZipfAlpha))
		}
	default:
		errs = append(errs, fmt.Errorf("gsp group distribution must be uniform or zipf, got %q", opts.GSPGroupDistribution))
	}
	if opts.TokenizePrompt {
		errs = append(errs, errors.New("generated-shared-prefix does not support tokenize prompt"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d := &gspDataset{opts: opts, tok: tok}
	if !opts.Compat {
		c, err := embeddedCorpus(tok)
		if err != nil {
			return nil, err
		}
		d.corpus = c
	} else if tok.VocabSize() <= 0 {
		return nil, fmt.Errorf("generated-shared-prefix: tokenizer vocab size is %d", tok.VocabSize())
	}
	return d, nil
}

// text returns a prompt part of n tokens. Compat mode decodes n uniform
// vocabulary ids, as bench_serving's gen_prompt does (its length after
// re-encoding is not controlled); exact mode takes corpus text that
// encodes to exactly n tokens.
func (d *gspDataset) text(n int, r *rand.Rand) (string, error) {
	if !d.opts.Compat {
		return d.corpus.exactCorpusText(d.tok, n, r)
	}
	ids := make([]int, n)
	v := d.tok.VocabSize()
	for i := range ids {
		ids[i] = r.IntN(v)
	}
	return d.tok.Decode(ids, false)
}

// Generate ignores n: the dataset always has G·P rows, as in sglang.
func (d *gspDataset) Generate(_ int, r *rand.Rand) ([]Prompt, error) {
	o := d.opts
	G, P, T := o.GSPNumGroups, o.GSPPromptsPerGroup, o.GSPNumTurns
	sysLens := randomLens(o.GSPSystemPromptLen, o.GSPRangeRatio, G, r)
	qLens := randomLens(o.GSPQuestionLen, o.GSPRangeRatio, G*P*T, r)
	outLens := randomLens(o.GSPOutputLen, o.GSPRangeRatio, G*P, r)

	systems := make([]string, G)
	for g := range systems {
		var err error
		if systems[g], err = d.text(sysLens[g], r); err != nil {
			return nil, fmt.Errorf("gsp system prompt %d: %w", g, err)
		}
	}
	questions := make([]string, G*P*T) // index (g·P + p)·T + t
	for i := range questions {
		var err error
		if questions[i], err = d.text(qLens[i], r); err != nil {
			return nil, fmt.Errorf("gsp question %d: %w", i, err)
		}
	}

	// Each slot takes its question and output length from the uniform
	// enumeration; zipf only changes which group's system prompt it gets.
	groupOf := func(slot int) int { return slot / P }
	if o.GSPGroupDistribution == "zipf" {
		cum := cumulativeWeights(G, func(i int) float64 { return math.Pow(float64(i+1), -o.GSPZipfAlpha) })
		groups := make([]int, G*P)
		for i := range groups {
			groups[i] = pickCumulative(cum, r)
		}
		groupOf = func(slot int) int { return groups[slot] }
	}

	prefix := o.GSPRoutingKeyPrefix
	if prefix == "" {
		prefix = "gsp"
	}
	out := make([]Prompt, G*P)
	for slot := range out {
		g := groupOf(slot)
		turns := questions[slot*T : (slot+1)*T]
		first := systems[g] + "\n\n" + turns[0]
		p := Prompt{Text: first, OutputLen: outLens[slot]}
		if T > 1 {
			p.Messages = make([]Message, T)
			p.Messages[0] = Message{Role: "user", Content: first}
			for t := 1; t < T; t++ {
				p.Messages[t] = Message{Role: "user", Content: turns[t]}
			}
		}
		if o.GSPFastPrepare {
			p.PromptLen = 1
		} else {
			ids, err := d.tok.Encode(first, true)
			if err != nil {
				return nil, fmt.Errorf("gsp prompt %d: encode: %w", slot, err)
			}
			p.PromptLen = len(ids)
		}
		p.TextPromptLen = p.PromptLen
		if T > 1 {
			// A conversation: the runner sends turn t once turn t-1's
			// reply is in, with that reply in the history.
			p.MultiTurn = true
			p.TurnLens = make([]int, T)
			p.TurnLens[0] = p.PromptLen
			for t := 1; t < T; t++ {
				p.TurnLens[t] = qLens[slot*T+t]
			}
		}
		if o.GSPSendRoutingKey {
			p.RoutingKey = prefix + "_" + strconv.Itoa(g)
		}
		out[slot] = p
	}
	if !o.GSPOrdered {
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out, nil
}
