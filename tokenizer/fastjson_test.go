package tokenizer

import (
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScanVocabMatchesJSON: the vocabulary reader decodes every key as
// encoding/json does (escapes, surrogate pairs, an unpaired surrogate
// followed by another escape, non-ASCII, pretty-printing), and leaves
// what it does not read plainly to encoding/json.
func TestScanVocabMatchesJSON(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		fallback  bool
	}{
		{"plain and non-ASCII", `{"a":0,"Ġthe":1,"é":2}`, false},
		{"pretty", "{\n  \"a\": 0,\n  \"b\" : 1\n}\n", false},
		{"escapes", `{"\n":0,"\"q\"":1,"\\":2,"\u0120x":3,"\ud83d\ude00":4}`, false},
		{"an unpaired surrogate, then an escape", `{"\ud800\u0041":0}`, false},
		{"empty", `{}`, false},
		{"a null id", `{"a":null}`, true},
		{"a float id", `{"a":1.0}`, true},
		{"trailing bytes", `{"a":1} x`, true},
		{"bad syntax", `{"a":1,}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b vocabBuilder
			err := scanVocab([]byte(tc.raw), &b)
			if tc.fallback {
				if !errors.Is(err, errFallback) {
					t.Errorf("scanVocab(%s) = %v, want a fallback to encoding/json", tc.raw, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("scanVocab(%s): %v", tc.raw, err)
			}
			var want map[string]int
			if err := json.Unmarshal([]byte(tc.raw), &want); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, e := range b.ents {
				got[string(b.keys[e.off:e.end])] = int(e.id)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("scanVocab(%s) (-encoding/json +got):\n%s", tc.raw, diff)
			}
		})
	}
}

// TestScanMergesMatchesJSON: both merge forms read as encoding/json reads
// them.
func TestScanMergesMatchesJSON(t *testing.T) {
	for _, raw := range []string{
		`["a b","Ġ t","\u00e9 x"]`,
		`[["a","b"],["Ġ","t"], [ "\" q" , "\\" ] ]`,
		`[]`,
	} {
		var got [][2]string
		if err := scanMerges([]byte(raw), func(_ int, a, b []byte) error {
			got = append(got, [2]string{string(a), string(b)})
			return nil
		}); err != nil {
			t.Fatalf("scanMerges(%s): %v", raw, err)
		}
		var want [][2]string
		if err := fallbackMerges([]byte(raw), func(_ int, a, b []byte) error {
			want = append(want, [2]string{string(a), string(b)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("scanMerges(%s) = %q, encoding/json %q", raw, got, want)
		}
	}
	for _, raw := range []string{`[["a"]]`, `[["a","b","c"]]`, `["a b",]`, `[1]`, `[["a",1]]`} {
		if err := scanMerges([]byte(raw), func(int, []byte, []byte) error { return nil }); !errors.Is(err, errFallback) {
			t.Errorf("scanMerges(%s) = %v, want a fallback to encoding/json", raw, err)
		}
	}
}

// TestQwen3TakesTheFastPath: the embedded file's members, vocabulary and
// merges are all read without falling back: a fallback decodes through
// encoding/json's reflection, far slower, and would still pass every
// other test.
func TestQwen3TakesTheFastPath(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	data, err := readMaybeGzip(filepath.Join("testdata", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := rawObject(data)
	if err != nil {
		t.Fatalf("rawObject(tokenizer.json): %v", err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(top)), slices.Sorted(maps.Keys(want))) {
		t.Errorf("rawObject keys %v, encoding/json %v", slices.Sorted(maps.Keys(top)), slices.Sorted(maps.Keys(want)))
	}
	model, err := rawObject(top["model"])
	if err != nil {
		t.Fatalf("rawObject(model): %v", err)
	}
	var b vocabBuilder
	if err := scanVocab(model["vocab"], &b); err != nil {
		t.Errorf("scanVocab: %v", err)
	}
	n := 0
	if err := scanMerges(model["merges"], func(int, []byte, []byte) error { n++; return nil }); err != nil || n == 0 {
		t.Errorf("scanMerges: %v after %d merges", err, n)
	}
}
