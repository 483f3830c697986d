package bench

import (
	"slices"
	"sort"
	"time"

	"github.com/servingprobe/servingprobe/prober"
)

// itlStore keeps every inter-token latency of a run in 4 bytes a sample,
// so that exact statistics cost 4 bytes an output token rather than 8
// (plus the float64 copy a summary made of them).
//
// A sample is a word. A word below wideBit is a gap of that many
// nanoseconds carrying one token, whose value in seconds is
// time.Duration(w).Seconds(): exactly what prober's Samples report
// (ITLGap.PerToken divides by 1). Anything else (a gap shared by several
// tokens, whose per-token value is a float division, or a gap of 2^31 ns,
// about 2.1 s, or more) is kept as its float64 in wide, and each of its
// samples is wideBit|index. So every value reads back bit for bit, and the
// float64 side grows by one entry an event of several tokens or a long gap.
//
// Words live in fixed chunks rather than one slice, so that a long run
// never copies (and briefly doubles) its largest array to grow it.
type itlStore struct {
	chunks [][]uint32
	n      int
	wide   []float64
}

const (
	wideBit    = 1 << 31
	chunkShift = 16
	chunkLen   = 1 << chunkShift
)

// decodeITL is a word's value in seconds.
func decodeITL(w uint32, wide []float64) float64 {
	if w < wideBit {
		return time.Duration(w).Seconds()
	}
	return wide[w&^wideBit]
}

func (s *itlStore) len() int { return s.n }

func (s *itlStore) push(w uint32) {
	c := s.n >> chunkShift
	if c == len(s.chunks) {
		s.chunks = append(s.chunks, make([]uint32, chunkLen))
	}
	s.chunks[c][s.n&(chunkLen-1)] = w
	s.n++
}

func (s *itlStore) word(i int) uint32 { return s.chunks[i>>chunkShift][i&(chunkLen-1)] }

// at is sample i's value in seconds.
func (s *itlStore) at(i int) float64 { return decodeITL(s.word(i), s.wide) }

// appendResult appends r's inter-token latencies, each gap expanded into
// its per-token samples as prober's Result.AppendITLs does, and returns
// how many it added and how many of those, the last ones, are the
// answer's (prober.ITLGap.Answer: the answer's gaps end a request's list).
func (s *itlStore) appendResult(r *prober.Result, perChunk bool) (n, answer int) {
	start := s.n
	for g := range r.ITLGaps(perChunk) {
		if g.Answer {
			answer += g.Tokens
		}
		if g.Tokens == 1 && g.Gap < wideBit {
			s.push(uint32(g.Gap))
			continue
		}
		w := wideBit | uint32(len(s.wide))
		s.wide = append(s.wide, g.PerToken())
		for range g.Tokens {
			s.push(w)
		}
	}
	return s.n - start, answer
}

// appendRange appends samples [off, off+n) of src, with the wide values
// they use (one per run of words that shared one in src), so that they
// read back bit for bit.
func (s *itlStore) appendRange(src *itlStore, off, n int) {
	from, to := -1, uint32(0)
	for i := off; i < off+n; i++ {
		w := src.word(i)
		if w >= wideBit {
			if k := int(w &^ wideBit); k != from {
				from, to = k, wideBit|uint32(len(s.wide))
				s.wide = append(s.wide, src.wide[k])
			}
			w = to
		}
		s.push(w)
	}
}

// truncate drops the samples from index n on (the last request's, which
// the run does not keep), with the wide values only they used.
func (s *itlStore) truncate(n int) {
	for i := n; i < s.n; i++ {
		if w := s.word(i); w >= wideBit {
			s.wide = s.wide[:w&^wideBit]
			break // the first wide word of the range is its lowest index
		}
	}
	s.n = n
	// Keep the chunk the next sample goes to (under the sketch, the same
	// chunk serves every request); free any after it.
	keep := min(n>>chunkShift+1, len(s.chunks))
	clear(s.chunks[keep:])
	s.chunks = s.chunks[:keep]
}

// itlRange is one request's samples in the store.
type itlRange struct {
	s      *itlStore
	off, n int
}

// of is the range of a record's samples.
func (s *itlStore) of(r reqRec) itlRange { return itlRange{s, r.itlOff, r.itlLen} }

// answerOf is the range of a record's answer samples: the last of its
// samples (see appendResult).
func (s *itlStore) answerOf(r reqRec) itlRange {
	return itlRange{s, r.itlOff + r.itlLen - r.itlAnswer, r.itlAnswer}
}

// all yields the samples in seconds, in their order (an iter.Seq).
func (g itlRange) all(yield func(float64) bool) {
	for i := range g.n {
		if !yield(g.s.at(g.off + i)) {
			return
		}
	}
}

// values returns the samples as seconds.
func (g itlRange) values() []float64 {
	out := make([]float64, g.n)
	for i := range out {
		out[i] = g.s.at(g.off + i)
	}
	return out
}

// cursor reads the samples of the successful records, in their order,
// one at a time: NumPy's pairwise sum visits its input strictly in order,
// so the summary's order-dependent sums need no copy of the samples.
type cursor struct {
	s         *itlStore
	recs      []reqRec
	ri        int
	off, left int
}

func (s *itlStore) cursor(recs []reqRec) *cursor { return &cursor{s: s, recs: recs} }

// next returns the next sample; its argument, the sample's index, is
// implied by the order of the calls.
func (c *cursor) next(int) float64 {
	for c.left == 0 {
		r := c.recs[c.ri]
		c.ri++
		if r.ok {
			c.off, c.left = r.itlOff, r.itlLen
		}
	}
	v := c.s.at(c.off)
	c.off++
	c.left--
	return v
}

// sortInPlace sorts each chunk's words, which ends the store's use by
// record (the records' ranges no longer hold), and returns the samples in
// sorted order: their count and the value at each rank. Words below
// wideBit sort as their values (Duration.Seconds is monotone); the rank
// of such a value across chunks is found by bisecting the value, counting
// it in each sorted chunk. The wide words, which sort after them, are read
// out as float64 and merged by rank. So the sorted samples are never
// copied, only the wide ones.
func (s *itlStore) sortInPlace() (int, func(int) float64) {
	if s.n == 0 {
		return 0, nil
	}
	narrow := make([][]uint32, 0, len(s.chunks))
	var b []float64
	na := 0
	for c, chunk := range s.chunks {
		used := chunk[:min(chunkLen, s.n-c*chunkLen)]
		slices.Sort(used)
		k := sort.Search(len(used), func(i int) bool { return used[i] >= wideBit })
		narrow = append(narrow, used[:k])
		na += k
		for _, w := range used[k:] {
			b = append(b, s.wide[w&^wideBit])
		}
	}
	slices.Sort(b)
	// narrowAt is the narrow value of rank i: the least v with more than
	// i narrow words <= v.
	narrowAt := func(i int) float64 {
		v := sort.Search(wideBit, func(v int) bool {
			n := 0
			for _, ch := range narrow {
				n += sort.Search(len(ch), func(j int) bool { return ch[j] > uint32(v) })
			}
			return n > i
		})
		return time.Duration(v).Seconds()
	}
	if len(narrow) == 1 {
		ch := narrow[0]
		narrowAt = func(i int) float64 { return time.Duration(ch[i]).Seconds() }
	}
	return s.n, func(r int) float64 { return kthOfTwo(na, narrowAt, b, r) }
}

// kthOfTwo is the value of rank r (0-based) in the merge of two sorted
// sequences: na values, the i-th being a(i), and b.
func kthOfTwo(na int, a func(int) float64, b []float64, r int) float64 {
	if len(b) == 0 {
		return a(r)
	}
	if na == 0 {
		return b[r]
	}
	// i elements from a and r+1-i from b make the first r+1 of the merge;
	// find the smallest i whose next element of a is not needed before b's.
	lo, hi := max(0, r+1-len(b)), min(r+1, na)
	i := lo + sort.Search(hi-lo, func(k int) bool {
		i := lo + k
		j := r + 1 - i
		return j == 0 || i == na || b[j-1] <= a(i)
	})
	j := r + 1 - i
	switch {
	case i == 0:
		return b[j-1]
	case j == 0:
		return a(i - 1)
	default:
		return max(a(i-1), b[j-1])
	}
}
