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

// BenchmarkEncodeQwen3ManyWords encodes 128-word texts drawn in turn from
// 80,000 distinct words (Qwen3's ids 1,000 to 81,000 decoded, as random-ids
// prompts and random output text are made of): a workload whose words
// outnumber a small cache, so its size decides how often the merge loop
// runs. One op is one 128-word text.
func BenchmarkEncodeQwen3ManyWords(b *testing.B) {
	tok := qwen3(b)
	const words, per = 80_000, 128
	texts := make([]string, words/per)
	for i := range texts {
		ids := make([]int, per)
		for j := range ids {
			ids[j] = 1000 + (i*per+j*7919)%words
		}
		s, err := tok.Decode(ids, true)
		if err != nil {
			b.Fatal(err)
		}
		texts[i] = s
	}
	i := 0
	for b.Loop() {
		if _, err := tok.Encode(texts[i%len(texts)], false); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEncodeQwen3HotWords encodes 256-word English texts drawn from 64
// words, as a bench retokenizes the simulator's output: every word is in
// the cache, so one op is the per-word path alone (split, normalize, look
// up).
func BenchmarkEncodeQwen3HotWords(b *testing.B) {
	tok := qwen3(b)
	words := strings.Fields("the of and to in a is that for it as was with be by on not he this are or his from at which but have an had they you were their one all we can her has there been if more when will would who so no time model token server stream batch cache layer probe queue step fast small data word")
	var sb strings.Builder
	for i := range 256 {
		sb.WriteString(" " + words[(i*37)%len(words)])
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Encode(text, false); err != nil {
			b.Fatal(err)
		}
	}
}
