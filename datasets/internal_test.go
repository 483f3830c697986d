package datasets

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// byteTok is one token per byte: enough for parser and fuzz tests, which
// cannot import the tokenizer package (it imports this one).
type byteTok struct{}

func (byteTok) Encode(s string, _ bool) ([]int, error) {
	ids := make([]int, len(s))
	for i := range len(s) {
		ids[i] = int(s[i])
	}
	return ids, nil
}

func (byteTok) Decode(ids []int, _ bool) (string, error) {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b), nil
}
func (byteTok) NumSpecialTokensToAdd() int { return 0 }
func (byteTok) VocabSize() int             { return 256 }

func TestRandomLens(t *testing.T) {
	cases := []struct {
		full   int
		ratio  float64
		lo, hi int
	}{
		{1024, 0, 1, 1024},
		{1024, 1, 1024, 1024},
		{10, 0.55, 5, 10}, // ⌊5.5⌋
		{1, 0, 1, 1},
		{0, 0.5, 0, 0}, // embeddings: zero output
		{-3, 0, 0, 0},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		got := randomLens(tc.full, tc.ratio, 2000, r)
		lo, hi := math.MaxInt, math.MinInt
		for _, v := range got {
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("randomLens(%d, %v) range [%d, %d], want [%d, %d]", tc.full, tc.ratio, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestLoRAPicker(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "b", "c"}

	d, err := NewLoRAPicker(names, LoRADistinct, 0)
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]Prompt, 7)
	AssignLoRA(ps, d, r)
	var got []string
	for _, p := range ps {
		got = append(got, p.LoRA)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "a", "b", "c", "a"}, got); diff != "" {
		t.Errorf("distinct (-want +got):\n%s", diff)
	}

	// vLLM's --lora-assignment round-robin: request i gets name i mod
	// the count, and one name is allowed (sglang's distinct refuses it).
	rr, err := NewLoRAPicker(names, LoRARoundRobin, 0)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for i := range 5 {
		got = append(got, rr.Pick(i, nil))
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "a", "b"}, got); diff != "" {
		t.Errorf("round-robin (-want +got):\n%s", diff)
	}
	if one, err := NewLoRAPicker([]string{"only"}, LoRARoundRobin, 0); err != nil || one.Pick(3, nil) != "only" {
		t.Errorf("round-robin with one name: %v, error %v; want only", one, err)
	}

	s, err := NewLoRAPicker(names, LoRASkewed, 2)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range 7000 {
		counts[s.Pick(i, r)]++
	}
	// Weights 1, 1/2, 1/4 normalised: 4000, 2000, 1000 expected.
	for name, want := range map[string]int{"a": 4000, "b": 2000, "c": 1000} {
		if c := counts[name]; math.Abs(float64(c-want)) > 200 {
			t.Errorf("skewed: %s picked %d times, want about %d", name, c, want)
		}
	}

	u, _ := NewLoRAPicker([]string{"only"}, LoRAUniform, 0)
	if got := u.Pick(5, r); got != "only" {
		t.Errorf("uniform with one name picked %q", got)
	}
	if p, err := NewLoRAPicker(nil, LoRASkewed, 0); p != nil || err != nil || p.Pick(0, r) != "" {
		t.Errorf("no names: picker %v, error %v; want nil, nil", p, err)
	}
	for _, bad := range []struct {
		names []string
		dist  string
		alpha float64
	}{
		{[]string{"a"}, LoRADistinct, 0},
		{[]string{"a"}, LoRASkewed, 2},
		{names, LoRASkewed, 1},
		{names, LoRASkewed, math.Inf(1)},
		{names, "zipf", 2},
	} {
		if _, err := NewLoRAPicker(bad.names, bad.dist, bad.alpha); err == nil {
			t.Errorf("NewLoRAPicker(%v, %s, %v) succeeded", bad.names, bad.dist, bad.alpha)
		}
	}
}

func TestQwenSmartResize(t *testing.T) {
	cases := []struct{ h, w, wantH, wantW int }{
		{1080, 1920, 1092, 1932},
		{2160, 3840, 2156, 3836},
		{14, 14, 56, 56},         // below min_pixels: scaled up
		{42, 42, 56, 56},         // 1.5 rounds half to even: 2·28, then min_pixels
		{70, 28, 112, 56},        // 2.5 rounds to 2; 56·28 < min_pixels, so both sides scale up
		{8000, 8000, 3584, 3584}, // above max_pixels: scaled down
	}
	for _, tc := range cases {
		h, w := qwenSmartResize(tc.h, tc.w)
		if h != tc.wantH || w != tc.wantW {
			t.Errorf("qwenSmartResize(%d, %d) = %d×%d, want %d×%d", tc.h, tc.w, h, w, tc.wantH, tc.wantW)
		}
	}
}

func TestParseResolution(t *testing.T) {
	cases := []struct {
		in   string
		want resolution
		ok   bool
	}{
		{"4k", resolution{2160, 3840, 2160, 3840}, true},
		{"720p", resolution{720, 1280, 720, 1280}, true},
		{"1080x1920", resolution{1080, 1920, 1080, 1920}, true},
		{"random:10x20-30x40", resolution{10, 20, 30, 40}, true},
		{"random:10x20", resolution{}, false},
		{"1920", resolution{}, false},
		{"-1x5", resolution{}, false},
	}
	for _, tc := range cases {
		got, err := parseResolution(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseResolution(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestEmbeddedCorpus(t *testing.T) {
	s := embeddedSentences()
	if len(s) < 250 {
		t.Errorf("embedded corpus has %d sentences, want at least 250", len(s))
	}
	for _, x := range s {
		if len(x) < 8 || !startsWord(x) {
			t.Errorf("bad sentence %q", x)
		}
	}
	c, err := newTextCorpus(byteTok{}, s)
	if err != nil || !c.separable {
		t.Errorf("byte tokenizer: separable=%v err=%v, want a separable corpus", c.separable, err)
	}
}

func FuzzParseResolution(f *testing.F) {
	for _, s := range []string{"4k", "1080x1920", "random:1x1-2x2", "x", "random:-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseResolution(s)
		if err == nil && (r.minH < 1 || r.minW < 1 || r.maxH < r.minH || r.maxW < r.minW) {
			t.Errorf("parseResolution(%q) = %v with no error", s, r)
		}
	})
}

// FuzzParseCustomRow: any line either fails cleanly or gives a prompt with
// sane lengths. Seeds are in testdata/fuzz/FuzzParseCustomRow and the
// custom.jsonl rows.
func FuzzParseCustomRow(f *testing.F) {
	for _, s := range []string{
		`{"prompt": "hi", "output_len": 5}`,
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}], "max_tokens": 3}`,
		`{"conversations": [{"value": "a b"}, {"content": "c d"}]}`,
		`[]`, `null`, `{"prompt": null}`, `{"extra_body": 1, "prompt": "x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		o := DefaultOptions()
		p, keep, err := parseCustomRow(o, byteTok{}, line)
		if err != nil || !keep {
			return
		}
		if p.OutputLen < 1 || p.PromptLen < 0 || (p.Text == "" && len(p.Messages) == 0 && p.PromptLen > 0 && len(line) == 0) {
			t.Errorf("parseCustomRow(%q) = %+v", line, p)
		}
	})
}

// TestInOrder: prompts made on several goroutines come out in order, and
// the first error ends them, after the prompts before it.
func TestInOrder(t *testing.T) {
	for _, workers := range []int{1, 3, 8} {
		for _, n := range []int{0, 1, 47, 200} {
			var got []int
			inOrder(n, workers, func(i int) (Prompt, error) { return Prompt{PromptLen: i}, nil }, func(p Prompt, err error) bool {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.PromptLen)
				return true
			})
			if len(got) != n {
				t.Fatalf("workers %d, n %d: %d prompts", workers, n, len(got))
			}
			for i, v := range got {
				if v != i {
					t.Fatalf("workers %d: prompt %d is %d", workers, i, v)
				}
			}
		}
		fail := errors.New("no prompt 60")
		var got []int
		var last error
		inOrder(200, workers, func(i int) (Prompt, error) {
			if i == 60 {
				return Prompt{}, fail
			}
			return Prompt{PromptLen: i}, nil
		}, func(p Prompt, err error) bool {
			if last = err; err == nil {
				got = append(got, p.PromptLen)
			}
			return true
		})
		if last != fail || len(got) != 60 {
			t.Errorf("workers %d: %d prompts then %v; want 60 then %v", workers, len(got), last, fail)
		}
		stopped := 0
		inOrder(200, workers, func(i int) (Prompt, error) { return Prompt{}, nil }, func(Prompt, error) bool { stopped++; return stopped < 5 })
		if stopped != 5 {
			t.Errorf("workers %d: yield called %d times after returning false at 5", workers, stopped)
		}
	}
}

// TestWordPiecesText: a run is the first piece then consecutive lead
// pieces from the offset, wrapping past the last, as often as it must.
func TestWordPiecesText(t *testing.T) {
	lead := []string{" a", " bb", " c"}
	w := &wordPieces{lead: []int{10, 20, 30}, first: []int{15, 25}, firstText: []string{"X", "Y"},
		leadAll: strings.Join(lead, ""), leadOff: []int{0, 2, 5, 7}}
	cases := []struct {
		offset, i, n int
		want         string
	}{
		{0, 0, 0, ""},
		{0, 0, 1, "X"},
		{0, 0, 3, "X a bb"},
		{16, 0, 3, "Y bb c"},
		{31, 0, 2, "X a"}, // past the last id: both wrap to the start
		{20, 1, 4, "X c a bb"},
		{30, 0, 8, "X c a bb c a bb c"},
	}
	for _, tc := range cases {
		if got := w.text(tc.offset, tc.i, tc.n); got != tc.want {
			t.Errorf("text(%d, %d, %d) = %q, want %q", tc.offset, tc.i, tc.n, got, tc.want)
		}
	}
}
