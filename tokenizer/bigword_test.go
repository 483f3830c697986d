package tokenizer

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// letters is n random lower-case letters: one pre-tokenizer word.
func letters(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// TestLongWordsArePieces: a word longer than maxWordBytes is merged in
// pieces, so its ids are the ids of its pieces, and the text still
// decodes to itself; words up to the bound are merged whole.
func TestLongWordsArePieces(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	tok := qwen3(t)
	for _, tc := range []struct {
		name string
		text string
	}{
		{"a word at the bound", letters(maxWordBytes)},
		{"a word past the bound", letters(3*maxWordBytes + 17)},
		{"a word with spaces cut before one", strings.Repeat(letters(700)+" ", 20)},
		{"multi-byte runes", strings.Repeat("é", maxWordBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, _ := tok.Encode(tc.text, false)
			got, err := tok.Decode(ids, false)
			if err != nil || got != tc.text {
				t.Fatalf("Decode(Encode(%d bytes)) = %d bytes, %v; want the text back", len(tc.text), len(got), err)
			}
			var want []int
			wordPieces(tc.text, func(p string) bool {
				want = append(want, tok.model.merge(nil, p)...)
				return true
			})
			if len(tc.text) <= maxWordBytes {
				want = tok.model.merge(nil, tc.text)
			}
			if !strings.Contains(tc.name, "spaces") && len(ids) != len(want) {
				t.Errorf("Encode = %d ids, want %d (the pieces' ids)", len(ids), len(want))
			}
		})
	}
}

// TestWordPiecesBound: every piece is at most maxWordBytes and starts on a
// rune; the pieces make the word.
func TestWordPiecesBound(t *testing.T) {
	for _, w := range []string{letters(10 * maxWordBytes), strings.Repeat("日本", maxWordBytes), strings.Repeat("▁ab", maxWordBytes)} {
		var b strings.Builder
		wordPieces(w, func(p string) bool {
			if len(p) > maxWordBytes || len(p) == 0 {
				t.Errorf("piece of %d bytes, want 1 to %d", len(p), maxWordBytes)
			}
			if !strings.HasPrefix(w[b.Len():], p) || (len(p) > 0 && p[0]&0xC0 == 0x80) {
				t.Errorf("piece at %d does not start on a rune", b.Len())
			}
			b.WriteString(p)
			return true
		})
		if b.String() != w {
			t.Errorf("pieces make %d bytes, want the %d-byte word", b.Len(), len(w))
		}
	}
}

// TestCountContext: CountContext is Count while its context lives, and
// stops with the context's error once it is done.
func TestCountContext(t *testing.T) {
	tok := qwen3(t)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 4000)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		wantErr bool
	}{
		{"live", context.Background(), false},
		{"canceled", done, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tok.CountContext(tc.ctx, text)
			if tc.wantErr {
				if err == nil {
					t.Errorf("CountContext(canceled) = %d, nil; want the context's error", n)
				}
				return
			}
			want, _ := tok.Count(text)
			if err != nil || n != want {
				t.Errorf("CountContext = %d, %v; want %d (Count)", n, err, want)
			}
		})
	}
}

// BenchmarkCountBigWord is the cost of counting one 1 MiB word, the most
// server text prober counts for a request (its maxCountBytes): linear in
// the word, since it is merged in pieces.
func BenchmarkCountBigWord(b *testing.B) {
	tok, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	w := letters(1 << 20)
	b.SetBytes(int64(len(w)))
	for b.Loop() {
		if _, err := tok.CountContext(context.Background(), w); err != nil {
			b.Fatal(err)
		}
	}
}
