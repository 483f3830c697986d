package tokenizer

import (
	"context"
	"errors"
	"fmt"

	"github.com/servingprobe/servingprobe/tokenizer/hub"
)

// ErrUnsupported is matched (errors.Is) by every error that says the pure-Go
// loader does not cover a tokenizer.json feature (a Unigram or WordPiece
// model, a normalizer or pre-tokenizer type, BPE dropout, ...).
var ErrUnsupported = errors.New("unsupported by the pure-Go tokenizer")

type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string        { return e.msg }
func (e *unsupportedError) Is(target error) bool { return target == ErrUnsupported }

// unsupported is fmt.Errorf("unsupported "+format) that matches ErrUnsupported.
func unsupported(format string, a ...any) error {
	return &unsupportedError{msg: fmt.Sprintf("unsupported "+format, a...)}
}

// hfLoad loads a tokenizer.json with the Rust Hugging Face library. It is
// set only in builds with the hftokenizers tag (backend_hf.go); nil means
// the pure-Go loader is the only one.
var hfLoad func(path string) (Any, error)

// Any is a tokenizer of either loader: the pure-Go Tokenizer, or the Rust
// library's (hftokenizers) in a binary built with its tag. Its methods are
// those of datasets.Tokenizer, which every tokenizer here satisfies (the
// datasets package's tests assert it); it is declared here so that the
// tokenizer does not import datasets and the parquet reader it links.
type Any interface {
	Encode(text string, addSpecialTokens bool) ([]int, error)
	Decode(ids []int, skipSpecialTokens bool) (string, error)
	// NumSpecialTokensToAdd is how many tokens Encode adds with
	// addSpecialTokens (for example, a BOS).
	NumSpecialTokensToAdd() int
	VocabSize() int
}

// ResolveAny is Resolve for callers that need only an Any (the bench, the
// daemon's modules, servingprobe tokenize): the pure-Go
// loader first, and for what it does not support, the Rust library when
// the binary is built with the hftokenizers tag. Without the tag the error
// says how to get it.
func ResolveAny(ctx context.Context, spec string, h *hub.Client) (Any, error) {
	t, err := Resolve(ctx, spec, h)
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, ErrUnsupported) {
		return nil, err
	}
	if hfLoad == nil {
		return nil, fmt.Errorf("%w (a binary built with -tags hftokenizers loads it with the Rust tokenizers library)", err)
	}
	path, perr := localPath(ctx, spec, h)
	if perr != nil {
		return nil, perr
	}
	return hfLoad(path)
}
