package datasets

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

// assistantSuffix is what bench_serving strips before, and re-appends
// after, --prompt-suffix.
const assistantSuffix = "Assistant:"

// conversation is one usable ShareGPT entry: its first two turns.
type conversation struct {
	prompt, completion string
}

type shareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

type shareGPTEntry struct {
	Conversations []shareGPTTurn  `json:"conversations"`
	Conversation  *[]shareGPTTurn `json:"conversation"`
}

// loadShareGPT reads a ShareGPT JSON array and keeps entries with at least
// two turns in "conversations" (or, when that key is absent,
// "conversation"). It streams the array so that the 600 MB file is never
// held twice.
func loadShareGPT(path string) ([]conversation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sharegpt: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("sharegpt %s: not a JSON array of conversations", path)
	}
	var out []conversation
	for i := 0; dec.More(); i++ {
		var e shareGPTEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("sharegpt %s: entry %d (byte %d): %w", path, i, dec.InputOffset(), err)
		}
		turns := e.Conversations
		if turns == nil && e.Conversation != nil {
			turns = *e.Conversation
		}
		if len(turns) >= 2 {
			out = append(out, conversation{turns[0].Value, turns[1].Value})
		}
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("sharegpt %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sharegpt %s: no entry has two or more turns", path)
	}
	return out, nil
}

// shareGPTDataset is bench_serving's "sharegpt".
type shareGPTDataset struct {
	opts  Options
	tok   Tokenizer
	convs []conversation
}

func newShareGPT(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DatasetPath == "" {
		return nil, errors.New("sharegpt: a dataset path is required (this package does not download)")
	}
	if err := checkOutputLenOverride(opts.SharegptOutputLen); err != nil {
		return nil, err
	}
	if opts.ApplyChatTemplate && opts.ChatTemplate == nil {
		return nil, errors.New("sharegpt: apply chat template is set but the tokenizer has no chat template")
	}
	convs, err := loadShareGPT(opts.DatasetPath)
	if err != nil {
		return nil, err
	}
	return &shareGPTDataset{opts: opts, tok: tok, convs: convs}, nil
}

func checkOutputLenOverride(n int) error {
	if n != 0 && n < 4 {
		return fmt.Errorf("sharegpt output len must be at least 4, got %d", n)
	}
	return nil
}

// transformPrompt applies --prompt-suffix and --apply-chat-template the way
// bench_serving does.
func transformPrompt(opts Options, prompt string) (string, error) {
	if opts.PromptSuffix != "" {
		prompt = strings.TrimSuffix(prompt, assistantSuffix) + opts.PromptSuffix + assistantSuffix
	}
	if opts.ApplyChatTemplate && opts.ChatTemplate != nil {
		var err error
		prompt, err = opts.ChatTemplate.ApplyChatTemplate([]Message{{Role: "user", Content: prompt}}, true)
		if err != nil {
			return "", fmt.Errorf("apply chat template: %w", err)
		}
		if opts.BOSToken != "" {
			prompt = strings.ReplaceAll(prompt, opts.BOSToken, "")
		}
	}
	return prompt, nil
}

// Generate shuffles the entries and walks them until n pass the filters.
// It returns fewer than n when the file runs out, as bench_serving does.
func (d *shareGPTDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	out := make([]Prompt, 0, n)
	for _, e := range r.Perm(len(d.convs)) {
		if len(out) == n {
			break
		}
		c := d.convs[e]
		prompt, err := transformPrompt(d.opts, c.prompt)
		if err != nil {
			return nil, fmt.Errorf("sharegpt entry: %w", err)
		}
		ids, err := d.tok.Encode(prompt, true)
		if err != nil {
			return nil, fmt.Errorf("sharegpt entry: encode prompt: %w", err)
		}
		outLen := d.opts.SharegptOutputLen
		if outLen == 0 {
			cids, err := d.tok.Encode(c.completion, true)
			if err != nil {
				return nil, fmt.Errorf("sharegpt entry: encode completion: %w", err)
			}
			outLen = len(cids)
		}
		if len(ids) < 2 || outLen < 2 {
			continue
		}
		if d.opts.SharegptContextLen > 0 && len(ids)+outLen > d.opts.SharegptContextLen {
			continue
		}
		out = append(out, Prompt{Text: prompt, PromptLen: len(ids), TextPromptLen: len(ids), OutputLen: outLen})
	}
	return out, nil
}
