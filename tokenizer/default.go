package tokenizer

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
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

var loadDefault = sync.OnceValues(func() (*Tokenizer, error) {
	gz, err := defaultFS.ReadFile("testdata/qwen3/tokenizer.json.gz")
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(zr)
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
})

// Default returns the embedded tokenizer, loading it on first use (about a
// quarter of a second of CPU). The result is shared and safe for concurrent use.
func Default() (*Tokenizer, error) { return loadDefault() }
