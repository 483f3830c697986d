package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// Shard is --shard I/N: this process runs part I of a run split across N
// processes (a Kubernetes Indexed Job's pods, say), and a merge of the N
// records (servingprobe merge) is the run's result.
//
// What a shard sends: every shard makes the whole run the same flags and
// seed make in one process (every prompt, every arrival time) and sends
// the prompts whose index is I modulo N, each at the time the one-process
// run would have sent it. So the shards' requests together are the single
// run's, prompt for prompt and arrival for arrival, whatever the arrival
// process:
//
//   - Poisson (--request-rate R): the union of the shards' arrivals is the
//     single run's Poisson process at R. A shard alone sends R/N requests
//     a second on average, but its own gaps are sums of N exponential gaps
//     (Erlang), not a Poisson process at R/N: splitting by index is a
//     deterministic thinning. A random thinning would make each shard
//     Poisson at R/N, but the shards' union would then no longer be the
//     single run's arrivals, which is what a merge compares against.
//   - --burstiness (gamma gaps) and --ramp-up-strategy: the same, the
//     single run's schedule split by index.
//   - Constant pacing: shard I sends every N-th slot, a constant rate of
//     R/N offset by I/R.
//   - --request-rate inf: every shard sends all its prompts at once.
//   - Trace timestamps: each prompt at its own timestamp.
//
// A conversation (a prompt of several rounds) stays whole on one shard.
// Warm-up requests, the cache flush and the profiler run once, on shard
// 0. --max-concurrency is split so that the shards' limits add up to it:
// each shard gets C/N rounded down, and the first C mod N shards one more
// (C=10 over N=3: 4, 3, 3).
type Shard struct {
	Index, Count int
}

// ParseShard reads "I/N".
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("want I/N (shard I of N, from 0), got %q", prober.TruncateUTF8(s, 40))
	}
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("want I/N with whole numbers, got %q", prober.TruncateUTF8(s, 40))
	}
	return Shard{Index: idx, Count: cnt}, nil
}

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// MarshalText writes "I/N", the JSON form.
func (s Shard) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "I/N".
func (s *Shard) UnmarshalText(b []byte) error {
	v, err := ParseShard(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// concurrencyShare is shard i's part of a concurrency limit c split over
// n shards: the parts add up to c and differ by at most one.
func concurrencyShare(c, n, i int) int {
	if c <= 0 {
		return 0
	}
	share := c / n
	if i < c%n {
		share++
	}
	return share
}

// validateShard checks the shard's fields.
func (s *Spec) validateShard(p *problems) {
	if s.Shard == nil {
		if s.RunID != "" {
			p.add("run_id", "names the run a shard belongs to: set --shard too")
		}
		return
	}
	sh := *s.Shard
	switch {
	case sh.Count < 1:
		p.add("shard", "the shard count must be at least 1, got %d", sh.Count)
	case sh.Index < 0 || sh.Index >= sh.Count:
		p.add("shard", "the index must be from 0 to %d, got %d", sh.Count-1, sh.Index)
	case s.MaxConcurrency > 0 && s.MaxConcurrency < sh.Count:
		p.add("max_concurrency", "must be at least the shard count %d, so that every shard has a slot, got %d", sh.Count, s.MaxConcurrency)
	}
	if s.Sweep != nil {
		p.add("shard", "a sweep or an SLO search cannot be split across processes")
	}
}

// DeriveRunID is the run id the shards of one run share when --run-id is
// not given: a hash of the Spec without what differs between the shards
// (the shard's index, the announced start) or what is secret (headers,
// which carry API keys). Processes given the same flags and seed get the
// same id; a changed flag gives another.
func (s Spec) DeriveRunID() string {
	c := s
	if c.Shard != nil {
		sh := Shard{Count: c.Shard.Count}
		c.Shard = &sh
	}
	c.RunID, c.StartAt, c.Headers = "", "", nil
	b, err := json.Marshal(c)
	if err != nil {
		b = fmt.Appendf(nil, "%+v", c)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

// applyShard turns a prepared run into its shard: the shard's prompts, the
// single run's schedule at the shard's indices, the shard's part of the
// concurrency, and the warm-up, cache flush and profiler left to shard 0.
func applyShard(s Spec, prompts *datasets.Source, pacer prober.Pacer) (Spec, *datasets.Source, prober.Pacer, error) {
	if s.Shard == nil {
		return s, prompts, pacer, nil
	}
	sh := *s.Shard
	mine, err := prompts.Every(sh.Index, sh.Count)
	if err != nil {
		return s, nil, nil, fmt.Errorf("--shard %s: %w", sh, err)
	}
	if mine.Len() == 0 {
		return s, nil, nil, fmt.Errorf("--shard %s: the run has %d prompts, none for this shard: use fewer shards", sh, prompts.Len())
	}
	if s.RunID == "" {
		s.RunID = s.DeriveRunID()
	}
	s.MaxConcurrency = concurrencyShare(s.MaxConcurrency, sh.Count, sh.Index)
	if sh.Index != 0 {
		s.WarmupRequests = 0
		s.FlushCache = false
		s.Profile.Enabled = false
	}
	return s, mine, shardPacer{next: pacer, index: uint64(sh.Index), count: uint64(sh.Count)}, nil
}

// shardPacer is the single run's pacer read at a shard's indices: the
// shard's k-th prompt is the run's prompt index+k·count, due when the
// single run would send it.
type shardPacer struct {
	next         prober.Pacer
	index, count uint64
}

func (p shardPacer) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	return p.next.Pace(elapsed, p.index+sent*p.count)
}

// StartTime reads --start-at: an RFC 3339 time, or the path of a file
// (a ConfigMap's key mounted in a pod) whose content is one.
func StartTime(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--start-at: neither an RFC 3339 time nor a readable file: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("--start-at: the file %s holds no RFC 3339 time", v)
	}
	return t, nil
}

// syncStart waits for --start-at, if set, and fills the summary's shard
// parameters. A shard that reaches the start late starts at once: the
// record keeps its offset and the table calls it late, rather than the
// lateness hiding in the merged numbers.
func (p *Prepared) syncStart(ctx context.Context, env Env, params *bench.Params) error {
	s := p.Spec
	var at time.Time
	if s.StartAt != "" {
		t, err := StartTime(s.StartAt)
		if err != nil {
			return err
		}
		at = t
		wait := time.Until(at)
		if wait > 0 {
			level.Info(env.Logger).Log("msg", "Waiting for the start", "start_at", at.Format(time.RFC3339Nano), "wait_seconds", wait.Seconds())
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return context.Cause(ctx)
			}
		} else if -wait > bench.LateStart {
			level.Warn(env.Logger).Log("msg", "Started late", "start_at", at.Format(time.RFC3339Nano), "late_seconds", -wait.Seconds())
		}
	}
	if s.Shard != nil {
		params.Shard = &bench.ShardInfo{RunID: s.RunID, Index: s.Shard.Index, Count: s.Shard.Count,
			Prompts: p.Prompts.Len(), Planned: p.Prompts.Requests(), StartAt: at}
	}
	return nil
}
