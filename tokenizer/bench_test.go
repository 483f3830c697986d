package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mixedText is the golden corpus joined: English, CJK, emoji, code and
// whitespace runs, about 30 KB.
func mixedText(b *testing.B) string {
	var sb strings.Builder
	for _, c := range readGolden(b, "qwen3") {
		sb.WriteString(c.Text)
		sb.WriteByte('\n')
	}
	return sb.String()
}

func BenchmarkEncodeQwen3(b *testing.B) {
	tok := qwen3(b)
	text := mixedText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Encode(text, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeQwen3Cold measures encoding with an empty word cache, the
// worst case (every word runs the merge loop).
func BenchmarkEncodeQwen3Cold(b *testing.B) {
	tok := qwen3(b)
	text := mixedText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.model.cache = newWordCache()
		if _, err := tok.Encode(text, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeQwen3Parallel(b *testing.B) {
	tok := qwen3(b)
	text := mixedText(b)
	b.SetBytes(int64(len(text)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := tok.Encode(text, false); err != nil {
				b.Error(err)
			}
		}
	})
}

func BenchmarkEncodeQwen3Regexp2(b *testing.B) {
	tok, err := Load(filepath.Join("testdata", "qwen3"))
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range tok.pre.chain {
		if s, ok := p.(*splitter); ok {
			s.hand = nil // force the regexp2 path
		}
	}
	text := mixedText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Encode(text, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadQwen3(b *testing.B) {
	data, err := readMaybeGzip(filepath.Join("testdata", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join("testdata", "qwen3", "tokenizer_config.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := New(data, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
