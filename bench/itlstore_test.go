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
	for _, perChunk := range []bool{false, true} {
		var s itlStore
		var want []float64
		for i := range results {
			off := s.len()
			n := s.appendResult(&results[i], perChunk)
			if got := len(results[i].AppendITLs(nil, perChunk)); n != got {
				t.Fatalf("request %d: appended %d samples, AppendITLs gives %d", i, n, got)
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

// TestITLSeqStatsMatchFloat: the store's statistics, percentiles at every
// rank included, are bit for bit those of the float64 list, with and
// without wide values.
func TestITLSeqStatsMatchFloat(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed uint64
		only bool // one-token gaps under 2^31 ns only: no wide value
	}{{"mixed", 3, false}, {"narrow", 4, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			results := randomResults(rng, 2000)
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
			var want []float64
			type span struct{ off, n int }
			var spans []span
			for i := range results {
				off := s.len()
				spans = append(spans, span{off, s.appendResult(&results[i], false)})
				want = results[i].AppendITLs(want, false)
			}
			if tc.only != (len(s.wide) == 0) {
				t.Fatalf("%d wide values", len(s.wide))
			}
			q := s.gather(len(want), func(yield func(off, n int) bool) {
				for _, sp := range spans {
					if !yield(sp.off, sp.n) {
						return
					}
				}
			})
			got, n, sorted := q.stats()
			if wantSt := ComputeStats(want); got != wantSt {
				t.Errorf("stats\n got %+v\nwant %+v", got, wantSt)
			}
			slices.Sort(want)
			if n != len(want) {
				t.Fatalf("%d sorted values, want %d", n, len(want))
			}
			for r, v := range want {
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

func BenchmarkITLSeqStats(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 0))
	var s itlStore
	for range 1 << 20 {
		s.push(uint32(rng.Int64N(int64(50 * time.Millisecond))))
	}
	b.ReportAllocs()
	for b.Loop() {
		q := s.gather(s.len(), func(yield func(off, n int) bool) { yield(0, s.len()) })
		q.stats()
	}
}
