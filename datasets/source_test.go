package datasets_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

// collect reads a whole pass of s.
func collect(t *testing.T, s *datasets.Source) []datasets.Prompt {
	t.Helper()
	var out []datasets.Prompt
	for p, err := range s.All() {
		if err != nil {
			t.Fatalf("prompt %d: %v", len(out), err)
		}
		out = append(out, p)
	}
	return out
}

// TestStreamMatchesGenerate: a stream's prompts are Generate's, in order,
// on every pass, with the same count, first prompt and totals, so a run's
// input token total does not depend on how its prompts were made. Within
// the budget of prompts made before the run (SetAhead) all of them are
// made at once and held; past it, the first ones are, and the rest are
// made while the run reads them, more than the look-ahead, so that the
// generator waits for the reader; a second pass (a sweep's next point)
// makes them again.
func TestStreamMatchesGenerate(t *testing.T) {
	toks := tokenizers(t)
	if datasets.RaceEnabled {
		// The stream's goroutines are the same whatever the tokenizer:
		// under -race, one of each family, one with a BOS and one without
		// (the whole run, without -race, takes all four).
		toks = map[string]datasets.Tokenizer{"qwen3": toks["qwen3"], "llama3+bos": toks["llama3+bos"]}
	}
	for tname, tok := range toks {
		for _, name := range []string{"random", "random-ids"} {
			for _, mode := range []string{"exact", "compat", "tokenize-prompt"} {
				for _, ahead := range []int{8 << 20, 16 << 10} {
					onDemand := ahead < 1<<20
					t.Run(fmt.Sprintf("%s/%s/%s/ahead %d", tname, name, mode, ahead), func(t *testing.T) {
						defer datasets.SetAhead(ahead)()
						o := randomOpts("", 48, 9, 0.25)
						o.Compat = mode == "compat"
						o.TokenizePrompt = mode == "tokenize-prompt"
						d := mustNew(t, name, o, tok)
						const n = 600
						want := generate(t, d, n, 7)
						s, ok, err := d.(datasets.Streamer).Stream(n, func() *rand.Rand { return seeded(7) })
						if err != nil || !ok {
							t.Fatalf("Stream: %v, %v", ok, err)
						}
						if s.OnDemand() != onDemand || (s.Prompts() == nil) != onDemand {
							t.Fatalf("on demand %v, held %d; want on demand %v", s.OnDemand(), len(s.Prompts()), onDemand)
						}
						w := datasets.FromPrompts(want)
						wantIn, wantOut := w.Totals()
						if in, out := s.Totals(); in != wantIn || out != wantOut {
							t.Errorf("totals %d, %d; Generate's %d, %d", in, out, wantIn, wantOut)
						}
						if s.Len() != n || s.Requests() != n {
							t.Errorf("Len %d, Requests %d, want %d", s.Len(), s.Requests(), n)
						}
						if diff := cmp.Diff(want[0], s.First()); diff != "" {
							t.Errorf("first prompt (-Generate +Stream):\n%s", diff)
						}
						for pass := range 3 {
							if diff := cmp.Diff(want, collect(t, s)); diff != "" {
								t.Fatalf("pass %d (-Generate +Stream):\n%s", pass, diff)
							}
						}
					})
				}
			}
		}
	}
}

// TestStreamStopEarly: a reader that stops early, past the prompts made
// before the run, stops the generator (the package's goleak check fails
// otherwise), and a new pass starts over and makes the same prompts,
// though the first pass's generator was left part way.
func TestStreamStopEarly(t *testing.T) {
	defer datasets.SetAhead(4 << 10)()
	d := mustNew(t, "random", randomOpts("", 32, 4, 1), qwen3(t))
	const n = 2000
	s, _, err := d.(datasets.Streamer).Stream(n, func() *rand.Rand { return seeded(1) })
	if err != nil {
		t.Fatal(err)
	}
	if !s.OnDemand() {
		t.Fatal("all prompts made ahead; the test needs some made on demand")
	}
	var got []datasets.Prompt
	for p := range s.All() {
		if got = append(got, p); len(got) == 50 {
			break
		}
	}
	want := generate(t, d, n, 1)
	if diff := cmp.Diff(want[:50], got); diff != "" {
		t.Fatalf("pass 1 (-Generate +Stream):\n%s", diff)
	}
	if diff := cmp.Diff(want, collect(t, s)); diff != "" {
		t.Fatalf("pass 2 (-Generate +Stream):\n%s", diff)
	}
}

// TestStreamFileGenerates: with a ShareGPT file, random skips empty
// entries, so its count is known only once the prompts are made: it does
// not stream.
func TestStreamFileGenerates(t *testing.T) {
	d := mustNew(t, "random", randomOpts(sharegptFile, 32, 4, 1), qwen3(t))
	if _, ok, err := d.(datasets.Streamer).Stream(10, func() *rand.Rand { return seeded(1) }); ok || err != nil {
		t.Fatalf("Stream with a file: ok %v, err %v; want false, nil", ok, err)
	}
}

// TestFromPrompts: prompts held in memory, conversations counted by rounds:
// their user turns' input and every round's output (a demo's "#Output
// tokens: 32" counted first turns only, for 96 generated).
func TestFromPrompts(t *testing.T) {
	ps := []datasets.Prompt{
		{Text: "a", PromptLen: 3, OutputLen: 5},
		{MultiTurn: true, Messages: []datasets.Message{{Role: "user"}, {Role: "assistant"}, {Role: "user"}}, PromptLen: 4, OutputLen: 6, TurnLens: []int{4, 2}},
	}
	s := datasets.FromPrompts(ps)
	in, out := s.Totals()
	if s.Len() != 2 || s.Requests() != 3 || in != 3+4+2 || out != 5+2*6 || s.OnDemand() || s.First().Text != "a" {
		t.Errorf("Len %d Requests %d totals %d,%d on demand %v first %q", s.Len(), s.Requests(), in, out, s.OnDemand(), s.First().Text)
	}
	if diff := cmp.Diff(ps, collect(t, s)); diff != "" {
		t.Error(diff)
	}
}

// TestWithRequestIDs: prompt i carries prefix+i, whether the prompts are
// held or made on demand, on every pass, and the first prompt too; the
// source it was made from is unchanged.
func TestWithRequestIDs(t *testing.T) {
	ps := []datasets.Prompt{{Text: "a"}, {Text: "b"}, {Text: "c"}}
	pass := func(yield func(datasets.Prompt, error) bool) {
		for _, p := range ps {
			if !yield(p, nil) {
				return
			}
		}
	}
	for name, src := range map[string]*datasets.Source{
		"held":      datasets.FromPrompts(ps),
		"on demand": datasets.OnDemand(len(ps), 0, 0, ps[0], pass),
	} {
		ided := src.WithRequestIDs("run-")
		for range 2 {
			var ids []string
			for _, p := range collect(t, ided) {
				ids = append(ids, p.Text+"="+p.RequestID)
			}
			if diff := cmp.Diff([]string{"a=run-0", "b=run-1", "c=run-2"}, ids); diff != "" {
				t.Errorf("%s: (-want +got):\n%s", name, diff)
			}
		}
		if ided.First().RequestID != "run-0" || ided.Len() != 3 {
			t.Errorf("%s: first %q, len %d", name, ided.First().RequestID, ided.Len())
		}
		for _, p := range collect(t, src) {
			if p.RequestID != "" {
				t.Errorf("%s: the original source's prompt %q has id %q", name, p.Text, p.RequestID)
			}
		}
	}
}
