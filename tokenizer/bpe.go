package tokenizer

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe is HF's BPE model. Words arrive as raw text; with byteLevel each byte
// is first mapped to its GPT-2 alphabet symbol.
type bpe struct {
	vocab        *vocabTable
	merges       *mergeTable
	byteLevel    bool
	byteIDs      [256]int32 // byte-level: id of each byte's symbol, -1 if absent
	byteFallback bool
	byteTokenIDs [256]int32 // <0xNN> ids for byte fallback, -1 if absent
	unk          int32      // -1 without unk_token
	fuseUnk      bool
	ignoreMerges bool
	cache        *wordCache
}

func newBPE(m *modelJSON, byteLevel bool) (*bpe, error) {
	if m.Type != "" && m.Type != "BPE" {
		return nil, unsupported("model type %q", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, unsupported("BPE dropout %v", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, unsupported("BPE continuing_subword_prefix %q", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, unsupported("BPE end_of_word_suffix %q", *m.EndOfWordSuffix)
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
	if m.UnkToken != nil {
		id, ok := vocab.id(*m.UnkToken)
		if !ok {
			return nil, fmt.Errorf("unk_token %q not in vocab", *m.UnkToken)
		}
		b.unk = int32(id)
	}
	for i := range 256 {
		b.byteIDs[i], b.byteTokenIDs[i] = -1, -1
		if id, ok := vocab.id(string(byteToRune[i])); ok {
			b.byteIDs[i] = int32(id)
		}
		if id, ok := vocab.id(fmt.Sprintf("<0x%02X>", i)); ok {
			b.byteTokenIDs[i] = int32(id)
		}
	}
	if b.merges, err = parseMerges(m.Merges, vocab); err != nil {
		return nil, err
	}
	return b, nil
}

// encodeWord appends the ids of one pre-tokenized word.
func (b *bpe) encodeWord(dst []int, w string) []int {
	if w == "" {
		return dst
	}
	if out, ok := b.cache.get(dst, w); ok {
		return out
	}
	start := len(dst)
	dst = b.merge(dst, w)
	b.cache.put(w, dst[start:])
	return dst
}

// symbol is one node of the doubly linked list the merge loop works on.
type symbol struct {
	id         int32
	prev, next int32
	dead       bool
}

func (b *bpe) initialSymbols(syms []symbol, w string) []symbol {
	add := func(id int32) {
		n := int32(len(syms))
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1})
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
		if id, ok := b.vocab.id(ch); ok {
			add(int32(id))
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
		if id, ok := b.vocab.id(key); ok {
			return append(dst, id)
		}
	}
	syms := b.initialSymbols(sc.syms[:0], w)
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if rank, id, ok := b.merges.get(syms[i].id, syms[i+1].id); ok {
			h.push(mergeCand{rank: rank, pos: int32(i), newID: id})
		}
	}
	for len(h) > 0 {
		c := h.pop()
		s := &syms[c.pos]
		if s.dead || s.next < 0 {
			continue
		}
		right := &syms[s.next]
		if _, id, ok := b.merges.get(s.id, right.id); !ok || id != c.newID {
			continue // stale: a neighbour changed since this was pushed
		}
		s.id = c.newID
		right.dead = true
		s.next = right.next
		if s.next >= 0 {
			syms[s.next].prev = c.pos
		}
		if s.prev >= 0 {
			if rank, id, ok := b.merges.get(syms[s.prev].id, s.id); ok {
				h.push(mergeCand{rank: rank, pos: s.prev, newID: id})
			}
		}
		if s.next >= 0 {
			if rank, id, ok := b.merges.get(s.id, syms[s.next].id); ok {
				h.push(mergeCand{rank: rank, pos: c.pos, newID: id})
			}
		}
	}
	for i := int32(0); i >= 0 && int(i) < len(syms); i = syms[i].next {
		dst = append(dst, int(syms[i].id))
	}
	sc.syms, sc.heap = syms, h
	return dst
}
