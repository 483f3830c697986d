package datasets

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
)

// sonnetText is vLLM's benchmarks/sonnet.txt: Shakespeare's sonnets 1 to
// 37 (public domain), one poem line a line, the text vLLM's sonnet
// dataset samples from. It is embedded so that the dataset runs with no
// --dataset-path; a path given is read instead.
//
//go:embed sonnet.txt
var sonnetText string

// sonnetBasePrompt is the instruction vLLM puts before the poem lines.
const sonnetBasePrompt = "Pick as many lines as you can from these poem lines:\n"

// sonnetDataset is vLLM's sonnet (vllm/benchmarks/datasets/sonnet.py,
// SonnetDataset.sample): every prompt is the base prompt, the first
// poem lines (a prefix shared by every prompt, --sonnet-prefix-len
// tokens), then poem lines drawn with replacement, as many as make
// --sonnet-input-len tokens on average; a draw whose templated length is
// over the input length is drawn again.
type sonnetDataset struct {
	opts  Options
	tok   Tokenizer
	lines []string // with their newlines, as Python's readlines
	// prefixLines and drawLines are the counts of shared and drawn lines.
	prefixLines, drawLines int
}

func newSonnet(opts Options, tok Tokenizer) (Dataset, error) {
	text := sonnetText
	if opts.DatasetPath != "" {
		b, err := os.ReadFile(opts.DatasetPath)
		if err != nil {
			return nil, fmt.Errorf("sonnet: %w", err)
		}
		text = string(b)
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil, errors.New("sonnet: the poem file is empty")
	}
	if opts.SonnetOutputLen < 1 {
		return nil, fmt.Errorf("sonnet: output len must be at least 1, got %d", opts.SonnetOutputLen)
	}
	d := &sonnetDataset{opts: opts, tok: tok, lines: lines}
	total := 0
	for _, l := range lines {
		ids, err := tok.Encode(l, true)
		if err != nil {
			return nil, fmt.Errorf("sonnet: %w", err)
		}
		total += len(ids)
	}
	avg := float64(total) / float64(len(lines))
	_, base, err := d.render(sonnetBasePrompt)
	if err != nil {
		return nil, err
	}
	if opts.SonnetInputLen <= base {
		return nil, fmt.Errorf("sonnet: input len must be higher than the base prompt length (%d), got %d", base, opts.SonnetInputLen)
	}
	// Python's round is half to even, as math.RoundToEven.
	d.prefixLines = max(int(math.RoundToEven(float64(opts.SonnetPrefixLen-base)/avg)), 0)
	d.prefixLines = min(d.prefixLines, len(lines))
	d.drawLines = int(math.RoundToEven(float64(opts.SonnetInputLen-base)/avg)) - d.prefixLines
	if d.drawLines < 0 {
		return nil, fmt.Errorf("sonnet: prefix len %d is longer than input len %d", opts.SonnetPrefixLen, opts.SonnetInputLen)
	}
	return d, nil
}

// render is the prompt as sent and its token count: through the chat
// template when there is one (vLLM counts the templated prompt), the
// templated text itself sent when ApplyChatTemplate is set (vLLM sends
// it formatted on every backend but openai-chat).
func (d *sonnetDataset) render(prompt string) (string, int, error) {
	formatted := prompt
	if d.opts.ChatTemplate != nil {
		s, err := d.opts.ChatTemplate.ApplyChatTemplate([]Message{{Role: "user", Content: prompt}}, true)
		if err != nil {
			return "", 0, fmt.Errorf("sonnet: apply chat template: %w", err)
		}
		formatted = s
	}
	ids, err := d.tok.Encode(formatted, true)
	if err != nil {
		return "", 0, fmt.Errorf("sonnet: %w", err)
	}
	if d.opts.ApplyChatTemplate {
		return formatted, len(ids), nil
	}
	return prompt, len(ids), nil
}

// sonnetMaxDraws bounds the redraws of one prompt: with an input length
// too short for the drawn lines every draw is too long, and vLLM would
// loop for ever.
const sonnetMaxDraws = 1000

func (d *sonnetDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	prefix := sonnetBasePrompt + strings.Join(d.lines[:d.prefixLines], "")
	out := make([]Prompt, 0, n)
	for i := 0; len(out) < n; i++ {
		if i >= sonnetMaxDraws*max(n, 1) {
			return nil, fmt.Errorf("sonnet: no draw of %d lines fits in %d tokens; raise --sonnet-input-len", d.drawLines, d.opts.SonnetInputLen)
		}
		var b strings.Builder
		b.WriteString(prefix)
		for range d.drawLines {
			b.WriteString(d.lines[r.IntN(len(d.lines))])
		}
		text, plen, err := d.render(b.String())
		if err != nil {
			return nil, err
		}
		if plen > d.opts.SonnetInputLen {
			continue
		}
		out = append(out, Prompt{Text: text, PromptLen: plen, TextPromptLen: plen, OutputLen: d.opts.SonnetOutputLen})
	}
	return out, nil
}
