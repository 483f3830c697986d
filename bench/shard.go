package bench

import (
	"encoding/json"
	"fmt"
	"time"
)

// LateStart is how far past the announced start (--start-at) a shard may
// begin its measured run before the table and the merge call it late.
// Clocks kept by NTP agree to a few milliseconds; a shard a tenth of a
// second behind did not reach the start in time (a pod scheduled late, a
// slow image pull), and its requests then arrive later than the single
// run's would.
const LateStart = 100 * time.Millisecond

// ShardInfo says which part of a run split across processes a summary is
// (bench --shard I/N), and carries what a merge of the run's shards needs
// beyond the record's own figures.
type ShardInfo struct {
	// RunID names the run; every shard of one run has the same.
	RunID string
	// Index and Count are I and N of --shard I/N.
	Index, Count int
	// Prompts and Planned are the shard's prompts and the requests they
	// make: a merge puts the shards' requests back in the single run's
	// order when every prompt is one request.
	Prompts, Planned int
	// StartAt is the announced start of the measured run (--start-at),
	// zero when there was none; Start is when this shard's measured run
	// started, by this machine's wall clock.
	StartAt, Start time.Time
	// Sketches are the shard's latency sketches under StatsSketch, which
	// a merge adds up; nil under exact statistics (a merge then reads the
	// per-request details).
	Sketches *ShardSketches
}

// Offset is Start − StartAt, the shard's lateness (negative: early), and
// false when no start was announced.
func (i *ShardInfo) Offset() (time.Duration, bool) {
	if i.StartAt.IsZero() || i.Start.IsZero() {
		return 0, false
	}
	return i.Start.Sub(i.StartAt), true
}

// Late says the shard started past LateStart after the announced start.
func (i *ShardInfo) Late() bool {
	off, ok := i.Offset()
	return ok && off > LateStart
}

// ShardSketches are a shard's sketch statistics, as a merge needs them.
type ShardSketches struct {
	TTFT, TPOT, ITL, E2E, Queue, E2EQ *Sketch
	// TTFAT, AnswerTPOT and AnswerITL are the answer phase's sketches
	// (ReasoningSummary), kept only by a shard in which some request
	// reasoned, so that the record of any other shard keeps its bytes;
	// nil otherwise. A shard in which nothing reasoned has them anyway:
	// its TTFAT is its TTFT, its answer TPOT its TPOT and its answer ITL
	// its ITL (prober.Samples without reasoning).
	TTFAT, AnswerTPOT, AnswerITL *Sketch
}

// wallTime is t as the record writes it: RFC 3339 with nanoseconds in
// UTC, exact, or null when t is zero.
func wallTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// record is the shard's object in the servingprobe block.
func (i *ShardInfo) record() record {
	r := record{
		{"run_id", i.RunID},
		{"index", i.Index},
		{"count", i.Count},
		{"prompts", i.Prompts},
		{"planned_requests", i.Planned},
		{"start_time", wallTime(i.Start)},
		{"start_at", wallTime(i.StartAt)},
	}
	if off, ok := i.Offset(); ok {
		r = append(r, field{"start_offset", off.Seconds()}, field{"late", i.Late()})
	}
	if k := i.Sketches; k != nil {
		sk := record{
			{"ttft", k.TTFT.record()}, {"tpot", k.TPOT.record()}, {"itl", k.ITL.record()},
			{"e2e_latency", k.E2E.record()}, {"client_queue", k.Queue.record()},
			{"e2e_latency_including_client_queue", k.E2EQ.record()},
		}
		if k.TTFAT != nil {
			sk = append(sk, field{"ttfat", k.TTFAT.record()}, field{"answer_tpot", k.AnswerTPOT.record()}, field{"answer_itl", k.AnswerITL.record()})
		}
		r = append(r, field{"sketches", sk})
	}
	return r
}

// record is a sketch's state: enough to merge it exactly into another.
func (s *Sketch) record() record {
	counts := make([]int, len(s.counts))
	for i, c := range s.counts {
		counts[i] = int(c)
	}
	return record{
		{"relative_error", SketchRelativeError},
		{"n", int(s.n)}, {"zeros", int(s.zeros)},
		{"mean", s.mean}, {"m2", s.m2}, {"max", s.max},
		{"offset", s.offset}, {"counts", counts},
	}
}

// sketchJSON is a sketch's record read back.
type sketchJSON struct {
	RelativeError float64  `json:"relative_error"`
	N             uint64   `json:"n"`
	Zeros         uint64   `json:"zeros"`
	Mean          float64  `json:"mean"`
	M2            float64  `json:"m2"`
	Max           float64  `json:"max"`
	Offset        int      `json:"offset"`
	Counts        []uint64 `json:"counts"`
}

func (j *sketchJSON) sketch() (*Sketch, error) {
	if j == nil {
		return NewSketch(SketchRelativeError), nil
	}
	if j.RelativeError != SketchRelativeError {
		return nil, fmt.Errorf("a sketch of relative error %g, not this build's %g", j.RelativeError, SketchRelativeError)
	}
	s := NewSketch(SketchRelativeError)
	s.n, s.zeros, s.mean, s.m2, s.max, s.offset, s.counts = j.N, j.Zeros, j.Mean, j.M2, j.Max, j.Offset, j.Counts
	return s, nil
}

// shardJSON is a shard's object read back.
type shardJSON struct {
	RunID    string     `json:"run_id"`
	Index    int        `json:"index"`
	Count    int        `json:"count"`
	Prompts  int        `json:"prompts"`
	Planned  int        `json:"planned_requests"`
	Start    *time.Time `json:"start_time"`
	StartAt  *time.Time `json:"start_at"`
	Sketches *struct {
		TTFT  *sketchJSON `json:"ttft"`
		TPOT  *sketchJSON `json:"tpot"`
		ITL   *sketchJSON `json:"itl"`
		E2E   *sketchJSON `json:"e2e_latency"`
		Queue *sketchJSON `json:"client_queue"`
		E2EQ  *sketchJSON `json:"e2e_latency_including_client_queue"`
		// The answer phase's, absent when nothing of the shard reasoned.
		TTFAT      *sketchJSON `json:"ttfat"`
		AnswerTPOT *sketchJSON `json:"answer_tpot"`
		AnswerITL  *sketchJSON `json:"answer_itl"`
	} `json:"sketches"`
}

// parseShard reads the servingprobe block's "shard" object.
func parseShard(raw json.RawMessage) (*ShardInfo, error) {
	var j shardJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("decode shard: %w", err)
	}
	i := &ShardInfo{RunID: j.RunID, Index: j.Index, Count: j.Count, Prompts: j.Prompts, Planned: j.Planned}
	if j.Start != nil {
		i.Start = *j.Start
	}
	if j.StartAt != nil {
		i.StartAt = *j.StartAt
	}
	if k := j.Sketches; k != nil {
		i.Sketches = &ShardSketches{}
		for _, p := range []struct {
			dst **Sketch
			src *sketchJSON
		}{{&i.Sketches.TTFT, k.TTFT}, {&i.Sketches.TPOT, k.TPOT}, {&i.Sketches.ITL, k.ITL}, {&i.Sketches.E2E, k.E2E}, {&i.Sketches.Queue, k.Queue}, {&i.Sketches.E2EQ, k.E2EQ}} {
			s, err := p.src.sketch()
			if err != nil {
				return nil, fmt.Errorf("shard %d: %w", j.Index, err)
			}
			*p.dst = s
		}
		if k.TTFAT != nil || k.AnswerTPOT != nil || k.AnswerITL != nil {
			if k.TTFAT == nil || k.AnswerTPOT == nil || k.AnswerITL == nil {
				return nil, fmt.Errorf("shard %d: sketches: ttfat, answer_tpot and answer_itl go together, and one of them is missing", j.Index)
			}
			for _, p := range []struct {
				dst **Sketch
				src *sketchJSON
			}{{&i.Sketches.TTFAT, k.TTFAT}, {&i.Sketches.AnswerTPOT, k.AnswerTPOT}, {&i.Sketches.AnswerITL, k.AnswerITL}} {
				s, err := p.src.sketch()
				if err != nil {
					return nil, fmt.Errorf("shard %d: %w", j.Index, err)
				}
				*p.dst = s
			}
		}
	}
	return i, nil
}

// shardOf is the summary's ShardInfo for the run's parameters: p.Shard
// with the start of the measured run and, under sketch statistics, the
// sketches, the answer phase's too when some request reasoned.
func shardOf(p *ShardInfo, start time.Time, stats statistics, reasoned bool) *ShardInfo {
	if p == nil {
		return nil
	}
	i := *p
	i.Start = start
	if k, ok := stats.(*sketchStats); ok {
		i.Sketches = &ShardSketches{TTFT: k.ttft, TPOT: k.tpot, ITL: k.itl, E2E: k.e2e, Queue: k.queue, E2EQ: k.e2eQ}
		if reasoned {
			i.Sketches.TTFAT, i.Sketches.AnswerTPOT, i.Sketches.AnswerITL = k.ttfat, k.answerTPOT, k.itl
			if k.answerITL != nil {
				i.Sketches.AnswerITL = k.answerITL
			}
		}
	}
	return &i
}
