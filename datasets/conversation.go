package datasets

import (
	"fmt"
	"math/rand/v2"
)

// MaxConversationTurns bounds the conversation dataset's turns: the
// daemon labels each turn's series with its number.
const MaxConversationTurns = 8

// conversationDataset makes synthetic chat conversations (Prompt.MultiTurn):
// ConversationTurns user messages of random corpus text, the first
// RandomInputLen tokens long and each later one ConversationTurnInputLen,
// with no recorded replies, so that every round resends the real answers
// the server gave (Prompt.Round). It is what a chat client or an agent
// sends: the history grows by one answer and one question per turn, and
// a prefix cache serves all of it but the newest pair.
type conversationDataset struct {
	opts        Options
	first, next Dataset
}

// The conversation dataset's defaults (Options' zero values): three
// turns show a cold first turn and two warm ones, and a later question of
// 64 tokens keeps a warm turn's prefill mostly the cached history.
const (
	defaultConversationTurns        = 3
	defaultConversationTurnInputLen = 64
)

func newConversation(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.ConversationTurns == 0 {
		opts.ConversationTurns = defaultConversationTurns
	}
	if opts.ConversationTurnInputLen == 0 {
		opts.ConversationTurnInputLen = defaultConversationTurnInputLen
	}
	if opts.ConversationTurns < 1 || opts.ConversationTurns > MaxConversationTurns {
		return nil, fmt.Errorf("conversation turns must be between 1 and %d, got %d", MaxConversationTurns, opts.ConversationTurns)
	}
	if opts.RandomInputLen < 1 || opts.ConversationTurnInputLen < 1 {
		return nil, fmt.Errorf("conversation input lengths must be at least 1, got %d and %d", opts.RandomInputLen, opts.ConversationTurnInputLen)
	}
	if opts.TokenizePrompt {
		return nil, fmt.Errorf("conversation sends chat messages, not token ids")
	}
	firstOpts := opts
	firstOpts.DatasetPath = ""
	first, err := newRandom(firstOpts, tok)
	if err != nil {
		return nil, err
	}
	nextOpts := firstOpts
	nextOpts.RandomInputLen = opts.ConversationTurnInputLen
	next, err := newRandom(nextOpts, tok)
	if err != nil {
		return nil, err
	}
	return &conversationDataset{opts: opts, first: first, next: next}, nil
}

// Generate makes n conversations: the n first messages, then the later
// ones, each set drawn as the random dataset draws its prompts.
func (d *conversationDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	firsts, err := d.first.Generate(n, r)
	if err != nil {
		return nil, fmt.Errorf("conversation first turns: %w", err)
	}
	turns := d.opts.ConversationTurns
	var later []Prompt
	if turns > 1 {
		if later, err = d.next.Generate(n*(turns-1), r); err != nil {
			return nil, fmt.Errorf("conversation later turns: %w", err)
		}
	}
	out := make([]Prompt, len(firsts))
	for i, f := range firsts {
		p := Prompt{
			MultiTurn: true,
			Messages:  []Message{{Role: "user", Content: f.Text}},
			TurnLens:  []int{f.PromptLen},
			OutputLen: f.OutputLen,
			PromptLen: f.PromptLen,
			Text:      f.Text,
		}
		for k := range turns - 1 {
			q := later[i*(turns-1)+k]
			p.Messages = append(p.Messages, Message{Role: "user", Content: q.Text})
			p.TurnLens = append(p.TurnLens, q.PromptLen)
		}
		p.TextPromptLen = p.PromptLen
		out[i] = p
	}
	return out, nil
}
