package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The vocabulary must behave as the map[string]int that decoding the JSON
// object gives: a repeated key takes its last id.
func TestVocabTableDuplicates(t *testing.T) {
	v, err := parseVocab(json.RawMessage(`{"a":0,"b":1,"a":2,"c":1,"":3,"dd":5}`))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]int
	if err := json.Unmarshal([]byte(`{"a":2,"b":1,"c":1,"":3,"dd":5}`), &want); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	v.all(func(tok string, id int) { got[tok] = id })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	if v.n != len(want) {
		t.Errorf("n = %d, want %d", v.n, len(want))
	}
	for tok, id := range want {
		if got, ok := v.id(tok); !ok || got != id {
			t.Errorf("id(%q) = %d, %v, want %d", tok, got, ok, id)
		}
	}
	for _, tok := range []string{"x", "aa", "d"} {
		if id, ok := v.id(tok); ok {
			t.Errorf("id(%q) = %d, want none", tok, id)
		}
	}
	// Id 1 has two tokens; the first is the one decoded.
	for id, want := range []string{0: "", 1: "b", 2: "a", 3: "", 4: "", 5: "dd", 6: ""} {
		if got, ok := v.token(id); got != want || ok != (want != "") {
			t.Errorf("token(%d) = %q, %v, want %q", id, got, ok, want)
		}
	}
}

// TestQwen3Tables checks every vocabulary entry and merge of the embedded
// tokenizer against a plain decode of the file, and pairs that are not
// merges against a map.
func TestQwen3Tables(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	tok := qwen3(t)
	f, err := os.Open(filepath.Join("testdata", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	if err := json.NewDecoder(zr).Decode(&file); err != nil {
		t.Fatal(err)
	}
	vocab, b := file.Model.Vocab, tok.model
	if b.merges.newIDs != nil {
		t.Error("merges indexed by rank; Qwen3's merged ids rise with rank and allow the smaller layout")
	}
	if b.vocab.n != len(vocab) {
		t.Errorf("vocab.n = %d, want %d", b.vocab.n, len(vocab))
	}
	// Under -race, every 16th entry, merge and pair (raceEnabled).
	every := 1
	if raceEnabled {
		every = 16
	}
	i := 0
	for s, id := range vocab {
		if i++; i%every != 0 {
			continue
		}
		if got, ok := b.vocab.id(s); !ok || got != id {
			t.Fatalf("vocab.id(%q) = %d, %v, want %d", s, got, ok, id)
		}
		if got, ok := b.vocab.token(id); !ok || got != s {
			t.Fatalf("vocab.token(%d) = %q, %v, want %q", id, got, ok, s)
		}
	}
	// isMerge holds every merge, ranks the ranks of those checked.
	isMerge, ranks := map[uint64]bool{}, map[uint64]int32{}
	lastRank := int32(-1)
	for i, m := range file.Model.Merges {
		l, r := int32(vocab[m[0]]), int32(vocab[m[1]])
		isMerge[pairKey(l, r)] = true
		if i%every != 0 {
			continue
		}
		rank, newID, ok := b.merges.get(l, r)
		if !ok || int(newID) != vocab[m[0]+m[1]] || rank <= lastRank {
			t.Fatalf("merges.get(%q, %q) = %d, %d, %v; want id %d, rank > %d",
				m[0], m[1], rank, newID, ok, vocab[m[0]+m[1]], lastRank)
		}
		lastRank = rank
		ranks[pairKey(l, r)] = rank
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 / every {
		// Small ids are the likely neighbours, and the dense part of the table.
		n := int32(len(vocab))
		if rng.IntN(2) == 0 {
			n = 2000
		}
		l, r := rng.Int32N(n), rng.Int32N(n)
		rank, _, ok := b.merges.get(l, r)
		want, checked := ranks[pairKey(l, r)]
		if merge := isMerge[pairKey(l, r)]; ok != merge || checked && rank != want {
			t.Fatalf("merges.get(%d, %d) = rank %d, %v; want %d, %v", l, r, rank, ok, want, merge)
		}
	}
}

func TestWordCache(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	c := newWordCache()
	want := map[string][]int{}
	// Enough words to grow every shard and to fill and empty them several
	// times; lengths up to the longest cached word. Under -race, a tenth:
	// every shard grows, none fills (raceEnabled).
	words := 300_000
	if raceEnabled {
		words = 30_000
	}
	for i := range words {
		w := fmt.Sprintf("w%d", i)
		if i%100 == 0 {
			w += strings.Repeat("x", i%cacheMaxWordSize)
		}
		w = w[:min(len(w), cacheMaxWordSize)]
		ids := make([]int, 1+i%len(w))
		for j := range ids {
			ids[j] = (i + j*7919) % 200_000
		}
		c.put(w, ids)
		want[w] = ids
		if got, ok := c.get([]int{-1}, w); !ok || !slices.Equal(got, append([]int{-1}, ids...)) {
			t.Fatalf("get(%q) after put = %v, %v, want [-1] + %v", w, got, ok, ids)
		}
	}
	hits := 0
	for w, ids := range want {
		if got, ok := c.get(nil, w); ok {
			hits++
			if !slices.Equal(got, ids) {
				t.Fatalf("get(%q) = %v, want %v", w, got, ids)
			}
		}
	}
	if hits == 0 {
		t.Error("no word survived")
	}
	if _, ok := c.get(nil, strings.Repeat("y", cacheMaxWordSize+1)); ok {
		t.Error("a word longer than cacheMaxWordSize was found")
	}
	for i := range c.shards {
		s := &c.shards[i]
		if cap(s.data) > 2*cacheShardBytes || len(s.slots) > cacheShardSlots {
			t.Errorf("shard %d: %d data bytes, %d slots, want at most %d and %d",
				i, cap(s.data), len(s.slots), cacheShardBytes, cacheShardSlots)
		}
	}
}

func TestWordCacheConcurrent(t *testing.T) {
	c := newWordCache()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20_000 {
				x := i * (g + 1) % 5000
				w, ids := fmt.Sprint(x), []int{x, x + 1}
				if got, ok := c.get(nil, w); ok && !slices.Equal(got, ids) {
					t.Errorf("get(%q) = %v, want %v", w, got, ids)
					return
				}
				c.put(w, ids)
			}
		})
	}
	wg.Wait()
}

// retainedHeap returns the live heap that load keeps, as runtime.MemStats
// sees it after a collection.
func retainedHeap(tb testing.TB, load func() (*Tokenizer, error)) uint64 {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tok, err := load()
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(tok)
	return after.HeapAlloc - before.HeapAlloc
}

// TestEmbeddedRetainedHeap pins the memory the embedded tokenizer keeps.
// The daemon's budget is 40 MiB RSS; as Go maps this tokenizer alone kept
// 23 MB. The flat tables come to 4.9 MB for Qwen3 (1.4 MB of token bytes,
// 3.4 MB of offsets, slots and merge pairs); the limit leaves about 1 MB for
// the small parts and for runtime differences, and fails on a return to
// maps or a second copy of the vocabulary.
func TestEmbeddedRetainedHeap(t *testing.T) {
	const limit = 6 << 20
	got := retainedHeap(t, loadEmbedded)
	t.Logf("embedded tokenizer retains %.2f MB of heap", float64(got)/1e6)
	if got > limit {
		t.Errorf("loading the embedded tokenizer retained %d bytes of heap, want at most %d", got, limit)
	}
}

// BenchmarkLoadEmbedded reports load time, with gunzip, and the heap kept
// (retained-B).
func BenchmarkLoadEmbedded(b *testing.B) {
	for b.Loop() {
		if _, err := loadEmbedded(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(retainedHeap(b, loadEmbedded)), "retained-B")
}
