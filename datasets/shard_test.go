package datasets_test

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestEveryShardsAreTheRun: the shards of a Source, taken back in turn
// (shard 0's first, shard 1's first, ...), are the Source's prompts in
// order, whether the prompts are in memory or made on demand, and their
// totals add up to the Source's.
func TestEveryShardsAreTheRun(t *testing.T) {
	d := mustNew(t, "random", randomOpts("", 48, 9, 0.25), qwen3(t))
	const n = 50
	newRand := func() *rand.Rand { return seeded(3) }
	mem := generate(t, d, n, 3)
	stream, ok, err := d.(datasets.Streamer).Stream(n, newRand)
	if err != nil || !ok {
		t.Fatalf("Stream: %v %v", ok, err)
	}
	for name, src := range map[string]*datasets.Source{"memory": datasets.FromPrompts(mem), "on demand": stream} {
		for _, shards := range []int{1, 3, 7} {
			parts := make([][]datasets.Prompt, shards)
			in, out := 0, 0
			for i := range shards {
				part, err := src.Every(i, shards)
				if err != nil {
					t.Fatal(err)
				}
				parts[i] = collect(t, part)
				if part.Len() != len(parts[i]) {
					t.Errorf("%s %d/%d: Len %d, made %d", name, i, shards, part.Len(), len(parts[i]))
				}
				a, b := part.Totals()
				in, out = in+a, out+b
			}
			var union []datasets.Prompt
			for k := 0; len(union) < n; k++ {
				union = append(union, parts[k%shards][k/shards])
			}
			if diff := cmp.Diff(mem, union); diff != "" {
				t.Errorf("%s over %d shards: union differs from the run (-run +union):\n%s", name, shards, diff)
			}
			if a, b := src.Totals(); a != in || b != out {
				t.Errorf("%s over %d shards: totals %d %d, the run's %d %d", name, shards, in, out, a, b)
			}
		}
	}
	if _, err := datasets.FromPrompts(mem).Every(3, 3); err == nil {
		t.Error("Every(3, 3) = nil error")
	}
}
