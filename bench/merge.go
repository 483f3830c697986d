package bench

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// How a merge took the latencies (MergeInfo.From).
const (
	MergedFromDetails  = "details"  // every request's times: exact
	MergedFromSketches = "sketches" // the shards' sketches: within SketchRelativeError
)

// MergeInfo is what a merged record says about its shards.
type MergeInfo struct {
	RunID string
	Count int
	// From is MergedFromDetails or MergedFromSketches.
	From string
	// Shards are each shard's own figures, by index.
	Shards []ShardLine
	// ReasoningNotMerged says why the answer phase's latencies (TTFAT,
	// answer TPOT and answer ITL) could not be merged, "" when they were,
	// as the other latencies: a shard that reasoned wrote neither the
	// per-request reasoning of its details nor its answer sketches (a
	// record from a servingprobe before they were written). The
	// reasoning's counts are sums, exact whatever the records hold; the
	// latencies are then left at 0 rather than computed from the
	// requests of some shards only.
	ReasoningNotMerged string
}

// ShardLine is one shard's own line in a merged record.
type ShardLine struct {
	Index int
	// Start is the shard's start by its own clock; Offset is its lateness
	// after the announced start (HasOffset false when none was announced).
	Start     time.Time
	Offset    time.Duration
	HasOffset bool
	Late      bool
	// Duration is the shard's benchmark duration in seconds.
	Duration                                float64
	MaxConcurrency                          int
	Requests, Completed, Failed             int
	TotalInputTokens, TotalOutputTokens     int
	RequestThroughput, OutputThroughput     float64
	TTFT, ITL, E2E                          Stats
	ScheduledRequestRate, ActualRequestRate Rate
}

// shardLineRows are a shard's line in a merged record, in order.
var shardLineRows = slices.Concat(
	[]row[ShardLine]{
		key("index", func(l *ShardLine) *int { return &l.Index }),
		block(func(l *ShardLine, r record) record { return append(r, field{"start_time", wallTime(l.Start)}) },
			func(l *ShardLine, m map[string]json.RawMessage, v *recordView) error {
				var t *time.Time
				if err := decodeInto("start_time", func(*ShardLine) **time.Time { return &t })(l, m, v); err != nil || t == nil {
					return err
				}
				l.Start = *t
				return nil
			}),
		block(func(l *ShardLine, r record) record {
			if l.HasOffset {
				return append(r, field{"start_offset", l.Offset.Seconds()})
			}
			return append(r, field{"start_offset", nil})
		}, func(l *ShardLine, m map[string]json.RawMessage, v *recordView) error {
			var off *float64
			if err := decodeInto("start_offset", func(*ShardLine) **float64 { return &off })(l, m, v); err != nil || off == nil {
				return err
			}
			l.HasOffset, l.Offset = true, time.Duration(math.Round(*off*1e9))
			return nil
		}),
		key("late", func(l *ShardLine) *bool { return &l.Late }),
		key("duration", func(l *ShardLine) *float64 { return &l.Duration }),
		key("max_concurrency", func(l *ShardLine) *int { return &l.MaxConcurrency }),
		key("requests", func(l *ShardLine) *int { return &l.Requests }),
		key("completed", func(l *ShardLine) *int { return &l.Completed }),
		key("failed", func(l *ShardLine) *int { return &l.Failed }),
		key("total_input_tokens", func(l *ShardLine) *int { return &l.TotalInputTokens }),
		key("total_output_tokens", func(l *ShardLine) *int { return &l.TotalOutputTokens }),
		key("request_throughput", func(l *ShardLine) *float64 { return &l.RequestThroughput }),
		key("output_throughput", func(l *ShardLine) *float64 { return &l.OutputThroughput }),
		rate("scheduled_request_rate", func(l *ShardLine) *Rate { return &l.ScheduledRequestRate }),
		rate("actual_request_rate", func(l *ShardLine) *Rate { return &l.ActualRequestRate }),
	},
	stats("ttft", func(l *ShardLine) *Stats { return &l.TTFT }, key, "median", "p99"),
	stats("itl", func(l *ShardLine) *Stats { return &l.ITL }, key, "median", "p99"),
	stats("e2e_latency", func(l *ShardLine) *Stats { return &l.E2E }, key, "median", "p99"),
)

func (l *ShardLine) record() record { return writeFields(l, shardLineRows, nil) }

func (m *MergeInfo) record() record {
	lines := make([]record, len(m.Shards))
	for i := range m.Shards {
		lines[i] = m.Shards[i].record()
	}
	r := record{{"run_id", m.RunID}, {"count", m.Count}, {"from", m.From}, {"shards", lines}}
	if m.ReasoningNotMerged != "" {
		r = append(r, field{"reasoning_not_merged", m.ReasoningNotMerged})
	}
	return r
}

// parseMerged reads the servingprobe block's "merged" object.
func parseMerged(raw json.RawMessage) (*MergeInfo, error) {
	var j struct {
		RunID              string            `json:"run_id"`
		Count              int               `json:"count"`
		From               string            `json:"from"`
		ReasoningNotMerged string            `json:"reasoning_not_merged"`
		Shards             []json.RawMessage `json:"shards"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("decode merged: %w", err)
	}
	m := &MergeInfo{RunID: j.RunID, Count: j.Count, From: j.From, ReasoningNotMerged: j.ReasoningNotMerged}
	for i, line := range j.Shards {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(line, &keys); err != nil {
			return nil, fmt.Errorf("decode merged: shards[%d]: %w", i, err)
		}
		var l ShardLine
		if err := readFields(&l, shardLineRows, keys, nil); err != nil {
			return nil, fmt.Errorf("decode merged: shards[%d].%w", i, err)
		}
		m.Shards = append(m.Shards, l)
	}
	return m, nil
}

// writeShardRows writes a shard's or a merge's rows of servingprobe's
// block.
func (s *Summary) writeShardRows(t *tableWriter) {
	if sh := s.Shard; sh != nil {
		t.row("Shard:", fmt.Sprintf("%d/%d of run %s", sh.Index, sh.Count, sh.RunID))
		if off, ok := sh.Offset(); ok {
			t.row("Start offset (s):", startOffsetText(off, sh.Late()))
		}
	}
	m := s.Merged
	if m == nil {
		return
	}
	t.row("Merged run:", fmt.Sprintf("%s, %d shards", m.RunID, m.Count))
	switch m.From {
	case MergedFromSketches:
		t.row("Merged latencies:", fmt.Sprintf("from sketches, within %g%%; peaks are the sum of the shards' (an upper bound); request rates summed", SketchRelativeError*100))
	default:
		t.row("Merged latencies:", "exact, from every request's details")
	}
	if m.ReasoningNotMerged != "" {
		t.row("Merged reasoning:", "counts exact; TTFAT, answer TPOT and answer ITL not merged (shown as 0): "+m.ReasoningNotMerged)
	}
	for _, l := range m.Shards {
		line := fmt.Sprintf("%d ok of %d, %s s, %s req/s, P99 TTFT %s ms", l.Completed, l.Requests, pyfmt.Fixed2(l.Duration), pyfmt.Fixed2(l.RequestThroughput), pyfmt.Fixed2(l.TTFT.P99))
		if l.HasOffset {
			line += ", start " + startOffsetText(l.Offset, l.Late)
		}
		t.row(fmt.Sprintf("Shard %d/%d:", l.Index, m.Count), line)
	}
}

// startOffsetText is a start offset in seconds, marked when late.
func startOffsetText(off time.Duration, late bool) string {
	s := strconv.FormatFloat(off.Seconds(), 'f', 3, 64)
	if off >= 0 {
		s = "+" + s
	}
	if late {
		s += " (late)"
	}
	return s
}

// ErrNotShard is returned by Merge for a record that is not a shard's.
var ErrNotShard = errors.New("not a shard's record (run bench with --shard)")

// Merge combines the records of every shard of one run, read back by
// ParseRecord, into the summary of the whole run, as one process running
// it would have reported it:
//
//   - counts and token totals are the shards' sums, exactly;
//   - latency statistics are exact when every shard kept its details
//     (--output-details): each request's times are taken back from them
//     and the statistics computed over all of them at once; else they come
//     from the shards' sketches (--stats sketch) added together, which is
//     what one sketch of every sample would hold, so within
//     SketchRelativeError of the exact values;
//   - the duration is the union of the shards' windows (from each
//     shard's start by its wall clock, for its duration), so the
//     throughputs are over the time any shard was measuring.
//
// It refuses records of different runs or shard counts, a shard given
// twice, and says which shards are missing.
func Merge(shards []*Summary) (*Summary, error) {
	if len(shards) == 0 {
		return nil, errors.New("merge: no record")
	}
	byIndex, err := checkShards(shards)
	if err != nil {
		return nil, err
	}
	first := byIndex[0]
	n := first.Shard.Count

	from := MergedFromDetails
	for _, s := range byIndex {
		if s.Details == nil {
			from = MergedFromSketches
		}
	}
	if from == MergedFromSketches {
		for _, s := range byIndex {
			if s.Shard.Sketches == nil && s.Details == nil {
				return nil, fmt.Errorf("merge: shard %d/%d has neither per-request details (--output-details) nor sketches (--stats sketch), and a merge needs one of them from every shard", s.Shard.Index, n)
			}
		}
		for _, s := range byIndex {
			if s.Shard.Sketches == nil {
				return nil, fmt.Errorf("merge: shard %d/%d has no sketches and not every shard kept its details: run every shard with --output-details, or every one with --stats sketch", s.Shard.Index, n)
			}
		}
	}

	info, _ := prober.LookupBackend(first.Backend)
	// The run's parameters are the first shard's, as its record echoes
	// them, but for the max concurrency: the shards' sum, below.
	p := first.params()
	p.MaxConcurrency = 0
	p.SplitChunkGaps, p.Embedding = info.SplitChunkGaps, info.Embedding || first.Embedding
	p.Compat, p.Goodput, p.Details, p.DetailsNoTexts = first.Compat, first.Goodput, from == MergedFromDetails, false
	if from == MergedFromSketches {
		p.Stats = StatsSketch
	}
	for _, m := range first.Percentiles {
		p.PercentileMetrics = append(p.PercentileMetrics, m.Metric)
	}
	if len(first.Percentiles) > 0 {
		for _, q := range first.Percentiles[0].Percentiles {
			p.MetricPercentiles = append(p.MetricPercentiles, q.P)
		}
	}

	cc, err := mergeCacheCost(byIndex)
	if err != nil {
		return nil, err
	}
	p.CacheCostParams = CacheCostParams{CacheReport: cc.CacheReport != nil, CostPerHour: cc.CostPerHour}

	a := NewAccumulator(p)
	if cc.CacheReport != nil {
		a.cache.r = *cc.CacheReport
	}
	origin := first.Shard.Start
	var windows [][2]time.Time
	mi := &MergeInfo{RunID: first.Shard.RunID, Count: n, From: from}
	var schedRate, actualRate Rate
	var e2eSum, peakTok float64
	var peakConc int
	for _, s := range byIndex {
		sh := s.Shard
		if sh.Start.Before(origin) {
			origin = sh.Start
		}
		windows = append(windows, [2]time.Time{sh.Start, sh.Start.Add(time.Duration(math.Round(s.Duration * 1e9)))})
		p.MaxConcurrency += s.MaxConcurrency
		a.requests += s.Requests
		a.notStreamed += s.NotStreamed
		a.completed += s.Completed
		a.totalIn += s.TotalInputTokens
		a.totalInText += s.TotalInputTextTokens
		a.totalInVision += s.TotalInputVisionTokens
		a.totalOut += s.TotalOutputTokens
		a.totalRetok += s.TotalOutputTokensRetokenized
		a.good += s.GoodRequests
		a.batch.merge(s.EmbeddingBatch)
		a.eng.merge(s.Engine)
		for k, v := range s.Outcomes {
			a.outcomes[k] += v
		}
		for k, v := range s.Clocks {
			a.clocks[k] += v
		}
		a.valid.merge(s.Valid)
		a.answers.Judged += s.Answers.Judged
		a.answers.Valid += s.Answers.Valid
		p.Planned += s.Requests + s.NotSent
		if p.Stopped == "" {
			p.Stopped = s.Stopped
		}
		schedRate += s.ScheduledRequestRate
		actualRate += s.ActualRequestRate
		e2eSum += s.Concurrency * s.Duration
		peakTok += s.MaxOutputTokensPerS
		peakConc += s.MaxConcurrentRequests
		addReasoningCounts(a, s)
		off, has := sh.Offset()
		mi.Shards = append(mi.Shards, ShardLine{
			Index: sh.Index, Start: sh.Start, Offset: off, HasOffset: has, Late: sh.Late(),
			Duration: s.Duration, MaxConcurrency: s.MaxConcurrency,
			Requests: s.Requests, Completed: s.Completed, Failed: s.Failed,
			TotalInputTokens: s.TotalInputTokens, TotalOutputTokens: s.TotalOutputTokens,
			RequestThroughput: s.RequestThroughput, OutputThroughput: s.OutputThroughput,
			ScheduledRequestRate: s.ScheduledRequestRate, ActualRequestRate: s.ActualRequestRate,
			TTFT: s.TTFT, ITL: s.ITL, E2E: s.E2ELatency,
		})
	}
	a.p.MaxConcurrency, a.p.Planned, a.p.Stopped = p.MaxConcurrency, p.Planned, p.Stopped
	a.start = origin
	mi.ReasoningNotMerged = reasoningNotMerged(byIndex, from)
	if from == MergedFromDetails {
		if err := a.addDetails(byIndex); err != nil {
			return nil, err
		}
	} else {
		m := &mergedSketches{e2eSum: e2eSum, peakTok: peakTok, peakConc: peakConc}
		for i, s := range byIndex {
			k := s.Shard.Sketches
			if i == 0 {
				m.ttft, m.tpot, m.itl, m.e2e, m.queue, m.e2eQ = NewSketch(SketchRelativeError), NewSketch(SketchRelativeError), NewSketch(SketchRelativeError), NewSketch(SketchRelativeError), NewSketch(SketchRelativeError), NewSketch(SketchRelativeError)
			}
			m.ttft.Merge(k.TTFT)
			m.tpot.Merge(k.TPOT)
			m.itl.Merge(k.ITL)
			m.e2e.Merge(k.E2E)
			m.queue.Merge(k.Queue)
			m.e2eQ.Merge(k.E2EQ)
			m.addAnswer(k)
		}
		a.stats = m
	}
	sum, err := a.Summary(unionLength(windows))
	if err != nil {
		return nil, err
	}
	if from == MergedFromSketches {
		// Without every request's times the rates of the whole run are
		// the sums of the shards' (each shard's realised share).
		sum.ScheduledRequestRate, sum.ActualRequestRate = schedRate, actualRate
	}
	if r := sum.Reasoning; r != nil && mi.ReasoningNotMerged != "" {
		// The statistics of some shards' requests are not the run's.
		r.TTFAT, r.AnswerTPOT, r.AnswerITL = Stats{}, Stats{}, Stats{}
		for k := range r.AnswerITLPercentiles {
			r.AnswerITLPercentiles[k].Value = 0
		}
	}
	sum.Merged = mi
	return &sum, nil
}

// addReasoningCounts adds a shard's reasoning counts to the merge's
// accumulator: its ReasoningSummary's, or, for a shard in which nothing
// reasoned, its whole output as the answer (prober.Samples: without
// reasoning, AnswerTokens is OutputTokens), as one process adds them up.
func addReasoningCounts(a *Accumulator, s *Summary) {
	r := s.Reasoning
	if r == nil {
		a.totalAnswer += s.TotalOutputTokens
		return
	}
	a.reasoned += r.Requests
	a.reasoningCounted += r.CountedRequests
	a.totalReasoning += r.ReasoningTokens
	a.totalAnswer += r.AnswerTokens
}

// reasoningNotMerged is why the shards' answer-phase latencies cannot be
// merged (MergeInfo.ReasoningNotMerged), "" when they can: every shard
// that reasoned must carry its per-request reasoning in its details
// (merged from details) or its answer sketches (merged from sketches).
// A shard in which nothing reasoned needs neither.
func reasoningNotMerged(byIndex []*Summary, from string) string {
	var lack []string
	for _, s := range byIndex {
		if s.Reasoning == nil {
			continue
		}
		if (from == MergedFromDetails && s.Details.Reasoning == nil) || (from == MergedFromSketches && s.Shard.Sketches.TTFAT == nil) {
			lack = append(lack, fmt.Sprintf("%d/%d", s.Shard.Index, s.Shard.Count))
		}
	}
	if len(lack) == 0 {
		return ""
	}
	what := "per-request reasoning in its details (request_reasoning)"
	if from == MergedFromSketches {
		what = "answer-phase sketches (ttfat, answer_tpot, answer_itl)"
	}
	word := "shard " + lack[0] + " reasoned but its record has no "
	if len(lack) > 1 {
		word = "shards " + strings.Join(lack, ", ") + " reasoned but their records have no "
	}
	return word + what + ": written by a servingprobe before they were"
}

// mergeCacheCost is the merged run's cache report and price. Each
// shard's report is a sum over its successful requests, so the run's is
// the shards' sum, exactly: the prompt, cached and per-tier tokens added,
// the split there when any shard had one. bench_serving names the storage
// backend of the last response with storage hits, which the shards'
// records cannot order; they name one when every shard with storage hits
// named the same (one server has one storage backend), else all of them
// in shard order. The price is the shards' one --cost-per-hour; Summary's
// Cost then charges it over the merged duration and token totals. Shards
// that differ in either flag are refused: a sum over some shards would
// understate the run, and there is no one price to charge.
func mergeCacheCost(byIndex []*Summary) (CacheCost, error) {
	first := byIndex[0]
	n := first.Shard.Count
	var out CacheCost
	for _, s := range byIndex {
		if (s.CacheReport == nil) != (first.CacheReport == nil) {
			with, without := s, first
			if s.CacheReport == nil {
				with, without = first, s
			}
			return out, fmt.Errorf("merge: shard %d/%d has a cache report and shard %d/%d none: run every shard with --cache-report, or none", with.Shard.Index, n, without.Shard.Index, n)
		}
		if s.CostPerHour != first.CostPerHour {
			return out, fmt.Errorf("merge: shard %d/%d was run with --cost-per-hour %s and shard %d/%d with %s: run every shard with the same price", first.Shard.Index, n,
				strconv.FormatFloat(first.CostPerHour, 'f', -1, 64), s.Shard.Index, n, strconv.FormatFloat(s.CostPerHour, 'f', -1, 64))
		}
	}
	out.CostPerHour = first.CostPerHour
	if first.CacheReport == nil {
		return out, nil
	}
	c := &CacheReport{}
	var backends []string
	for _, s := range byIndex {
		r := s.CacheReport
		c.TotalPromptTokens += r.TotalPromptTokens
		c.TotalCachedTokens += r.TotalCachedTokens
		c.HasDetails = c.HasDetails || r.HasDetails
		c.Device += r.Device
		c.Host += r.Host
		c.Storage += r.Storage
		if r.Storage != 0 && r.StorageBackend != "" && !slices.Contains(backends, r.StorageBackend) {
			backends = append(backends, r.StorageBackend)
		}
	}
	c.StorageBackend = strings.Join(backends, ", ")
	out.CacheReport = c
	return out, nil
}

// checkShards returns the records by shard index, or says what is wrong:
// a record that is no shard's, records of different runs, a shard twice,
// the shards missing.
func checkShards(shards []*Summary) ([]*Summary, error) {
	for i, s := range shards {
		if s.Shard == nil {
			return nil, fmt.Errorf("merge: record %d: %w", i+1, ErrNotShard)
		}
	}
	first := shards[0].Shard
	byIndex := make([]*Summary, first.Count)
	for i, s := range shards {
		sh := s.Shard
		switch {
		case sh.RunID != first.RunID:
			return nil, fmt.Errorf("merge: record %d is shard %d/%d of run %s, record 1 of run %s: shards of different runs", i+1, sh.Index, sh.Count, sh.RunID, first.RunID)
		case sh.Count != first.Count:
			return nil, fmt.Errorf("merge: record %d is shard %d of %d, record 1 of %d: shards of different splits", i+1, sh.Index, sh.Count, first.Count)
		case sh.Index < 0 || sh.Index >= sh.Count:
			return nil, fmt.Errorf("merge: record %d is shard %d of %d: out of range", i+1, sh.Index, sh.Count)
		case byIndex[sh.Index] != nil:
			return nil, fmt.Errorf("merge: shard %d/%d of run %s is given twice", sh.Index, sh.Count, sh.RunID)
		}
		byIndex[sh.Index] = s
	}
	var missing []string
	for i, s := range byIndex {
		if s == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Count))
		}
	}
	if len(missing) > 0 {
		word := "shard"
		if len(missing) > 1 {
			word = "shards"
		}
		return nil, fmt.Errorf("merge: run %s: %s %s missing", first.RunID, word, strings.Join(missing, ", "))
	}
	return byIndex, nil
}

// unionLength is the total length of the union of the windows.
func unionLength(w [][2]time.Time) time.Duration {
	w = slices.Clone(w)
	slices.SortFunc(w, func(x, y [2]time.Time) int { return x[0].Compare(y[0]) })
	var total time.Duration
	var cur [2]time.Time
	for i, x := range w {
		switch {
		case i == 0:
			cur = x
		case !x[0].After(cur[1]):
			if x[1].After(cur[1]) {
				cur[1] = x[1]
			}
		default:
			total += cur[1].Sub(cur[0])
			cur = x
		}
	}
	if len(w) > 0 {
		total += cur[1].Sub(cur[0])
	}
	return total
}

// mergedRequest is one request of a shard's details, placed in the run.
type mergedRequest struct {
	shard *Summary
	j     int // its index in the shard's details
	key   int // its place in the single run's order
}

// addDetails adds every request of the shards' details, in the single
// run's order: when every prompt is one request, shard I's j-th request
// is the run's request j·N+I (the shards split the prompts by index);
// otherwise (conversations) shard by shard.
func (a *Accumulator) addDetails(byIndex []*Summary) error {
	n := len(byIndex)
	interleave := true
	total := 0
	for _, s := range byIndex {
		if s.Shard.Planned != s.Shard.Prompts {
			interleave = false
		}
		total += len(s.Details.TTFTs)
	}
	reqs := make([]mergedRequest, 0, total)
	base := 0
	for _, s := range byIndex {
		for j := range s.Details.TTFTs {
			key := base + j
			if interleave {
				key = j*n + s.Shard.Index
			}
			reqs = append(reqs, mergedRequest{shard: s, j: j, key: key})
		}
		base += len(s.Details.TTFTs)
	}
	slices.SortFunc(reqs, func(x, y mergedRequest) int { return cmp.Compare(x.key, y.key) })
	for i, r := range reqs {
		if err := a.addDetail(i, r.shard, r.j); err != nil {
			return err
		}
	}
	return nil
}

// addDetail adds request j of a shard's details as the run's request i:
// the record the accumulator would have made of its Result, from the
// times the details kept.
func (a *Accumulator) addDetail(i int, s *Summary, j int) error {
	d := s.Details
	if j >= len(d.SentTimes) || j >= len(d.ITLs) || j >= len(d.OutputLens) || j >= len(d.InputLens) {
		return fmt.Errorf("merge: shard %d: its details lack servingprobe's per-request times (request %d)", s.Shard.Index, j)
	}
	at := func(v []float64) time.Time {
		if j >= len(v) || v[j] < 0 {
			return time.Time{}
		}
		return s.Shard.Start.Add(time.Duration(math.Round(v[j] * 1e9)))
	}
	sched, sent, firstTok, end := at(d.ScheduledTimes), at(d.SentTimes), at(d.FirstTokenTimes), at(d.EndTimes)
	outcome := ""
	if j < len(d.Outcomes) {
		outcome = d.Outcomes[j]
	}
	rec := reqRec{idx: i, tpot: math.NaN(), ttft: d.TTFTs[j], ttfat: math.NaN(), answerTPOT: math.NaN()}
	var reasoning *DetailReasoning
	if j < len(d.Reasoning) {
		reasoning = d.Reasoning[j]
	}
	if !sent.IsZero() {
		if a.origin.IsZero() {
			a.origin = sent
		}
		rec.start = sent.Sub(a.origin).Seconds()
		a.minSent, a.maxSent = minTime(a.minSent, sent, a.nSent), maxTime(a.maxSent, sent, a.nSent)
		a.nSent++
		if !sched.IsZero() {
			rec.queued = true
			rec.queue = max(sent.Sub(sched), 0).Seconds()
		}
	}
	if !sched.IsZero() {
		a.minSched, a.maxSched = minTime(a.minSched, sched, a.nSched), maxTime(a.maxSched, sched, a.nSched)
		a.nSched++
	}
	rec.itlOff = a.itl.len()
	for _, g := range d.ITLs[j] {
		a.itl.pushSeconds(g)
	}
	rec.itlLen = len(d.ITLs[j])
	rec.itlAnswer = rec.itlLen
	outLen := d.OutputLens[j]
	errText := ""
	if j < len(d.Errors) {
		errText = d.Errors[j]
	}
	if detailSucceeded(outcome, errText, a.p.Compat.EmptySuccess) {
		rec.ok = true
		if !end.IsZero() && !sent.IsZero() {
			rec.e2e = max(end.Sub(sent), 0).Seconds()
		}
		if tpot := prober.TPOTSeconds(rec.e2e, rec.ttft, outLen); tpot >= 0 {
			rec.tpot = tpot
		}
		rec.firstTok = 1
		if a.perToken {
			rec.firstTok = max(outLen-rec.itlLen, 1)
		}
		answerPhase(&rec, reasoning, outLen, !sent.IsZero() && !firstTok.IsZero(), !sent.IsZero() && !end.IsZero())
	}
	row := detailRow{reasoning: reasoning, inputLen: d.InputLens[j], outputLen: outLen, ttft: rec.ttft, times: [4]time.Time{sched, sent, firstTok, end}, outcome: outcome}
	if j < len(d.GeneratedTexts) {
		row.text = d.GeneratedTexts[j]
	}
	row.err = errText
	if j < len(d.ServerTimings) {
		row.server = d.ServerTimings[j]
	}
	if j < len(d.CheckFailures) {
		row.checks = d.CheckFailures[j]
	}
	if j < len(d.TraceIDs) {
		row.traceID = d.TraceIDs[j]
	}
	a.details.add(i, row, a.itl.of(rec))
	a.stats.add(rec, &a.itl)
	return nil
}

// answerPhase sets a success's answer phase from its details, as
// prober.Samples derives it from the Result: without reasoning the
// answer is the whole output, its TTFAT the TTFT (defined when the first
// token's time is) and its gaps all of the request's; with reasoning the
// details' DetailReasoning gives the TTFAT, the reasoning tokens and how
// many of the last gaps are the answer's. The answer's TPOT is then
// (E2E − TTFAT) / (answer tokens − 1), with prober's operations.
func answerPhase(rec *reqRec, rs *DetailReasoning, outLen int, hasFirst, hasE2E bool) {
	answer := outLen
	if rs == nil {
		if hasFirst {
			rec.ttfat = rec.ttft
		}
	} else {
		answer = max(outLen-rs.Tokens, 0)
		if rs.TTFAT >= 0 {
			rec.ttfat = rs.TTFAT
		}
		rec.itlAnswer = min(max(rs.AnswerITLs, 0), rec.itlLen)
	}
	if !math.IsNaN(rec.ttfat) && hasE2E && answer >= 2 {
		rec.answerTPOT = prober.TPOTSeconds(rec.e2e, rec.ttfat, answer)
	}
}

// pushSeconds appends a sample given in seconds, as a word when it is a
// whole number of nanoseconds that reads back bit for bit, else as a
// wide value.
func (s *itlStore) pushSeconds(v float64) {
	ns := math.Round(v * 1e9)
	if ns >= 0 && ns < wideBit && time.Duration(ns).Seconds() == v {
		s.push(uint32(ns))
		return
	}
	s.push(wideBit | uint32(len(s.wide)))
	s.wide = append(s.wide, v)
}

// mergedSketches are the statistics of a merge of sketches: the shards'
// sketches added, the concurrency's sum of E2E from each shard's figures,
// and the peaks summed (an upper bound: the shards' peaks need not fall in
// the same second).
type mergedSketches struct {
	ttft, tpot, itl, e2e, queue, e2eQ *Sketch
	// The answer phase's: the shards' answer sketches added, or, for a
	// shard in which nothing reasoned, its TTFT, TPOT and ITL sketches.
	ttfat, answerTPOT, answerITL *Sketch
	e2eSum, peakTok              float64
	peakConc                     int
}

// addAnswer adds a shard's answer-phase sketches. Without reasoning a
// request's TTFAT is its TTFT, its answer TPOT its TPOT and its answer
// gaps all its gaps (prober.Samples), so a shard that kept no answer
// sketches adds those. One difference is left: a success that never
// produced a first token counts in the TTFT sketch as 0 (bench_serving
// keeps such a TTFT as 0) but has no TTFAT; such a success of a shard
// without reasoning then adds a 0 to the merged TTFAT.
func (m *mergedSketches) addAnswer(k *ShardSketches) {
	if m.ttfat == nil {
		m.ttfat, m.answerTPOT, m.answerITL = NewSketch(SketchRelativeError), NewSketch(SketchRelativeError), NewSketch(SketchRelativeError)
	}
	if k.TTFAT == nil {
		m.ttfat.Merge(k.TTFT)
		m.answerTPOT.Merge(k.TPOT)
		m.answerITL.Merge(k.ITL)
		return
	}
	m.ttfat.Merge(k.TTFAT)
	m.answerTPOT.Merge(k.AnswerTPOT)
	m.answerITL.Merge(k.AnswerITL)
}

func (m *mergedSketches) add(reqRec, *itlStore) {}

func (m *mergedSketches) latencies(*itlStore) latencies {
	return latencies{ttft: m.ttft, tpot: m.tpot, itl: m.itl, e2e: m.e2e, queue: m.queue, e2eQ: m.e2eQ,
		ttfat: m.ttfat, answerTPOT: m.answerTPOT, answerITL: m.answerITL,
		e2eSum: m.e2eSum, peakTokens: m.peakTok, peakConcurrent: m.peakConc}
}
