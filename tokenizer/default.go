package tokenizer

import (
	"embed"
	"fmt"
	"sync"
)

// The Qwen3 tokenizer (Apache-2.0; see testdata/qwen3/NOTICE) ships in the
// binary so that generated prompts work with no download. Its lengths are
// exact for Qwen2/2.5/3 servers and approximate for other models.
//
//go:embed testdata/qwen3/tokenizer.json.gz testdata/qwen3/tokenizer_config.json testdata/qwen3/NOTICE
var defaultFS embed.FS

// DefaultName names the embedded tokenizer where a tokenizer spec is shown.
const DefaultName = "embedded:qwen3"

var loadDefault = sync.OnceValues(loadEmbedded)

// loadEmbedded loads the embedded tokenizer afresh; tests measure it.
func loadEmbedded() (*Tokenizer, error) {
	f, err := defaultFS.Open("testdata/qwen3/tokenizer.json.gz")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := gunzip(f) // Open, not ReadFile, which would copy the 2 MB
	if err != nil {
		return nil, err
	}
	cfg, err := defaultFS.ReadFile("testdata/qwen3/tokenizer_config.json")
	if err != nil {
		return nil, err
	}
	t, err := New(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("load embedded tokenizer: %w", err)
	}
	return t, nil
}

// Default returns the embedded tokenizer, loading it on first use (about 0.2 s
// of CPU; it then keeps about 5 MB of heap). The result is shared and safe for
// concurrent use.
func Default() (*Tokenizer, error) { return loadDefault() }
