package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/prober"
)

// storeResult is a success whose events carry the given gaps and token
// counts (the first event is the first token, and no gap).
func storeResult(gaps []time.Duration, tokens []int) prober.Result {
	t := time.Unix(1_700_000_000, 0)
	r := prober.Result{Outcome: prober.OutcomeSuccess, Events: []prober.Event{{At: t, Tokens: 1}}}
	for i, g := range gaps {
		t = t.Add(g)
		r.Events = append(r.Events, prober.Event{At: t, Tokens: tokens[i]})
	}
	return r
}

// randomResults mixes what the store encodes differently: one-token gaps,
// gaps shared by several tokens, zero-token events, gaps of 2^31 ns and
// more, and zero gaps.
func randomResults(rng *rand.Rand, n int) []prober.Result {
	out := make([]prober.Result, n)
	for i := range out {
		k := rng.IntN(40)
		gaps, tokens := make([]time.Duration, k), make([]int, k)
		for j := range gaps {
			switch x := rng.IntN(100); {
			case x < 2:
				gaps[j] = wideBit + time.Duration(rng.Int64N(int64(10*time.Second)))
			case x < 4:
				gaps[j] = 0
			default:
				gaps[j] = time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
			}
			tokens[j] = 1
			switch x := rng.IntN(100); {
			case x < 10:
				tokens[j] = 2 + rng.IntN(6)
			case x < 13:
				tokens[j] = 0
			}
		}
		out[i] = storeResult(gaps, tokens)
	}
	return out
}

// TestITLStoreExact: every sample reads back bit for bit as the float64
// prober's AppendITLs gives, per token and per chunk, across chunk
// boundaries, and a dropped request takes its wide values with it.
func TestITLStoreExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	results := randomResults(rng, 6000) // about 120,000 samples: several chunks
	for i := range results {
		// A third reasoned first: their answer's samples are the last.
		if r := &results[i]; i%3 == 0 {
			r.ReasoningTokensSource = prober.TokenSourceCounted
			for j := range rng.IntN(len(r.Events) + 1) {
				r.Events[j].Reasoning = true
			}
		}
	}
	for _, perChunk := range []bool{false, true} {
		var s itlStore
		var want []float64
		for i := range results {
			off := s.len()
			n, na := s.appendResult(&results[i], perChunk)
			if got := len(results[i].AppendITLs(nil, perChunk)); n != got {
				t.Fatalf("request %d: appended %d samples, AppendITLs gives %d", i, n, got)
			}
			wantAnswer := results[i].AppendAnswerITLs(nil, perChunk)
			gotAnswer := s.answerOf(reqRec{itlOff: off, itlLen: n, itlAnswer: na}).values()
			if !slices.EqualFunc(gotAnswer, wantAnswer, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
				t.Fatalf("request %d: answer samples %v, AppendAnswerITLs gives %v", i, gotAnswer, wantAnswer)
			}
			// Copied out, they read back bit for bit.
			var c itlStore
			c.appendRange(&s, off+n-na, na)
			if got := (itlRange{&c, 0, c.len()}).values(); !slices.EqualFunc(got, wantAnswer, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
				t.Fatalf("request %d: copied answer samples %v, want %v", i, got, wantAnswer)
			}
			if i%7 == 3 { // dropped, as a failure is
				wide := len(s.wide)
				s.truncate(off)
				if s.len() != off {
					t.Fatalf("truncate(%d) left %d samples", off, s.len())
				}
				if len(s.wide) > wide {
					t.Fatalf("truncate grew wide")
				}
				continue
			}
			want = results[i].AppendITLs(want, perChunk)
		}
		if s.len() != len(want) {
			t.Fatalf("perChunk %v: %d samples, want %d", perChunk, s.len(), len(want))
		}
		if len(s.chunks) < 2 {
			t.Fatalf("the test needs several chunks, got %d", len(s.chunks))
		}
		for i, v := range want {
			if got := s.at(i); math.Float64bits(got) != math.Float64bits(v) {
				t.Fatalf("perChunk %v: sample %d = %v, want %v", perChunk, i, got, v)
			}
		}
		// Wide values are only those of kept requests: every one is used.
		used := make([]bool, len(s.wide))
		for i := range s.len() {
			if w := s.word(i); w >= wideBit {
				used[w&^wideBit] = true
			}
		}
		if i := slices.Index(used, false); i >= 0 {
			t.Errorf("perChunk %v: wide value %d of %d is used by no sample", perChunk, i, len(used))
		}
	}
}

// TestITLStoreStatsMatchFloat: the store's statistics, read in record
// order by the cursor and then sorted in place, percentiles at every rank
// included, are bit for bit those of the float64 list, with and without
// wide values, in one chunk and across several.
func TestITLStoreStatsMatchFloat(t *testing.T) {
	for _, tc := range []struct {
		name     string
		seed     uint64
		requests int
		only     bool // one-token gaps under 2^31 ns only: no wide value
	}{{"mixed", 3, 8000, false}, {"narrow", 4, 8000, true}, {"one chunk", 5, 500, false}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			results := randomResults(rng, tc.requests)
			if tc.only {
				for i := range results {
					for j := range results[i].Events {
						results[i].Events[j].Tokens = 1
					}
					for j := 1; j < len(results[i].Events); j++ {
						if results[i].Events[j].At.Sub(results[i].Events[j-1].At) >= wideBit {
							results[i].Events[j].At = results[i].Events[j-1].At.Add(time.Millisecond)
						}
					}
				}
			}
			var s itlStore
			var recs []reqRec
			// Stored in an order of their own, read in record order: the
			// records are reversed, and every third is a failure.
			for i := range results {
				off := s.len()
				n, _ := s.appendResult(&results[i], false)
				recs = append(recs, reqRec{ok: i%3 != 0, itlOff: off, itlLen: n})
			}
			slices.Reverse(recs)
			var want []float64
			for _, r := range recs {
				if r.ok {
					want = append(want, s.of(r).values()...)
				}
			}
			if tc.only != (len(s.wide) == 0) {
				t.Fatalf("%d wide values", len(s.wide))
			}
			if tc.requests > 1000 && len(s.chunks) < 2 {
				t.Fatalf("%d chunks, want several", len(s.chunks))
			}
			wantSt := ComputeStats(want)
			m := meanAt(len(want), s.cursor(recs).next)
			sd := stdAround(len(want), m, s.cursor(recs).next)
			if m*1000 != wantSt.Mean || sd*1000 != wantSt.Std {
				t.Errorf("mean, std %v, %v; want %v, %v", m*1000, sd*1000, wantSt.Mean, wantSt.Std)
			}
			// The failures' samples are in the store but not in the
			// statistics: drop them as the accumulator does (it
			// truncates them at once) before sorting.
			var kept itlStore
			for _, r := range recs {
				if r.ok {
					for k := range r.itlLen {
						w := s.word(r.itlOff + k)
						if w >= wideBit {
							kept.wide = append(kept.wide, s.wide[w&^wideBit])
							w = wideBit | uint32(len(kept.wide)-1)
						}
						kept.push(w)
					}
				}
			}
			n, sorted := kept.sortInPlace()
			slices.Sort(want)
			if n != len(want) {
				t.Fatalf("%d sorted values, want %d", n, len(want))
			}
			for r, v := range want {
				if r%97 != 0 && r > 50 && r < n-50 {
					continue // every rank near the ends, a sample of the rest: each costs a bisection
				}
				if g := sorted(r); math.Float64bits(g) != math.Float64bits(v) {
					t.Fatalf("rank %d: %v, want %v", r, g, v)
				}
			}
		})
	}
}

// TestDurationSecondsMonotone: sorting words as integers sorts their values
// only because Duration.Seconds never decreases; check it where it adds
// the whole seconds to the fraction.
func TestDurationSecondsMonotone(t *testing.T) {
	for _, s := range []time.Duration{0, time.Second, 2 * time.Second} {
		for d := max(s-1000, 0); d < s+1000; d++ {
			if d.Seconds() > (d + 1).Seconds() {
				t.Fatalf("%d ns: %v > %v", d, d.Seconds(), (d + 1).Seconds())
			}
		}
	}
}

func BenchmarkITLStoreStats(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 0))
	var s itlStore
	for range 1 << 20 {
		s.push(uint32(rng.Int64N(int64(50 * time.Millisecond))))
	}
	recs := []reqRec{{ok: true, itlLen: s.len()}}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c := s
		c.chunks = make([][]uint32, len(s.chunks))
		for i := range c.chunks {
			c.chunks[i] = slices.Clone(s.chunks[i])
		}
		b.StartTimer()
		m := meanAt(c.len(), c.cursor(recs).next)
		stdAround(c.len(), m, c.cursor(recs).next)
		n, sorted := c.sortInPlace()
		for _, p := range []float64{50, 90, 95, 99, 100} {
			percentileAt(n, sorted, p)
		}
	}
}
