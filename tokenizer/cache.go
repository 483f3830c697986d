package tokenizer

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
)

// wordCache memoises BPE results per word. It is sharded to keep lock
// contention low under concurrent encoders, and bounded in bytes: a full
// shard is emptied and refilled, which keeps recent words without an LRU's
// overhead. Entries sit in flat byte slices rather than a map[string][]int
// (about 100 bytes a word): a full cache of some 190k words takes about
// 6 MB, holds no pointers for the GC to scan, and allocates nothing once
// warm. It is that large because random-ids prompts and random output
// text are made of tens of thousands of distinct words (Qwen3's exact
// prompts draw on some 55k): a cache of 48k words emptied its shards over
// and over, and every word ran the merge loop again
// (BenchmarkEncodeQwen3ManyWords: 150 µs a 128-word text with 48k words,
// 22 µs with 190k). A shard starts small, so a workload of few words
// pays nothing for the bound.
type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

const (
	cacheShards      = 32
	cacheShardBytes  = 128 << 10 // entry bytes per shard, at most
	cacheShardSlots  = 8192      // slots per shard, at most; a power of two
	cacheMinSlots    = 128       // a shard starts small: most workloads have few distinct words
	cacheMaxWordSize = 256       // bytes; HF caches words up to 256 too
)

// A slot packs an entry's offset in data with its word length, id count
// and 14 bits of the word's hash; 0 marks an empty slot (words are never
// empty). A word of n bytes has at most n ids, so 9 bits hold both.
const (
	slotLenBits = 9
	slotTagBits = 14
	slotTagMask = 1<<slotTagBits - 1
)

type cacheShard struct {
	mu    sync.RWMutex
	data  []byte   // per entry: the word, then its ids as little-endian uint32
	slots []uint64 // off<<32 | tag<<18 | ids<<9 | len(word)
	n     int
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed()}
}

// Bits of a word's hash: the low ones pick the shard, 5 up the tag, and the
// high half the slot.
func (c *wordCache) shard(h uint64) *cacheShard { return &c.shards[h%cacheShards] }
func slotTag(h uint64) uint64                   { return h >> 5 & slotTagMask }

// find returns the slot holding w, or the empty slot where it would go.
func (s *cacheShard) find(h uint64, w string) (int, bool) {
	tag, mask := slotTag(h), len(s.slots)-1
	for i := int(h>>32) & mask; ; i = (i + 1) & mask {
		e := s.slots[i]
		if e == 0 {
			return i, false
		}
		if e>>(2*slotLenBits)&slotTagMask == tag && int(e&(1<<slotLenBits-1)) == len(w) {
			off := int(e >> 32)
			if string(s.data[off:off+len(w)]) == w {
				return i, true
			}
		}
	}
}

// get appends the cached ids of w to dst.
func (c *wordCache) get(dst []int, w string) ([]int, bool) {
	if len(w) > cacheMaxWordSize {
		return dst, false
	}
	h := maphash.String(c.seed, w)
	s := c.shard(h)
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, ok := s.find0(h, w)
	if !ok {
		return dst, false
	}
	e := s.slots[i]
	p := int(e>>32) + len(w)
	for range int(e >> slotLenBits & (1<<slotLenBits - 1)) {
		dst = append(dst, int(binary.LittleEndian.Uint32(s.data[p:])))
		p += 4
	}
	return dst, true
}

func (c *wordCache) put(w string, ids []int) {
	if len(w) > cacheMaxWordSize || len(ids) >= 1<<slotLenBits {
		return
	}
	h := maphash.String(c.seed, w)
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.find0(h, w); ok {
		return // another encoder got here first
	}
	size := len(w) + 4*len(ids)
	if len(s.data)+size > cacheShardBytes || 4*(s.n+1) > 3*cacheShardSlots {
		s.data = s.data[:0] // full: start over, keeping the memory
		clear(s.slots)
		s.n = 0
	}
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow(c.seed)
	}
	if len(s.data)+size > cap(s.data) {
		want := min(max(2*cap(s.data), 4<<10), cacheShardBytes)
		s.data = slices.Grow(s.data, max(want-len(s.data), size))
	}
	i, _ := s.find(h, w)
	off := len(s.data)
	s.data = append(s.data, w...)
	for _, id := range ids {
		s.data = binary.LittleEndian.AppendUint32(s.data, uint32(id))
	}
	s.slots[i] = uint64(off)<<32 | slotTag(h)<<(2*slotLenBits) | uint64(len(ids))<<slotLenBits | uint64(len(w))
	s.n++
}

// find0 is find on a shard that may have no slots yet.
func (s *cacheShard) find0(h uint64, w string) (int, bool) {
	if s.slots == nil {
		return 0, false
	}
	return s.find(h, w)
}

// grow doubles the slots, rehashing each word from data.
func (s *cacheShard) grow(seed maphash.Seed) {
	old := s.slots
	s.slots = make([]uint64, max(2*len(old), cacheMinSlots))
	mask := len(s.slots) - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		off, n := int(e>>32), int(e&(1<<slotLenBits-1))
		i := int(maphash.Bytes(seed, s.data[off:off+n])>>32) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = e
	}
}
