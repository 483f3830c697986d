package datasets_test

import (
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestRandomIDsExactByConstruction re-encodes random-ids prompts of
// lengths 1 to 300, drawn under several seeds (so offsets all over the id
// range, and runs that wrap): each has exactly its drawn length, text plus
// the special tokens Encode adds, for Qwen3 and Llama 3, each without and
// with a BOS (Llama 3's is its own <|begin_of_text|>, see llama3). The
// text was built from verified pieces, not measured; the measured path,
// which a tokenizer whose pieces do not verify takes, is checked too.
// Under -race, one seed and a fifth of the prompts (datasets.RaceEnabled):
// too few draws to reach nearly every length, which the whole run, without
// -race, checks.
func TestRandomIDsExactByConstruction(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	for name, tok := range tokenizers(t) {
		for _, measured := range []bool{false, true} {
			t.Run(name+map[bool]string{true: "/measured"}[measured], func(t *testing.T) {
				if _, _, built := datasets.PieceShare(tok); !built {
					t.Fatalf("%s's pieces did not verify", name)
				}
				o, n, seeds := randomOpts("", 300, 4, 0), 2000, []uint64{11, 12, 13, 14, 15}
				if datasets.RaceEnabled {
					n, seeds = 400, seeds[:1]
				}
				d := mustNew(t, "random-ids", o, tok)
				if measured {
					var err error
					if d, err = datasets.NewMeasuredRandomIDs(o, tok); err != nil {
						t.Fatal(err)
					}
					n, seeds = min(n, 200), seeds[:1]
				}
				lens := map[int]bool{}
				for _, seed := range seeds {
					for i, p := range generate(t, d, n, seed) {
						if got := count(t, tok, p.Text, true); got != p.PromptLen {
							t.Fatalf("seed %d prompt %d: Encode(text, true) has %d tokens, PromptLen %d (text %q)", seed, i, got, p.PromptLen, trunc(p.Text))
						}
						lens[p.PromptLen] = true
					}
				}
				if !measured && !datasets.RaceEnabled && len(lens) < 290 {
					t.Errorf("%d distinct lengths of 300 drawn; the test should reach nearly all", len(lens))
				}
			})
		}
	}
}

// TestRandomIDsToyTokenizers: the repository's Metaspace tokenizers are toy
// vocabularies with a few dozen word tokens, too few to build from, so
// random-ids measures their prompts.
func TestRandomIDsToyTokenizers(t *testing.T) {
	for _, name := range []string{"metaspace-first", "metaspace-legacy"} {
		tok, err := tokenizer.Load("../tokenizer/testdata/" + name)
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		if lead, _, ok := datasets.PieceShare(tok); ok {
			t.Errorf("%s: built from %d pieces, want measured", name, len(lead))
		}
	}
}

// TestRandomIDsVocabularyShare: the documented share of each tokenizer's
// vocabulary that random-ids text can hold (the datasets package's
// documentation states these counts): the lead pieces, in every tenth of
// the id range but those the documentation names (Qwen3's ids
// 106,150–121,313 are Chinese words, which carry no space), and the first
// pieces, which reach every tenth. Prompts' ids all come from them, reach
// every tenth of the id range, and most lead pieces appear in a few
// thousand prompts.
func TestRandomIDsVocabularyShare(t *testing.T) {
	llama, _ := llama3(t)
	for _, tc := range []struct {
		name        string
		tok         datasets.Tokenizer
		lead, first int
		sparse      int // the tenth of the id range with few lead pieces, or -1
	}{
		{"qwen3", qwen3(t), 50903, 4304, 7},
		{"llama3", llama, 55449, 4195, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lead, first, ok := datasets.PieceShare(tc.tok)
			if !ok {
				t.Fatal("the pieces did not verify")
			}
			v := tc.tok.VocabSize()
			t.Logf("lead pieces %d of %d ids (%.1f%%), first pieces %d", len(lead), v, 100*float64(len(lead))/float64(v), len(first))
			if len(lead) != tc.lead || len(first) != tc.first {
				t.Errorf("%d lead and %d first pieces; the documentation states %d and %d", len(lead), len(first), tc.lead, tc.first)
			}
			can := map[int]bool{}
			for _, id := range append(append([]int(nil), lead...), first...) {
				can[id] = true
			}
			var pieceTenths, firstTenths, promptTenths [10]int
			for _, id := range lead {
				pieceTenths[10*id/v]++
			}
			for _, id := range first {
				firstTenths[10*id/v]++
			}
			seen := map[int]bool{}
			d := mustNew(t, "random-ids", randomOpts("", 128, 4, 1), tc.tok)
			for i, p := range generate(t, d, 2000, 5) {
				ids, err := tc.tok.Encode(p.Text, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					if !can[id] {
						t.Fatalf("prompt %d holds id %d, which is not a piece", i, id)
					}
					seen[id] = true
					promptTenths[10*id/v]++
				}
			}
			for k := range 10 {
				if (pieceTenths[k] < len(lead)/50) != (k == tc.sparse) || firstTenths[k] == 0 || promptTenths[k] == 0 {
					t.Errorf("ids in [%d, %d): %d lead and %d first pieces, %d in prompts; want every tenth of the vocabulary represented", k*v/10, (k+1)*v/10, pieceTenths[k], firstTenths[k], promptTenths[k])
				}
			}
			// 2,000 runs of 127 lead pieces from uniform offsets cover
			// most of them (1 − e^(−254,000/n) of n pieces).
			if len(seen) < len(lead)*9/10 {
				t.Errorf("2,000 prompts hold %d distinct ids of %d lead pieces; want most of them", len(seen), len(lead))
			}
		})
	}
}
