package tokenizer

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe is HF's BPE model. Words arrive as raw text; with byteLevel each byte
// is first mapped to its GPT-2 alphabet symbol.
type bpe struct {
	vocab        map[string]int
	idToToken    []string
	merges       map[uint64]merge // (left id, right id) -> merge
	byteLevel    bool
	byteIDs      [256]int // byte-level: id of each byte's symbol, -1 if absent
	byteFallback bool
	byteTokenIDs [256]int // <0xNN> ids for byte fallback, -1 if absent
	unk          int      // -1 without unk_token
	fuseUnk      bool
	ignoreMerges bool
	cache        *wordCache
}

type merge struct {
	rank  int32
	newID int32
}

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func newBPE(m *modelJSON, byteLevel bool) (*bpe, error) {
	if m.Type != "" && m.Type != "BPE" {
		return nil, fmt.Errorf("unsupported model type %q", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, fmt.Errorf("unsupported BPE dropout %v", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, fmt.Errorf("unsupported BPE continuing_subword_prefix %q", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("unsupported BPE end_of_word_suffix %q", *m.EndOfWordSuffix)
	}
	vocab, err := parseVocab(m.Vocab)
	if err != nil {
		return nil, err
	}
	b := &bpe{
		vocab:        vocab,
		byteLevel:    byteLevel,
		byteFallback: m.ByteFallback,
		unk:          -1,
		fuseUnk:      m.FuseUnk,
		ignoreMerges: m.IgnoreMerges,
		cache:        newWordCache(),
	}
	maxID := -1
	for _, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("vocab: negative id %d", id)
		}
		maxID = max(maxID, id)
	}
	b.idToToken = make([]string, maxID+1)
	for tok, id := range vocab {
		b.idToToken[id] = tok
	}
	if m.UnkToken != nil {
		id, ok := vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("unk_token %q not in vocab", *m.UnkToken)
		}
		b.unk = id
	}
	for i := range 256 {
		b.byteIDs[i], b.byteTokenIDs[i] = -1, -1
		if id, ok := vocab[string(byteToRune[i])]; ok {
			b.byteIDs[i] = id
		}
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			b.byteTokenIDs[i] = id
		}
	}
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	b.merges = make(map[uint64]merge, len(merges))
	for rank, p := range merges {
		l, okL := vocab[p[0]]
		r, okR := vocab[p[1]]
		n, okN := vocab[p[0]+p[1]]
		if !okL || !okR || !okN {
			return nil, fmt.Errorf("merges[%d] %q %q: token not in vocab", rank, p[0], p[1])
		}
		k := pairKey(l, r)
		if _, dup := b.merges[k]; !dup { // HF keeps the first (lowest) rank
			b.merges[k] = merge{rank: int32(rank), newID: int32(n)}
		}
	}
	return b, nil
}

// encodeWord appends the ids of one pre-tokenized word.
func (b *bpe) encodeWord(dst []int, w string) []int {
	if w == "" {
		return dst
	}
	if ids, ok := b.cache.get(w); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = b.merge(dst, w)
	b.cache.put(w, dst[start:])
	return dst
}

// symbol is one node of the doubly linked list the merge loop works on.
type symbol struct {
	id         int
	prev, next int
	dead       bool
}

func (b *bpe) initialSymbols(syms []symbol, w string) []symbol {
	add := func(id int) {
		syms = append(syms, symbol{id: id, prev: len(syms) - 1, next: len(syms) + 1})
	}
	if b.byteLevel {
		for i := 0; i < len(w); i++ {
			if id := b.byteIDs[w[i]]; id >= 0 {
				add(id)
			} else if b.unk >= 0 {
				add(b.unk)
			}
		}
		return syms
	}
	lastUnk := false
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		ch := w[i : i+n]
		i += n
		if id, ok := b.vocab[ch]; ok {
			add(id)
			lastUnk = false
			continue
		}
		if b.byteFallback {
			ok := true
			for j := 0; j < len(ch); j++ {
				ok = ok && b.byteTokenIDs[ch[j]] >= 0
			}
			if ok {
				for j := 0; j < len(ch); j++ {
					add(b.byteTokenIDs[ch[j]])
				}
				lastUnk = false
				continue
			}
		}
		if b.unk < 0 {
			continue // HF errors here; dropping keeps counting usable
		}
		if b.fuseUnk && lastUnk {
			continue
		}
		add(b.unk)
		lastUnk = true
	}
	return syms
}

// mergeCand is a heap entry: merge symbols[pos] with its successor into id.
type mergeCand struct {
	rank, pos, newID int32
}

func less(a, b mergeCand) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

type candHeap []mergeCand

func (h *candHeap) push(c mergeCand) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *candHeap) pop() mergeCand {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && less(s[l], s[m]) {
			m = l
		}
		if r < len(s) && less(s[r], s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

type scratch struct {
	syms []symbol
	heap candHeap
	sb   strings.Builder
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// merge runs HF's merge loop: always apply the lowest-ranked merge, the
// leftmost one on ties, until none applies.
func (b *bpe) merge(dst []int, w string) []int {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if b.ignoreMerges {
		key := w
		if b.byteLevel {
			sc.sb.Reset()
			for i := 0; i < len(w); i++ {
				sc.sb.WriteRune(byteToRune[w[i]])
			}
			key = sc.sb.String()
		}
		if id, ok := b.vocab[key]; ok {
			return append(dst, id)
		}
	}
	syms := b.initialSymbols(sc.syms[:0], w)
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := b.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h.push(mergeCand{rank: m.rank, pos: int32(i), newID: m.newID})
		}
	}
	for len(h) > 0 {
		c := h.pop()
		s := &syms[c.pos]
		if s.dead || s.next < 0 {
			continue
		}
		right := &syms[s.next]
		if m, ok := b.merges[pairKey(s.id, right.id)]; !ok || m.newID != c.newID {
			continue // stale: a neighbour changed since this was pushed
		}
		s.id = int(c.newID)
		right.dead = true
		s.next = right.next
		if s.next >= 0 {
			syms[s.next].prev = int(c.pos)
		}
		if s.prev >= 0 {
			if m, ok := b.merges[pairKey(syms[s.prev].id, s.id)]; ok {
				h.push(mergeCand{rank: m.rank, pos: int32(s.prev), newID: m.newID})
			}
		}
		if s.next >= 0 {
			if m, ok := b.merges[pairKey(s.id, syms[s.next].id)]; ok {
				h.push(mergeCand{rank: m.rank, pos: c.pos, newID: m.newID})
			}
		}
	}
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		dst = append(dst, syms[i].id)
	}
	sc.syms, sc.heap = syms, h
	return dst
}

// wordCache memoises BPE results per word. It is sharded to keep lock
// contention low under concurrent encoders, and bounded: a full shard is
// dropped and refilled, which keeps recent words without an LRU's overhead.
type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

const (
	cacheShards      = 32
	cacheShardMax    = 4096 // words per shard; ~130k words in all
	cacheMaxWordSize = 256  // bytes; HF caches words up to 256 too
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed()}
}

func (c *wordCache) shard(w string) *cacheShard {
	return &c.shards[maphash.String(c.seed, w)%cacheShards]
}

func (c *wordCache) get(w string) ([]int, bool) {
	if len(w) > cacheMaxWordSize {
		return nil, false
	}
	s := c.shard(w)
	s.mu.RLock()
	ids, ok := s.m[w]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int) {
	if len(w) > cacheMaxWordSize {
		return
	}
	s := c.shard(w)
	cp := append([]int(nil), ids...)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= cacheShardMax {
		s.m = make(map[string][]int, 256)
	}
	s.m[strings.Clone(w)] = cp
	s.mu.Unlock()
}
