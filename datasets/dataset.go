package datasets

import (
	"math/rand/v2"
	"time"

	"github.com/servingprobe/servingprobe/internal/chatmsg"
)

// Message is one chat turn. It is declared in internal/chatmsg, so that
// the tokenizer renders a chat history without importing datasets.
type Message = chatmsg.Message

// Prompt is one request's input, as bench_serving's dataset row.
type Prompt struct {
	Text     string    // the prompt text (completions, /generate)
	IDs      []int     // token ids, sent as input_ids with --tokenize-prompt
	Messages []Message // a chat history; when set, chat backends send it as is
	Images   []string  // data URIs
	// LazyImages, when set, are images made when the prompt's request is
	// built (WithImages) rather than when the prompt set is: an image is
	// megabytes of base64, and a prompt set held them all for the whole
	// run. Images is then nil.
	LazyImages *LazyImages `json:"-"`
	// Audio are base64 WAV clips, sent as input_audio parts before the
	// text on chat backends; LazyAudio makes them when the request is
	// built, as LazyImages does images. A non-nil empty Audio sends the
	// text as a content part all the same (sglang's audio dataset with no
	// clip).
	Audio     []string   `json:"-"`
	LazyAudio *LazyAudio `json:"-"`
	// Inputs is a batch of texts that one embeddings request sends as its
	// list "input" (the embedding dataset's list rows); nil otherwise. Only
	// the embeddings protocol reads it. Left out of JSON when nil, so that
	// every other prompt encodes as it did before the field.
	Inputs []string `json:",omitempty"`

	PromptLen       int // tokens, as bench_serving counts them (see package doc)
	TextPromptLen   int
	VisionPromptLen int
	OutputLen       int // requested output tokens

	Timestamp  time.Duration // trace offset from the start, for trace replay
	LoRA       string
	ExtraBody  map[string]any
	RoutingKey string
	// Phase names the dynamic dataset's phase the request belongs to, and
	// PhaseMaxConcurrency caps that phase's requests in flight (0: no
	// cap); both empty for every other dataset.
	Phase               string `json:",omitempty"`
	PhaseMaxConcurrency int    `json:",omitempty"`
	// RequestID is sent as the x-request-id header (vLLM's
	// --request-id-prefix numbers the requests); empty: not sent.
	RequestID string

	// MultiTurn marks a conversation: each user message of Messages is a
	// round, sent as its own request once the previous round's reply is
	// in, with the real replies as the assistant turns (see Round).
	// TurnLens holds each round's new input tokens: the first user turn
	// with what precedes it, then each later user turn.
	MultiTurn bool
	TurnLens  []int
	// RoundStarts, if set, are the indexes in Messages at which each round
	// begins, for traces whose rounds are message groups (an agentic
	// trace's turn may be tool observations with no user message). Nil
	// means each user message begins a round.
	RoundStarts []int
}

// Rounds is how many requests the prompt makes: its user turns for a
// conversation, else one.
func (p Prompt) Rounds() int {
	if !p.MultiTurn {
		return 1
	}
	if p.RoundStarts != nil {
		return max(len(p.RoundStarts), 1)
	}
	n := 0
	for _, m := range p.Messages {
		if m.Role == "user" {
			n++
		}
	}
	return max(n, 1)
}

// Totals are the input and output tokens the prompt asks for over all its
// requests: a conversation's user turns (TurnLens: the replies it resends
// are the server's and unknown ahead) and OutputLen in every round.
func (p Prompt) Totals() (in, out int) {
	if !p.MultiTurn {
		return p.PromptLen, p.OutputLen
	}
	for _, n := range p.TurnLens {
		in += n
	}
	return in, p.OutputLen * p.Rounds()
}

// Round returns the request of round k (0-based) of a conversation, given
// the replies the server generated in rounds 0..k-1 and their total
// token count: the messages up to the k-th user turn, each earlier user
// turn followed by its real reply (assistant turns the dataset recorded
// are replaced, since the server did not say them). Its PromptLen is the
// dataset's turns so far plus those replies (the chat template's own
// tokens are not counted; the server's count is the one reported).
func (p Prompt) Round(k int, replies []string, replyTokens int) Prompt {
	q := p
	q.MultiTurn, q.TurnLens, q.RoundStarts = false, nil, nil
	q.Messages = make([]Message, 0, 2*k+2)
	if p.RoundStarts != nil {
		end := len(p.Messages)
		if k+1 < len(p.RoundStarts) {
			end = p.RoundStarts[k+1]
		}
		r := 0
		for i, m := range p.Messages[:end] {
			if r+1 < len(p.RoundStarts) && i == p.RoundStarts[r+1] {
				q.Messages = append(q.Messages, Message{Role: "assistant", Content: replies[r]})
				r++
			}
			if m.Role == "assistant" {
				continue
			}
			q.Messages = append(q.Messages, m)
			q.Text = m.Content
		}
	} else {
		q.roundByUsers(p.Messages, k, replies)
	}
	q.PromptLen = replyTokens
	for _, n := range p.TurnLens[:min(k+1, len(p.TurnLens))] {
		q.PromptLen += n
	}
	q.TextPromptLen = q.PromptLen - q.VisionPromptLen
	return q
}

// roundByUsers fills q with the messages of round k when each user
// message begins a round.
func (q *Prompt) roundByUsers(msgs []Message, k int, replies []string) {
	u := 0
	for _, m := range msgs {
		if m.Role == "assistant" {
			continue
		}
		if m.Role == "user" {
			if u > k {
				break
			}
			if u > 0 {
				q.Messages = append(q.Messages, Message{Role: "assistant", Content: replies[u-1]})
			}
			q.Text = m.Content
			u++
		}
		q.Messages = append(q.Messages, m)
	}
}

// Dataset produces prompts. Generate is deterministic for a given r.
type Dataset interface {
	Generate(n int, r *rand.Rand) ([]Prompt, error)
}

// Tokenizer is what datasets need from a tokenizer.
type Tokenizer interface {
	Encode(text string, addSpecialTokens bool) ([]int, error)
	Decode(ids []int, skipSpecialTokens bool) (string, error)
	// NumSpecialTokensToAdd is how many tokens Encode adds with
	// addSpecialTokens (for example, a BOS).
	NumSpecialTokensToAdd() int
	VocabSize() int
}
