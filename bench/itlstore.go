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
// how many it added.
func (s *itlStore) appendResult(r *prober.Result, perChunk bool) int {
	start := s.n
	for g := range r.ITLGaps(perChunk) {
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
	return s.n - start
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
	// Keep the chunk in use; free any after it.
	keep := (n + chunkLen - 1) >> chunkShift
	clear(s.chunks[keep:])
	s.chunks = s.chunks[:keep]
}

// values returns samples [off, off+n) as seconds.
func (s *itlStore) values(off, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = s.at(off + i)
	}
	return out
}

// itlSeq is a copy of a run's samples in the order the summary reads them
// (dispatch order, for NumPy's order-dependent sums), sharing the store's
// wide values. Its stats sort it in place.
type itlSeq struct {
	words []uint32
	wide  []float64
}

// gather copies the samples of the given ranges, in order, into one exactly
// sized slice: the summary's only per-token allocation.
func (s *itlStore) gather(n int, ranges func(yield func(off, n int) bool)) itlSeq {
	q := itlSeq{words: make([]uint32, 0, n), wide: s.wide}
	for off, k := range ranges {
		for k > 0 {
			c, i := off>>chunkShift, off&(chunkLen-1)
			m := min(k, chunkLen-i)
			q.words = append(q.words, s.chunks[c][i:i+m]...)
			off, k = off+m, k-m
		}
	}
	return q
}

func (q itlSeq) at(i int) float64 { return decodeITL(q.words[i], q.wide) }

// stats returns the samples' Stats and their sorted values (n and the
// value at each rank). The mean and std are taken first, in the given
// order; then the words are sorted in place. Words below wideBit sort as
// their values (Duration.Seconds is monotone), and the wide ones, which
// sort after them by index, are sorted apart as float64 and merged with
// them by rank, so the sorted values are never materialised as float64.
func (q itlSeq) stats() (Stats, int, func(int) float64) {
	n := len(q.words)
	if n == 0 {
		return Stats{}, 0, nil
	}
	st := Stats{Mean: meanAt(n, q.at) * 1000, Std: stdAt(n, q.at) * 1000}
	slices.Sort(q.words)
	narrow := sort.Search(n, func(i int) bool { return q.words[i] >= wideBit })
	a := q.words[:narrow]
	b := make([]float64, n-narrow)
	for i, w := range q.words[narrow:] {
		b[i] = q.wide[w&^wideBit]
	}
	slices.Sort(b)
	sorted := func(r int) float64 { return kthOfTwo(a, b, r) }
	st.Median = medianAt(n, sorted) * 1000
	st.P90 = percentileAt(n, sorted, 90) * 1000
	st.P95 = percentileAt(n, sorted, 95) * 1000
	st.P99 = percentileAt(n, sorted, 99) * 1000
	st.Max = sorted(n-1) * 1000
	return st, n, sorted
}

// kthOfTwo is the value of rank r (0-based) in the merge of a (words below
// wideBit, sorted) and b (sorted seconds).
func kthOfTwo(a []uint32, b []float64, r int) float64 {
	if len(b) == 0 {
		return time.Duration(a[r]).Seconds()
	}
	if len(a) == 0 {
		return b[r]
	}
	av := func(i int) float64 { return time.Duration(a[i]).Seconds() }
	// i elements from a and r+1-i from b make the first r+1 of the merge;
	// find the smallest i whose next element of a is not needed before b's.
	lo, hi := max(0, r+1-len(b)), min(r+1, len(a))
	i := lo + sort.Search(hi-lo, func(k int) bool {
		i := lo + k
		j := r + 1 - i
		return j == 0 || i == len(a) || b[j-1] <= av(i)
	})
	j := r + 1 - i
	switch {
	case i == 0:
		return b[j-1]
	case j == 0:
		return av(i - 1)
	default:
		return max(av(i-1), b[j-1])
	}
}
