package tokenizer

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"strings"
)

// The vocabulary and merges of a 150k-token model are most of a loaded
// tokenizer. As Go maps (map[string]int, map[uint64]merge) they took about
// 21 MB of heap, largely string headers and map buckets the GC must scan.
// These tables keep the same data in a handful of pointer-free slices:
// the GC skips them, and each entry costs 4 to 12 bytes.
//
// Both tables are open-addressing hash tables with linear probing. A slot is
// a uint32 holding a value+1 in its low valBits bits (0 marks an empty slot)
// and bits of the key's hash above, so a probe rejects almost every
// non-matching slot without touching the keys.

// slotsFor returns the slot count for n keys: a load factor of at most 3/4
// keeps probes short, and no power-of-two rounding wastes up to half.
func slotsFor(n int) int { return n + n/3 + 1 }

// slotIndex maps the high half of a hash onto [0, size) without a division.
func slotIndex(h uint64, size int) int { return int((h >> 32) * uint64(size) >> 32) }

// valueBits is the number of bits a slot needs for values+1 up to max.
func valueBits(max int) uint { return uint(bits.Len(uint(max))) }

// vocabTable is the model vocabulary: token <-> id.
type vocabTable struct {
	arena   string   // every token, in id order
	offs    []uint32 // id's token is arena[offs[id]:offs[id+1]]; empty for unused ids
	slots   []uint32 // id+1 | hash tag
	valBits uint
	seed    maphash.Seed
	n       int // distinct tokens
	// extra holds tokens the arena cannot: the empty token, and a second
	// token for an id already taken. Both only occur in malformed files.
	extra map[string]int32
}

// token returns the token of id; unused ids have none.
func (v *vocabTable) token(id int) (string, bool) {
	if id < 0 || id >= len(v.offs)-1 {
		return "", false
	}
	s := v.arena[v.offs[id]:v.offs[id+1]]
	return s, s != ""
}

func (v *vocabTable) tagMask() uint32 { return ^uint32(0) << v.valBits }

// id returns the id of tok.
func (v *vocabTable) id(tok string) (int, bool) { return lookup(v, tok, maphash.String(v.seed, tok)) }

// idBytes is id for a token held in a byte slice, without converting it.
func (v *vocabTable) idBytes(tok []byte) (int, bool) {
	return lookup(v, tok, maphash.Bytes(v.seed, tok))
}

// lookup finds tok, whose hash is h, for id and idBytes.
func lookup[T string | []byte](v *vocabTable, tok T, h uint64) (int, bool) {
	tag, mask := uint32(h)&v.tagMask(), uint32(1)<<v.valBits-1
	for i := slotIndex(h, len(v.slots)); ; {
		s := v.slots[i]
		if s == 0 {
			break
		}
		if s&^mask == tag {
			id := s&mask - 1
			if v.arena[v.offs[id]:v.offs[id+1]] == string(tok) {
				return int(id), true
			}
		}
		if i++; i == len(v.slots) {
			i = 0
		}
	}
	if v.extra != nil {
		id, ok := v.extra[string(tok)]
		return int(id), ok
	}
	return 0, false
}

// all calls f for every token.
func (v *vocabTable) all(f func(tok string, id int)) {
	for id := 0; id < len(v.offs)-1; id++ {
		if tok, ok := v.token(id); ok {
			f(tok, id)
		}
	}
	for tok, id := range v.extra {
		f(tok, int(id))
	}
}

// vocabBuilder collects the vocabulary in file order. Keys go into one byte
// slice rather than one string each, so loading does not allocate per token.
type vocabBuilder struct {
	keys []byte
	ents []vocabEnt
}

type vocabEnt struct {
	off, end uint32 // key is keys[off:end]
	id       int32  // -1 once a later duplicate key replaces it
}

func (b *vocabBuilder) add(key []byte, id int) error {
	if id < 0 {
		return fmt.Errorf("vocab: negative id %d", id)
	}
	if id >= math.MaxInt32-1 {
		return fmt.Errorf("vocab: id %d out of range", id)
	}
	off := len(b.keys)
	b.keys = append(b.keys, key...)
	if len(b.keys) > math.MaxUint32 {
		return fmt.Errorf("vocab: too large")
	}
	b.ents = append(b.ents, vocabEnt{off: uint32(off), end: uint32(len(b.keys)), id: int32(id)})
	return nil
}

func (b *vocabBuilder) key(i int32) []byte { return b.keys[b.ents[i].off:b.ents[i].end] }

// build resolves duplicates as decoding into map[string]int did (a later
// key wins) and lays the tokens out by id.
func (b *vocabBuilder) build() *vocabTable {
	maxID := -1
	for _, e := range b.ents {
		maxID = max(maxID, int(e.id))
	}
	v := &vocabTable{seed: maphash.MakeSeed(), valBits: valueBits(max(len(b.ents), maxID+1))}

	// Pass 1: a table of entry indices finds duplicate keys.
	v.slots = make([]uint32, slotsFor(len(b.ents)))
	mask := uint32(1)<<v.valBits - 1
	for i := range b.ents {
		key := b.key(int32(i))
		h := maphash.Bytes(v.seed, key)
		tag := uint32(h) & v.tagMask()
		for j := slotIndex(h, len(v.slots)); ; {
			s := v.slots[j]
			if s == 0 {
				v.slots[j] = uint32(i+1) | tag
				break
			}
			if prev := int32(s&mask - 1); s&^mask == tag && string(b.key(prev)) == string(key) {
				b.ents[prev].id = -1
				v.slots[j] = uint32(i+1) | tag
				break
			}
			if j++; j == len(v.slots) {
				j = 0
			}
		}
	}

	// Pass 2: the first live key of each id goes into the arena.
	byID := make([]int32, maxID+1)
	for i := range byID {
		byID[i] = -1
	}
	size := 0
	for i, e := range b.ents {
		if e.id < 0 {
			continue
		}
		v.n++
		if e.off == e.end || byID[e.id] >= 0 {
			if v.extra == nil {
				v.extra = map[string]int32{}
			}
			v.extra[string(b.key(int32(i)))] = e.id
			continue
		}
		byID[e.id] = int32(i)
		size += int(e.end - e.off)
	}
	var arena strings.Builder
	arena.Grow(size)
	v.offs = make([]uint32, maxID+2)
	for id, i := range byID {
		if i >= 0 {
			arena.Write(b.key(i))
		}
		v.offs[id+1] = uint32(arena.Len())
	}
	v.arena = arena.String()

	// Pass 3: the lookup table proper, of ids.
	clear(v.slots)
	for id, i := range byID {
		if i < 0 {
			continue
		}
		h := maphash.Bytes(v.seed, b.key(i))
		j := slotIndex(h, len(v.slots))
		for v.slots[j] != 0 {
			if j++; j == len(v.slots) {
				j = 0
			}
		}
		v.slots[j] = uint32(id+1) | uint32(h)&v.tagMask()
	}
	return v
}

// mergeTable maps a pair of adjacent ids to its merge: rank and merged id.
// Ranks are indices into pairs, in file order without duplicates, so they
// order merges as the file's ranks do.
type mergeTable struct {
	slots   []uint32 // rank+1 | hash tag
	valBits uint
	pairs   []uint64 // rank -> left<<32 | right
	// newIDs maps rank to merged id. It is nil when merged ids rise with
	// rank (GPT-2, Llama 3, Qwen): then the merged id serves as the rank,
	// and pairs is indexed by it.
	newIDs []int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// mix64 is the splitmix64 finalizer: pair keys are small, dense integers
// and need their bits spread before they pick a slot.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// get returns the merge of (left, right).
func (m *mergeTable) get(left, right int32) (rank, newID int32, ok bool) {
	k := pairKey(left, right)
	h := mix64(k)
	mask := uint32(1)<<m.valBits - 1
	tag := uint32(h) &^ mask
	for i := slotIndex(h, len(m.slots)); ; {
		s := m.slots[i]
		if s == 0 {
			return 0, 0, false
		}
		if s&^mask == tag {
			r := int32(s&mask - 1)
			if m.pairs[r] == k {
				if m.newIDs == nil {
					return r, r, true
				}
				return r, m.newIDs[r], true
			}
		}
		if i++; i == len(m.slots) {
			i = 0
		}
	}
}

// buildMerges keeps the first of duplicate pairs, as HF does. pairs and
// newIDs are in file order and are overwritten; maxID is the largest
// vocabulary id.
func buildMerges(pairs []uint64, newIDs []int32, maxID int) *mergeTable {
	m := &mergeTable{valBits: valueBits(max(len(pairs), maxID+1))}
	m.slots = make([]uint32, slotsFor(len(pairs)))
	mask := uint32(1)<<m.valBits - 1
	kept := 0
	rising := true
	for r, k := range pairs {
		h := mix64(k)
		tag := uint32(h) &^ mask
		j, dup := slotIndex(h, len(m.slots)), false
		for s := m.slots[j]; s != 0; s = m.slots[j] {
			if s&^mask == tag && pairs[s&mask-1] == k {
				dup = true
				break
			}
			if j++; j == len(m.slots) {
				j = 0
			}
		}
		if dup {
			continue
		}
		// Compacting in place is safe: kept <= r.
		pairs[kept], newIDs[kept] = k, newIDs[r]
		m.slots[j] = uint32(kept+1) | tag
		rising = rising && (kept == 0 || newIDs[kept] > newIDs[kept-1])
		kept++
	}
	// By merged id only if that is smaller: a file may merge into few of its ids.
	if !rising || 8*(maxID+1) > 12*kept {
		m.pairs, m.newIDs = slices.Clone(pairs[:kept]), slices.Clone(newIDs[:kept])
		return m
	}
	// Rising ids mean newIDs[r] >= r, so moving each pair to its merged id,
	// from the last down, never overwrites one still to be moved. Unused
	// ids keep stale pairs that no slot refers to.
	if c := cap(pairs); c > maxID && c <= (maxID+1)*9/8 {
		m.pairs = pairs[:maxID+1]
	} else {
		m.pairs = make([]uint64, maxID+1)
	}
	for r := kept - 1; r >= 0; r-- {
		m.pairs[newIDs[r]] = pairs[r]
	}
	for j, s := range m.slots {
		if s != 0 {
			m.slots[j] = uint32(newIDs[s&mask-1]+1) | s&^mask
		}
	}
	return m
}
