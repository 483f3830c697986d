package datasets

import (
	"math/rand/v2"
	"time"
)

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Prompt is one request's input, as bench_serving's dataset row.
type Prompt struct {
	Text     string    // the prompt text (completions, /generate)
	IDs      []int     // token ids, sent as input_ids with --tokenize-prompt
	Messages []Message // a chat history; when set, chat backends send it as is
	Images   []string  // data URIs

	PromptLen       int // tokens, as bench_serving counts them (see package doc)
	TextPromptLen   int
	VisionPromptLen int
	OutputLen       int // requested output tokens

	Timestamp  time.Duration // trace offset from the start, for trace replay
	LoRA       string
	ExtraBody  map[string]any
	RoutingKey string
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
