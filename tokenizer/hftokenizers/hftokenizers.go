//go:build hftokenizers

package hftokenizers

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/daulet/tokenizers"
)

// Tokenizer is a Rust HF tokenizer. The Rust library's encode and decode
// take the tokenizer immutably, so it is safe for concurrent use; Close
// must not race with them.
type Tokenizer struct {
	tk *tokenizers.Tokenizer

	once       sync.Once
	numSpecial int
}

// Load reads a tokenizer.json file, a .json.gz, or a directory holding
// tokenizer.json(.gz).
func Load(path string) (*Tokenizer, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		p := filepath.Join(path, "tokenizer.json")
		if _, err := os.Stat(p); err != nil {
			p += ".gz"
		}
		path = p
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
		}
	}
	tk, err := tokenizers.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return &Tokenizer{tk: tk}, nil
}

func toU32(ids []int) ([]uint32, error) {
	out := make([]uint32, len(ids))
	for i, id := range ids {
		if id < 0 || id > int(^uint32(0)) {
			return nil, fmt.Errorf("decode: token id %d out of range", id)
		}
		out[i] = uint32(id)
	}
	return out, nil
}

// Encode implements tokenizer.Any.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) ([]int, error) {
	ids, _ := t.tk.Encode(text, addSpecialTokens)
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out, nil
}

// Decode implements tokenizer.Any.
func (t *Tokenizer) Decode(ids []int, skipSpecialTokens bool) (string, error) {
	u, err := toU32(ids)
	if err != nil {
		return "", err
	}
	return t.tk.Decode(u, skipSpecialTokens), nil
}

// NumSpecialTokensToAdd implements tokenizer.Any by encoding the empty
// string both ways, once.
func (t *Tokenizer) NumSpecialTokensToAdd() int {
	t.once.Do(func() {
		with, _ := t.tk.Encode("", true)
		without, _ := t.tk.Encode("", false)
		t.numSpecial = len(with) - len(without)
	})
	return t.numSpecial
}

// VocabSize implements tokenizer.Any. The Rust binding reports the
// size including added tokens, unlike tokenizer.Tokenizer.VocabSize.
func (t *Tokenizer) VocabSize() int { return int(t.tk.VocabSize()) }

// Close frees the Rust tokenizer.
func (t *Tokenizer) Close() error { return t.tk.Close() }
