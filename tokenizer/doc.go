// Package tokenizer loads Hugging Face tokenizer.json files in pure Go (no
// cgo) and encodes and decodes exactly as the HF tokenizers library does.
//
// Supported: BPE models, byte-level (GPT-2, Llama 3, Qwen2/2.5/3, DeepSeek)
// and Metaspace with byte fallback (Llama 2, Mistral, Gemma); added and
// special tokens with lstrip/rstrip/single_word/normalized; the normalizers
// NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip and Sequence; the
// pre-tokenizers Split, ByteLevel, Metaspace, Digits and Sequence; the
// post-processors TemplateProcessing, ByteLevel, Roberta/Bert and Sequence
// (single sequences); and the decoders ByteLevel, Metaspace, Replace,
// ByteFallback, Fuse, Strip and Sequence. Anything else fails to load with an
// error naming the type, e.g. `unsupported model type "Unigram"`.
//
// Exactness is checked against golden ids from HF's tokenizers.js
// (testdata/gen/gen.mjs) on several hundred strings, for Qwen3 (in
// testdata), Meta's Llama 3 (fetched by make deps, since its licence is
// Meta's; testdata/llama3 holds only the ids) and two small Metaspace
// tokenizers trained for the tests. Split patterns run on
// github.com/dlclark/regexp2, because Go's regexp has no lookahead; the
// patterns of GPT-2, Llama 3 and Qwen2 have hand-written matchers that a
// fuzz test keeps equal to regexp2.
//
// A Tokenizer is immutable after loading and safe for concurrent use; BPE
// results are cached per word in a bounded, sharded cache. The vocabulary and
// merges live in flat, pointer-free tables (about 5 MB for Qwen3's 151k
// tokens) rather than Go maps, which kept four times as much for the GC to
// scan; TestEmbeddedRetainedHeap holds the figure.
//
// Other sources of tokens: Resolve turns a --tokenizer value (path or hub
// id) into a Tokenizer via package tokenizer/hub; Server uses a running
// server's /tokenize and /detokenize endpoints. For tokenizer types not
// covered here, package tokenizer/hftokenizers wraps the Rust library
// through cgo; it is built only with -tags hftokenizers.
package tokenizer
