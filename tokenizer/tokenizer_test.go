package tokenizer

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dlclark/regexp2"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"
)

// Round trip: decode(encode(s)) gives back s, after the NFC normalizer
// Qwen3 applies.
func TestRoundTripQwen3(t *testing.T) {
	tok := qwen3(t)
	for i, c := range readGolden(t, "qwen3") {
		ids, _ := tok.Encode(c.Text, false)
		got, err := tok.Decode(ids, false)
		if err != nil {
			t.Fatal(err)
		}
		if want := norm.NFC.String(c.Text); got != want {
			t.Errorf("case %d: Decode(Encode(%q)) = %q, want %q", i, c.Text, got, want)
		}
	}
}

func TestQwen3Properties(t *testing.T) {
	tok := qwen3(t)
	if got, want := tok.VocabSize(), 151643; got != want {
		t.Errorf("VocabSize() = %d, want %d", got, want)
	}
	if got, want := tok.Len(), 151669; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	if got := tok.NumSpecialTokensToAdd(); got != 0 {
		t.Errorf("NumSpecialTokensToAdd() = %d, want 0", got)
	}
	if id, ok := tok.EOS(); !ok || id != 151645 {
		t.Errorf("EOS() = %d, %v, want 151645 (<|im_end|>), true", id, ok)
	}
	if _, ok := tok.BOS(); ok {
		t.Error("BOS() ok, want none: Qwen3 has no bos_token")
	}
	if id, ok := tok.TokenToID("<|im_start|>"); !ok || id != 151644 {
		t.Errorf("TokenToID(<|im_start|>) = %d, %v", id, ok)
	}
	if s, ok := tok.IDToToken(9707); !ok || s != "Hello" {
		t.Errorf("IDToToken(9707) = %q, %v, want Hello", s, ok)
	}
	if _, err := tok.Decode([]int{1 << 30}, false); err == nil {
		t.Error("Decode(out of range id) succeeded, want error")
	}
}

func TestMetaspaceBOS(t *testing.T) {
	tok, err := Load(filepath.Join("testdata", "metaspace-legacy"))
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.NumSpecialTokensToAdd(); got != 1 {
		t.Errorf("NumSpecialTokensToAdd() = %d, want 1", got)
	}
	ids, _ := tok.Encode("the", true)
	if bos, _ := tok.BOS(); len(ids) == 0 || ids[0] != bos || bos != 1 {
		t.Errorf("Encode(the, true) = %v, want BOS 1 first", ids)
	}
}

// TestLoadForms loads the same tokenizer as a directory, a .json.gz file, a
// plain tokenizer.json file and a directory holding only tokenizer.json.
func TestLoadForms(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	dir := t.TempDir()
	gz, err := os.ReadFile(filepath.Join("testdata", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	jsonOnly := filepath.Join(dir, "plain")
	if err := os.MkdirAll(jsonOnly, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jsonOnly, "tokenizer.json"), plain.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := qwen3(t).Encode("Hello, 世界 <|im_end|>", false)
	forms := []string{
		filepath.Join("testdata", "qwen3"),
		filepath.Join("testdata", "qwen3", "tokenizer.json.gz"),
		filepath.Join(jsonOnly, "tokenizer.json"),
		jsonOnly,
	}
	if raceEnabled {
		// A load takes some 25 s under -race on a busy machine: the .gz
		// file and the directory of plain JSON take both decoders and
		// both kinds of path (raceEnabled).
		forms = []string{forms[1], forms[3]}
	}
	for _, p := range forms {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			tok, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := tok.Encode("Hello, 世界 <|im_end|>", false)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Encode mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil {
		t.Error("Load(missing) succeeded, want error")
	}
}

// minimal builds a tokenizer.json around a model and components.
func minimal(model, extra string) []byte {
	return []byte(`{"version":"1.0","added_tokens":[],` + extra + `"model":` + model + `}`)
}

const tinyBPE = `{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"c":3,"abc":4},"merges":MERGES}`

func TestMergeForms(t *testing.T) {
	for _, merges := range []string{`["a b","ab c"]`, `[["a","b"],["ab","c"]]`} {
		tok, err := New(minimal(strings.Replace(tinyBPE, "MERGES", merges, 1), ""), nil)
		if err != nil {
			t.Fatalf("merges %s: %v", merges, err)
		}
		got, _ := tok.Encode("abcab", false)
		if diff := cmp.Diff([]int{4, 2}, got); diff != "" {
			t.Errorf("merges %s: Encode(abcab) (-want +got):\n%s", merges, diff)
		}
	}
}

// Lowest rank wins over position; leftmost wins among equal ranks.
func TestMergeOrder(t *testing.T) {
	model := `{"type":"BPE","vocab":{"a":0,"b":1,"aa":2,"ab":3,"aab":4},"merges":["a b","a a","aa b"]}`
	tok, err := New(minimal(model, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"aab", []int{0, 3}}, // "a b" (rank 0) beats the leftmost "a a" (rank 1)
		{"aaa", []int{2, 0}}, // ties go leftmost
		{"aaaa", []int{2, 2}},
		{"aaab", []int{2, 3}},
	} {
		got, _ := tok.Encode(tc.in, false)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Encode(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"unigram", `{"model":{"type":"Unigram","vocab":[]}}`, `unsupported model type "Unigram"`},
		{"wordpiece", `{"model":{"type":"WordPiece","vocab":{}}}`, `unsupported model type "WordPiece"`},
		{"normalizer", string(minimal(`{"type":"BPE","vocab":{},"merges":[]}`, `"normalizer":{"type":"Precompiled","precompiled_charsmap":""},`)), `unsupported normalizer type "Precompiled"`},
		{"pre_tokenizer", string(minimal(`{"type":"BPE","vocab":{},"merges":[]}`, `"pre_tokenizer":{"type":"BertPreTokenizer"},`)), `unsupported pre_tokenizer type "BertPreTokenizer"`},
		{"decoder", string(minimal(`{"type":"BPE","vocab":{},"merges":[]}`, `"decoder":{"type":"WordPiece"},`)), `unsupported decoder type "WordPiece"`},
		{"post", string(minimal(`{"type":"BPE","vocab":{},"merges":[]}`, `"post_processor":{"type":"Foo"},`)), `unsupported post_processor type "Foo"`},
		{"merge not in vocab", string(minimal(`{"type":"BPE","vocab":{"a":0},"merges":["a b"]}`, "")), `merges[0] "a" "b": token not in vocab`},
		{"not json", `{`, `tokenizer.json: unexpected end of JSON input`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New([]byte(tc.json), nil)
			if err == nil || err.Error() != tc.want {
				t.Errorf("New() error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestAddedTokenOptions(t *testing.T) {
	model := `{"type":"BPE","vocab":{"a":0,"b":1," ":2,"X":3},"merges":[]}`
	added := `"added_tokens":[
		{"id":10,"content":"<L>","lstrip":true,"rstrip":false,"single_word":false,"normalized":false,"special":true},
		{"id":11,"content":"<R>","lstrip":false,"rstrip":true,"single_word":false,"normalized":false,"special":false},
		{"id":12,"content":"ab","lstrip":false,"rstrip":false,"single_word":true,"normalized":false,"special":false},
		{"id":13,"content":"x","lstrip":false,"rstrip":false,"single_word":false,"normalized":true,"special":false},
		{"id":14,"content":"<L>>","lstrip":false,"rstrip":false,"single_word":false,"normalized":false,"special":false}],`
	raw := []byte(`{"version":"1.0",` + added + `"normalizer":{"type":"Lowercase"},"model":` + model + `}`)
	tok, err := New(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"a  <L>b", []int{0, 10, 1}},  // lstrip eats the spaces before
		{"a<R>  b", []int{0, 11, 1}},  // rstrip eats the spaces after
		{"ab", []int{12}},             // single word
		{"aab", []int{0, 0, 1}},       // not a single word: BPE instead
		{"ab b", []int{12, 2, 1}},     // word boundary at the space
		{"X", []int{13}},              // normalized: matched after lowercasing
		{"<L>>", []int{14}},           // longest match wins
		{"a\t<L>", []int{0, 10}},      // tab is whitespace too
		{"<R>\n\n<R>", []int{11, 11}}, // adjacent after stripping
		{"<R>", []int{11}},            // nothing to strip
	} {
		got, _ := tok.Encode(tc.in, false)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Encode(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
	// Without a decoder HF joins tokens with spaces.
	if got, _ := tok.Decode([]int{0, 10, 11}, true); got != "a <R>" {
		t.Errorf("Decode(skip special) = %q, want %q", got, "a <R>")
	}
}

func TestLossyUTF8(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte("ok"), "ok"},
		{[]byte{0xE4, 0xBD}, "\uFFFD"},                   // truncated 3-byte: one replacement
		{[]byte{0xE4, 0xBD, 'a'}, "\uFFFDa"},             //
		{[]byte{0xFF, 0xFE}, "\uFFFD\uFFFD"},             // invalid bytes: one each
		{[]byte{0xF0, 0x9F, 0x98}, "\uFFFD"},             // truncated emoji
		{[]byte{0xED, 0xA0, 0x80}, "\uFFFD\uFFFD\uFFFD"}, // surrogate: ED A0 is not a valid prefix
		{[]byte{0xC0, 0xAF}, "\uFFFD\uFFFD"},             // overlong
	} {
		if got := lossyUTF8(tc.in); got != tc.want {
			t.Errorf("lossyUTF8(% x) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The hand-written matchers must split exactly as regexp2 does.
func FuzzHandMatcher(f *testing.F) {
	for _, c := range readGolden(f, "qwen3") {
		f.Add(c.Text)
	}
	f.Add("'ſ 'S 'LL 'Re")
	pats := []string{patQwen2, patLlama3, patGPT2}
	res := make([]*splitter, len(pats))
	hands := make([]*splitter, len(pats))
	for i, p := range pats {
		s, err := newSplit(patternJSON{Regex: &p}, "Isolated", false)
		if err != nil {
			f.Fatal(err)
		}
		if s.hand == nil {
			f.Fatalf("no hand matcher for %q", p)
		}
		hands[i] = s
		res[i] = &splitter{re: regexp2.MustCompile(p, regexp2.Unicode), behavior: isolated}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.Contains(s, "\uFFFD") {
			s = strings.ToValidUTF8(s, "")
		}
		for i := range pats {
			want := res[i].split(nil, s, true)
			got := hands[i].split(nil, s, true)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pattern %d on %q (-regexp2 +hand):\n%s", i, s, diff)
			}
		}
	})
}

func TestConcurrentEncode(t *testing.T) {
	tok := qwen3(t)
	cases := readGolden(t, "qwen3")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range cases {
				c := cases[(i+g*37)%len(cases)]
				got, _ := tok.Encode(c.Text, false)
				if !cmp.Equal(c.IDs, got, cmpNilEmpty) {
					t.Errorf("concurrent Encode(%q) = %v, want %v", c.Text, got, c.IDs)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestLoadGGUF: a GGUF model file given as the tokenizer says what it is
// and what to pass instead, rather than a JSON syntax error.
func TestLoadGGUF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "qwen3-0.6b-q8_0.gguf")
	// The GGUF header: magic, version 3, tensor and metadata counts.
	if err := os.WriteFile(path, append([]byte("GGUF\x03\x00\x00\x00"), make([]byte, 16)...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil {
		t.Fatal("Load of a GGUF file succeeded")
	}
	for _, want := range []string{"is a GGUF model file, not a tokenizer.json", "--tokenizer Qwen/Qwen3-0.6B", "tokenizer.json"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) = %v, want it to say %q", path, err, want)
		}
	}
	if strings.Contains(err.Error(), "invalid character") {
		t.Errorf("Load(%s) = %v: a JSON syntax error", path, err)
	}
}
