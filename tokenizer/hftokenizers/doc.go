// Package hftokenizers wraps the Rust Hugging Face tokenizers library
// (github.com/daulet/tokenizers, cgo) behind the same interface as package
// tokenizer, for tokenizer types the pure-Go loader does not cover
// (Unigram, WordPiece, Precompiled normalizers, ...).
//
// It is compiled only with the hftokenizers build tag; without it this
// package is empty and servingprobe stays cgo-free.
//
// Building with it needs libtokenizers.a, the Rust static library that
// daulet/tokenizers v1.24.0 links against (built from its repository with
// `make build`, or taken from its GitHub releases), on the linker path:
//
//	CGO_ENABLED=1 CGO_LDFLAGS="-L/path/to/dir/with/libtokenizers.a" \
//	    go build -tags hftokenizers ./...
//
// CI checks that the package compiles without linking it (this needs cgo
// enabled and a C compiler, but not the library):
//
//	CGO_ENABLED=1 go vet -tags hftokenizers ./tokenizer/...
package hftokenizers
