package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
)

// agenticDefaultOutputLen is sglang's per-turn output length for
// agentic-trace when --sharegpt-output-len is unset (the average assistant
// reply of OpenHands-style traces).
const agenticDefaultOutputLen = 220

// agenticTrace is "agentic-trace": a multi-turn agent trace (OpenHands,
// SWE-smith), one JSON document {"conversations": [[turn, ...], ...]}
// whose turns are {"messages": [the turn's new non-assistant messages],
// "prompt_tokens": n}. Each conversation is one prompt whose rounds are
// its turns, replayed on chat backends with the server's real replies in
// between (Prompt.Round with RoundStarts).
type agenticTrace struct {
	rows []Prompt
}

type agenticTurn struct {
	Messages     json.RawMessage `json:"messages"`
	PromptTokens json.Number     `json:"prompt_tokens"`
}

func newAgenticTrace(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("agentic-trace: a dataset path is required")
	}
	b, err := os.ReadFile(opts.DatasetPath)
	if err != nil {
		return nil, fmt.Errorf("agentic-trace: %w", err)
	}
	var doc struct {
		Conversations [][]agenticTurn `json:"conversations"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("agentic-trace %s: %w", opts.DatasetPath, err)
	}
	convs := doc.Conversations
	if len(convs) == 0 {
		return nil, fmt.Errorf("agentic-trace %s: no \"conversations\"", opts.DatasetPath)
	}
	// --dataset-offset rotates the list (Python's modulo: never negative).
	off := ((opts.DatasetOffset % len(convs)) + len(convs)) % len(convs)
	convs = append(convs[off:len(convs):len(convs)], convs[:off]...)
	outLen := agenticDefaultOutputLen
	if opts.SharegptOutputLen > 0 {
		outLen = opts.SharegptOutputLen
	}
	d := &agenticTrace{}
	for ci, conv := range convs {
		p := Prompt{OutputLen: outLen, MultiTurn: true}
		for ti, turn := range conv {
			if opts.AgenticMaxTurns > 0 && len(p.RoundStarts) == opts.AgenticMaxTurns {
				break
			}
			if isEmptyJSONList(turn.Messages) {
				continue
			}
			var q Prompt
			if err := parseMessages(turn.Messages, &q); err != nil {
				return nil, fmt.Errorf("agentic-trace %s: conversation %d, turn %d: %w", opts.DatasetPath, (ci+off)%len(convs), ti, err)
			}
			p.RoundStarts = append(p.RoundStarts, len(p.Messages))
			p.Messages = append(p.Messages, q.Messages...)
			p.Images = append(p.Images, q.Images...)
		}
		if len(p.RoundStarts) == 0 {
			continue
		}
		if err := countRounds(opts, tok, &p); err != nil {
			return nil, fmt.Errorf("agentic-trace %s: %w", opts.DatasetPath, err)
		}
		// sglang reports the first turn's recorded prompt_tokens; it is
		// informational, since each round is counted as it is sent.
		if n, err := conv[0].PromptTokens.Int64(); err == nil {
			p.PromptLen = int(n)
		}
		p.TextPromptLen = p.PromptLen
		d.rows = append(d.rows, p)
	}
	if len(d.rows) == 0 {
		return nil, fmt.Errorf("agentic-trace %s: no usable conversations", opts.DatasetPath)
	}
	return d, nil
}

func isEmptyJSONList(b json.RawMessage) bool {
	var v []json.RawMessage
	return len(b) == 0 || string(b) == "null" || (json.Unmarshal(b, &v) == nil && len(v) == 0)
}

// countRounds fills a grouped conversation's TurnLens: the first round as
// the chat template renders it, each later round's message contents as
// new tokens; and its Text, the last message of the first round.
func countRounds(opts Options, tok Tokenizer, p *Prompt) error {
	p.TurnLens = make([]int, len(p.RoundStarts))
	end := len(p.Messages)
	if len(p.RoundStarts) > 1 {
		end = p.RoundStarts[1]
	}
	n, _, err := countMessages(opts, tok, p.Messages[:end])
	if err != nil {
		return err
	}
	p.TurnLens[0] = n
	p.Text = p.Messages[end-1].Content
	for k := 1; k < len(p.RoundStarts); k++ {
		stop := len(p.Messages)
		if k+1 < len(p.RoundStarts) {
			stop = p.RoundStarts[k+1]
		}
		for _, m := range p.Messages[p.RoundStarts[k]:stop] {
			ids, err := tok.Encode(m.Content, false)
			if err != nil {
				return fmt.Errorf("encode: %w", err)
			}
			p.TurnLens[k] += len(ids)
		}
	}
	return nil
}

// Generate returns the first n conversations after the offset (all of
// them if n <= 0 or n exceeds them). r is not used: sglang keeps the
// trace's order.
func (d *agenticTrace) Generate(n int, _ *rand.Rand) ([]Prompt, error) {
	if n <= 0 || n > len(d.rows) {
		n = len(d.rows)
	}
	return append([]Prompt(nil), d.rows[:n]...), nil
}
