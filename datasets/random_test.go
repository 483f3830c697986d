package datasets_test

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

const sharegptFile = "testdata/sharegpt.json"

func randomOpts(path string, in, out int, ratio float64) datasets.Options {
	o := datasets.DefaultOptions()
	o.DatasetPath = path
	o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = in, out, ratio
	return o
}

// TestRandomExactLengths re-encodes every produced prompt: in exact mode
// the server-side count (text plus added special tokens) is the target.
func TestRandomExactLengths(t *testing.T) {
	for tname, tok := range tokenizers(t) {
		for _, name := range []string{"random", "random-ids"} {
			for _, src := range []string{"", sharegptFile} {
				if name == "random-ids" && src != "" {
					continue
				}
				for _, L := range []int{1, 2, 7, 64, 333, 1024} {
					t.Run(tname+"/"+name+"/"+filepath.Base(src)+"/"+itoa(L), func(t *testing.T) {
						d := mustNew(t, name, randomOpts(src, L, 17, 1.0), tok)
						for i, p := range generate(t, d, 40, uint64(L)) {
							if got := count(t, tok, p.Text, true); got != L {
								t.Fatalf("prompt %d: Encode(text, true) has %d tokens, want %d (text %q)", i, got, L, trunc(p.Text))
							}
							if p.PromptLen != L || p.TextPromptLen != L || p.OutputLen != 17 {
								t.Fatalf("prompt %d: PromptLen=%d TextPromptLen=%d OutputLen=%d, want %d %d 17", i, p.PromptLen, p.TextPromptLen, p.OutputLen, L, L)
							}
						}
					})
				}
			}
		}
	}
}

// TestRandomCompat: bench_serving records the reduced target and does not
// re-measure the decoded text.
func TestRandomCompat(t *testing.T) {
	tok := bosTok{qwen3(t)}
	for _, name := range []string{"random", "random-ids"} {
		o := randomOpts("", 100, 10, 1.0)
		o.Compat = true
		for i, p := range generate(t, mustNew(t, name, o, tok), 20, 1) {
			if p.PromptLen != 99 {
				t.Errorf("%s prompt %d: PromptLen = %d, want 99 (100 minus one BOS)", name, i, p.PromptLen)
			}
			if p.Text == "" {
				t.Errorf("%s prompt %d: empty text", name, i)
			}
		}
	}
}

func TestRandomTokenizePrompt(t *testing.T) {
	tok := bosTok{qwen3(t)}
	for _, name := range []string{"random", "random-ids"} {
		for _, src := range []string{"", sharegptFile} {
			if name == "random-ids" && src != "" {
				continue
			}
			o := randomOpts(src, 50, 10, 1.0)
			o.TokenizePrompt = true
			for i, p := range generate(t, mustNew(t, name, o, tok), 20, 1) {
				if len(p.IDs) != 50 || p.PromptLen != 50 || p.Text != "" {
					t.Errorf("%s %s prompt %d: len(IDs)=%d PromptLen=%d Text=%q, want 50 50 \"\"", name, src, i, len(p.IDs), p.PromptLen, trunc(p.Text))
				}
			}
		}
	}
	// random-ids runs are (offset + i + j) mod vocab.
	o := randomOpts("", 5, 1, 1.0)
	o.TokenizePrompt = true
	v := qwen3(t).VocabSize()
	for i, p := range generate(t, mustNew(t, "random-ids", o, qwen3(t)), 10, 3) {
		for j := 1; j < len(p.IDs); j++ {
			if p.IDs[j] != (p.IDs[j-1]+1)%v {
				t.Fatalf("prompt %d: ids %v are not a consecutive run mod %d", i, p.IDs, v)
			}
		}
	}
}

// TestRandomBounds: with ratio 0 lengths are uniform on [1, L].
func TestRandomBounds(t *testing.T) {
	tok := qwen3(t)
	for _, name := range []string{"random", "random-ids"} {
		t.Run(name, func(t *testing.T) {
			const L, O, n = 40, 30, 3000
			o := randomOpts("", L, O, 0.0)
			o.TokenizePrompt = true // lengths only; the text path is covered above
			ps := generate(t, mustNew(t, name, o, tok), n, 9)
			inSeen, outSeen := map[int]bool{}, map[int]bool{}
			for _, p := range ps {
				if p.PromptLen < 1 || p.PromptLen > L || p.OutputLen < 1 || p.OutputLen > O {
					t.Fatalf("lengths (%d, %d) outside [1,%d]×[1,%d]", p.PromptLen, p.OutputLen, L, O)
				}
				inSeen[p.PromptLen], outSeen[p.OutputLen] = true, true
			}
			// 3000 draws over 40 values: missing one has probability ~40·e^-75.
			if len(inSeen) != L || len(outSeen) != O {
				t.Errorf("saw %d input and %d output lengths, want all %d and %d", len(inSeen), len(outSeen), L, O)
			}
		})
	}
	// A ratio in between: [max(1, ⌊L·r⌋), L].
	o := randomOpts("", 100, 100, 0.5)
	o.TokenizePrompt = true
	for _, p := range generate(t, mustNew(t, "random", o, tok), 500, 2) {
		if p.PromptLen < 50 || p.PromptLen > 100 {
			t.Fatalf("PromptLen %d outside [50, 100]", p.PromptLen)
		}
	}
}

func TestRandomShareGPTSource(t *testing.T) {
	tok := qwen3(t)
	// Compat mode keeps bench_serving's construction: a ShareGPT prompt cut
	// or repeated, so short targets are prefixes of some first turn.
	o := randomOpts(sharegptFile, 3, 5, 1.0)
	o.Compat, o.TokenizePrompt = true, true
	ps := generate(t, mustNew(t, "random", o, tok), 100, 4)
	if len(ps) != 6 {
		t.Fatalf("got %d prompts, want 6 (the usable entries in %s)", len(ps), sharegptFile)
	}
}

func TestDeterminism(t *testing.T) {
	tok := qwen3(t)
	gsp := datasets.DefaultOptions()
	gsp.GSPNumGroups, gsp.GSPPromptsPerGroup, gsp.GSPSystemPromptLen, gsp.GSPQuestionLen = 3, 4, 30, 10
	img := randomOpts("", 20, 5, 0)
	img.ImageResolution = "random:20x20-40x60"
	cases := []struct {
		name string
		o    datasets.Options
	}{
		{"random", randomOpts("", 64, 8, 0)},
		{"random", randomOpts(sharegptFile, 64, 8, 0)},
		{"random-ids", randomOpts("", 64, 8, 0)},
		{"sharegpt", randomOpts(sharegptFile, 0, 0, 0)},
		{"generated-shared-prefix", gsp},
		{"image", img},
	}
	for _, tc := range cases {
		for _, compat := range []bool{false, true} {
			tc.o.Compat = compat
			t.Run(tc.name+"/"+tc.o.DatasetPath+map[bool]string{true: "/compat"}[compat], func(t *testing.T) {
				d := mustNew(t, tc.name, tc.o, tok)
				a, b := generate(t, d, 5, 42), generate(t, d, 5, 42)
				if diff := cmp.Diff(a, b); diff != "" {
					t.Errorf("same seed, different prompts (-first +second):\n%s", diff)
				}
				if c := generate(t, d, 5, 43); cmp.Equal(a, c) {
					t.Errorf("seeds 42 and 43 gave identical prompts")
				}
			})
		}
	}
}

func TestNew(t *testing.T) {
	tok := qwen3(t)
	if _, err := datasets.New("nope", datasets.DefaultOptions(), tok); !errors.Is(err, datasets.ErrUnknownDataset) {
		t.Errorf("New(nope) error = %v, want ErrUnknownDataset", err)
	}
	// sglang maps any unknown random* name to random-ids.
	o := randomOpts("", 4, 4, 1)
	o.TokenizePrompt = true
	d := mustNew(t, "random-whatever", o, tok)
	ps := generate(t, d, 1, 1)
	if v := tok.VocabSize(); (ps[0].IDs[1]-ps[0].IDs[0]+v)%v != 1 {
		t.Errorf("random-whatever did not produce a random-ids run: %v", ps[0].IDs)
	}
	if _, err := datasets.New("random", datasets.DefaultOptions(), nil); err == nil {
		t.Error("New with a nil tokenizer succeeded")
	}
	bad := randomOpts("", 4, 4, 1.5)
	if _, err := datasets.New("random", bad, tok); err == nil || !strings.Contains(err.Error(), "range ratio") {
		t.Errorf("ratio 1.5: error = %v, want a range ratio error", err)
	}
	if _, err := datasets.New("random", randomOpts("testdata/missing.json", 4, 4, 1), tok); err == nil || !strings.Contains(err.Error(), "testdata/missing.json") {
		t.Errorf("missing file: error = %v, want one naming the path", err)
	}
}

// BenchmarkRandom1024 is the target: 10,000 prompts of 1,024 tokens
// (exact mode, embedded corpus) in under 3 s on one core.
func BenchmarkRandom1024(b *testing.B) {
	d := mustNew(b, "random", randomOpts("", 1024, 128, 1.0), qwen3(b))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := d.Generate(10000, rand.New(rand.NewPCG(uint64(i), 1))); err != nil {
			b.Fatal(err)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func trunc(s string) string {
	if len(s) > 200 {
		return s[:100] + "…" + s[len(s)-100:]
	}
	return s
}

// BenchmarkRandomIDs128 is random-ids' exact-length generation of 256
// prompts of 128 tokens per op, built from the tokenizer's verified pieces
// without encoding, on every core (-cpu sets how many), for Qwen3 and
// Llama 3. The pieces are found before the timer starts;
// BenchmarkRandomIDsPieces times that.
func BenchmarkRandomIDs128(b *testing.B) {
	for name, tok := range benchTokenizers(b) {
		b.Run(name, func(b *testing.B) {
			d := mustNew(b, "random-ids", randomOpts("", 128, 1, 1), tok)
			r := seeded(1)
			b.ResetTimer()
			for b.Loop() {
				if _, err := d.Generate(256, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*256), "µs/prompt")
		})
	}
}

// BenchmarkRandomIDsPieces is the one-time cost, per tokenizer, of finding
// and verifying the pieces random-ids builds exact text from.
func BenchmarkRandomIDsPieces(b *testing.B) {
	for name, tok := range benchTokenizers(b) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if !datasets.BuildPieces(tok) {
					b.Fatalf("%s's pieces did not verify", name)
				}
			}
		})
	}
}

func benchTokenizers(b *testing.B) map[string]datasets.Tokenizer {
	l, _ := llama3(b)
	return map[string]datasets.Tokenizer{"qwen3": qwen3(b), "llama3": l}
}
