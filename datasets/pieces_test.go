package datasets_test

import (
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestRandomIDsExactByConstruction re-encodes thousands of random-ids
// prompts of lengths 1 to 300: each has exactly its drawn length, text
// plus the special tokens Encode adds. For Qwen3 (the embedded default is
// the same file) the text was built from verified pieces, not measured;
// the measured path, which a tokenizer whose pieces do not verify takes,
// is checked on it too. No Llama 3 tokenizer is in the repository's
// testdata; Llama 3 splits text with the same kind of regex as Qwen
// (` ?\p{L}+`), which is what the construction relies on.
func TestRandomIDsExactByConstruction(t *testing.T) {
	for name, tok := range tokenizers(t) {
		for _, measured := range []bool{false, true} {
			t.Run(name+map[bool]string{true: "/measured"}[measured], func(t *testing.T) {
				if _, _, built := datasets.PieceShare(tok); !built {
					t.Fatal("Qwen3's pieces did not verify")
				}
				o, n := randomOpts("", 300, 4, 0), 3000
				d := mustNew(t, "random-ids", o, tok)
				if measured {
					var err error
					if d, err = datasets.NewMeasuredRandomIDs(o, tok); err != nil {
						t.Fatal(err)
					}
					n = 200
				}
				for i, p := range generate(t, d, n, 11) {
					if got := count(t, tok, p.Text, true); got != p.PromptLen {
						t.Fatalf("prompt %d: Encode(text, true) has %d tokens, PromptLen %d (text %q)", i, got, p.PromptLen, trunc(p.Text))
					}
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

// TestRandomIDsVocabularyShare: the documented share of Qwen3's vocabulary
// that random-ids text can hold: a third of it as lead pieces, in every
// tenth of the id range but one (Qwen3's ids 106,150–121,313 are Chinese
// words, which carry no space), and the first pieces, which reach that
// tenth too; prompts' ids come from them and reach every tenth.
func TestRandomIDsVocabularyShare(t *testing.T) {
	tok := qwen3(t)
	lead, first, ok := datasets.PieceShare(tok)
	if !ok {
		t.Fatal("Qwen3's pieces did not verify")
	}
	v := tok.VocabSize()
	if share := float64(len(lead)) / float64(v); share < 0.33 {
		t.Errorf("lead pieces are %.1f%% of the vocabulary, documented as about a third", 100*share)
	}
	if len(first) < 4000 {
		t.Errorf("%d first pieces, documented as about 4,300", len(first))
	}
	can := map[int]bool{}
	for _, id := range append(append([]int(nil), lead...), first...) {
		can[id] = true
	}
	var pieceTenths, promptTenths [10]int
	for _, id := range lead {
		pieceTenths[10*id/v]++
	}
	d := mustNew(t, "random-ids", randomOpts("", 128, 4, 1), tok)
	for i, p := range generate(t, d, 500, 5) {
		ids, err := tok.Encode(p.Text, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if !can[id] {
				t.Fatalf("prompt %d holds id %d, which is not a piece", i, id)
			}
			promptTenths[10*id/v]++
		}
	}
	for k := range 10 {
		if (pieceTenths[k] < len(lead)/50) != (k == 7) || promptTenths[k] == 0 {
			t.Errorf("ids in [%d, %d): %d pieces, %d in prompts; want every tenth of the vocabulary represented", k*v/10, (k+1)*v/10, pieceTenths[k], promptTenths[k])
		}
	}
	t.Logf("lead pieces %d (%.1f%%), first pieces %d, per tenth %v", len(lead), 100*float64(len(lead))/float64(v), len(first), pieceTenths)
}
