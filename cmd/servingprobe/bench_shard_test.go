package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/report"
	"github.com/servingprobe/servingprobe/simulator"
)

// readSummary reads the last record of path back.
func readSummary(t *testing.T, path string) *bench.Summary {
	t.Helper()
	runs, err := report.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return runs[len(runs)-1].Summary
}

// TestBenchShardsMergeToOneRun runs one bench in one process, then the
// same flags as three processes (--shard 0/3, 1/3, 2/3) started together
// by --start-at, and merges them: the same prompts (input totals and
// every request's input length, in order), the same completed and output
// totals, and TTFT and ITL statistics that are exactly those of the
// shards' requests.
func TestBenchShardsMergeToOneRun(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.TTFTJitter, cfg.ITLJitter, cfg.ITLPerRunningRequest, cfg.PrefillPerToken = 300*time.Millisecond, 250*time.Millisecond, 0, 0, 0, 0
	url := startSimulator(t, cfg)
	dir := t.TempDir()
	args := func(out string, extra ...string) []string {
		return append([]string{"bench", "--backend", "sglang", "--base-url", url,
			"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
			"--random-input-len", "64", "--random-output-len", "4", "--random-range-ratio", "0.5",
			"--num-prompts", "45", "--request-rate", "30", "--max-concurrency", "12", "--seed", "7",
			"--output-details", "--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10"}, extra...)
	}
	single := filepath.Join(dir, "single.jsonl")
	if code, stdout, stderr := runCLI(t, args(single)...); code != 0 {
		t.Fatalf("bench exited %d\n%s\n%s", code, stdout, stderr)
	}

	// A lead long enough for three processes' preparation under the
	// race detector on a loaded machine; a shard that is late anyway is
	// reported as late (its offset is recorded), never hidden, and the
	// merge's latencies do not depend on it.
	start := time.Now().Add(10 * time.Second).UTC().Format(time.RFC3339Nano)
	startFile := filepath.Join(dir, "start")
	if err := os.WriteFile(startFile, []byte(start+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shards := make([]string, 3)
	var wg sync.WaitGroup
	for i := range shards {
		shards[i] = filepath.Join(dir, "shard"+string(rune('0'+i))+".jsonl")
		at := start
		if i == 1 {
			at = startFile // the time announced in a file, as a ConfigMap mounts it
		}
		wg.Go(func() {
			code, stdout, stderr := runCLI(t, args(shards[i], "--shard", string(rune('0'+i))+"/3", "--start-at", at)...)
			if code != 0 {
				t.Errorf("shard %d exited %d\n%s\n%s", i, code, stdout, stderr)
			}
			if !strings.Contains(stdout, "Shard:") || !strings.Contains(stdout, "Start offset (s):") {
				t.Errorf("shard %d's table lacks its shard rows:\n%s", i, stdout)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, path := range shards {
		sh := readSummary(t, path).Shard
		if sh == nil || sh.Index != i || sh.Count != 3 {
			t.Fatalf("shard %d's record: %+v", i, sh)
		}
		if off, ok := sh.Offset(); !ok || off < 0 {
			t.Errorf("shard %d's start offset %v (recorded: %v): want it recorded, at or after the announced start", i, off, ok)
		} else {
			t.Logf("shard %d started %v after the announced start", i, off)
		}
	}
	merged := filepath.Join(dir, "merged.jsonl")
	code, stdout, stderr := runCLI(t, append([]string{"merge", "--output-file", merged}, shards...)...)
	if code != 0 {
		t.Fatalf("merge exited %d\n%s\n%s", code, stdout, stderr)
	}
	for _, label := range append(slices.Clone(tableLabels), "Merged run:", "Shard 0/3:", "Shard 1/3:", "Shard 2/3:") {
		if !strings.Contains(stdout, label) {
			t.Errorf("merge's table lacks %q:\n%s", label, stdout)
		}
	}
	want, got := readSummary(t, single), readSummary(t, merged)
	if got.MaxConcurrency != 12 {
		t.Errorf("merged max concurrency %d, want the shards' 4+4+4", got.MaxConcurrency)
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{{"completed", got.Completed, want.Completed}, {"total input", got.TotalInputTokens, want.TotalInputTokens},
		{"total output", got.TotalOutputTokens, want.TotalOutputTokens}, {"requests", got.Requests, want.Requests}} {
		if c.got != c.want || c.want == 0 {
			t.Errorf("%s = %d, one process %d", c.name, c.got, c.want)
		}
	}
	if !slices.Equal(got.Details.InputLens, want.Details.InputLens) {
		t.Errorf("the shards' prompts are not the run's, in order: input lengths %v, one process %v", got.Details.InputLens, want.Details.InputLens)
	}
	// The merged latencies are the shards' requests' own, exactly: every
	// shard's TTFTs and inter-token gaps are in the merged details, and the
	// merged statistics are those of the union. (A comparison with the one
	// process's percentiles would measure two runs' timing on a shared
	// machine, not the merge.)
	var ttfts, itls []float64
	for _, path := range shards {
		d := readSummary(t, path).Details
		ttfts = append(ttfts, d.TTFTs...)
		for _, r := range d.ITLs {
			itls = append(itls, r...)
		}
	}
	var mergedITLs []float64
	for _, r := range got.Details.ITLs {
		mergedITLs = append(mergedITLs, r...)
	}
	for _, c := range []struct {
		name              string
		shards, mergedRaw []float64
		merged            bench.Stats
	}{{"ttft", ttfts, got.Details.TTFTs, got.TTFT}, {"itl", itls, mergedITLs, got.ITL}} {
		if len(c.shards) == 0 || !slices.Equal(slices.Sorted(slices.Values(c.shards)), slices.Sorted(slices.Values(c.mergedRaw))) {
			t.Errorf("%s: the merged details' %d values are not the shards' %d", c.name, len(c.mergedRaw), len(c.shards))
		}
		if want := bench.ComputeStats(c.shards); c.merged.Median != want.Median || c.merged.P99 != want.P99 {
			t.Errorf("merged %s p50/p99 = %.6f/%.6f ms, the shards' requests' %.6f/%.6f ms", c.name,
				c.merged.Median, c.merged.P99, want.Median, want.P99)
		}
	}
	// The report draws the merged run.
	html := filepath.Join(dir, "report.html")
	if code, stdout, stderr := runCLI(t, "report", "-o", html, merged); code != 0 {
		t.Fatalf("report exited %d\n%s\n%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("the report of the merged run draws nothing (%v)", err)
	}

	// A missing shard is named.
	code, _, stderr = runCLI(t, "merge", "--output-file", filepath.Join(dir, "x.jsonl"), shards[0], shards[2])
	if code == 0 || !strings.Contains(stderr, "shard 1/3 missing") {
		t.Errorf("merge without shard 1 exited %d: %s", code, stderr)
	}
}
