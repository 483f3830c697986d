package bench

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// Params are the run's parameters that the summary echoes or depends on.
// Field names follow bench_serving's flags.
type Params struct {
	Backend string
	// SplitChunkGaps and Embedding are the backend's traits
	// (prober.BackendInfo).
	SplitChunkGaps bool
	Embedding      bool
	DatasetName    string
	// RequestRate is the configured rate in req/s; +Inf for a burst.
	RequestRate float64
	// UseTraceTimestamps prints and writes the rate as "trace".
	UseTraceTimestamps bool
	MaxConcurrency     int // 0: not set
	SharegptOutputLen  int // 0: not set
	RandomInputLen     int
	RandomOutputLen    int
	RandomRangeRatio   float64
	Tag                string // "": not set
	// NumPrompts, ImageCount and ImageResolution only name the default
	// output file.
	NumPrompts      int
	ImageCount      int
	ImageResolution string
	// ServerInfo is the raw JSON of GET /server_info, or nil.
	ServerInfo json.RawMessage
	// AcceptLength is the speculative-decoding accept length, if known.
	AcceptLength *float64
	// Duration is the benchmark duration (prober.BenchmarkRun.Duration).
	// Summarize reads it; Accumulator.Summary takes it as an argument.
	Duration time.Duration

	Compat Compat
	// Goodput holds vLLM's --goodput SLOs; empty means not configured.
	Goodput Goodput
	// PercentileMetrics and MetricPercentiles are vLLM's
	// --percentile-metrics and --metric-percentiles; when PercentileMetrics
	// is empty no extra percentiles are reported.
	PercentileMetrics []string
	MetricPercentiles []float64
	// CountTokens counts the tokens of a completion without special tokens,
	// for total_output_tokens_retokenized. Nil leaves that total at 0. It
	// must handle its own errors.
	CountTokens func(text string) int
	// Details keeps the per-request arrays of --output-details.
	Details bool
	// DetailsNoTexts leaves the generated texts out of the details: a
	// report or a plot needs the times, not a copy of every output.
	DetailsNoTexts bool
	// SpoolDetails keeps the details in a temporary file instead of
	// memory, for a record to be written from (Summary.WriteRecord):
	// Summary.Details is then nil and Summary.SpooledDetails set. If the
	// file cannot be made, they are kept in memory.
	SpoolDetails bool
	// Stats is StatsExact ("" too) or StatsSketch: every latency then goes
	// into a Sketch and no record is kept per request, so that memory does
	// not grow with the requests of a run (see sketches).
	Stats string
	// Planned is how many prompts the run prepared; those beyond the
	// requests added were never sent. 0: unknown.
	Planned int
	// Stopped says why the run ended early: StoppedMaxDuration,
	// StoppedInterrupted, StoppedConversations, or "" when every prompt
	// was sent.
	Stopped string
}

// Why a run ended before sending every prompt. StoppedConversations: the
// run went to its end, but conversations whose round failed sent no
// further rounds.
const (
	StoppedMaxDuration   = "max_duration"
	StoppedInterrupted   = "interrupted"
	StoppedConversations = "failed_conversation_rounds"
)

// Rate is a request rate in req/s that may be infinite. Its JSON form is a
// number, or the string "inf" (as vLLM writes an infinite rate).
type Rate float64

// MarshalJSON implements json.Marshaler.
func (r Rate) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(r), 1) {
		return []byte(`"inf"`), nil
	}
	return json.Marshal(float64(r))
}

// UnmarshalJSON implements json.Unmarshaler; it also accepts "Infinity".
func (r *Rate) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s == "inf" || s == "Infinity" {
			*r = Rate(math.Inf(1))
			return nil
		}
		return fmt.Errorf("invalid rate %q", s)
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*r = Rate(f)
	return nil
}

// MetricStats are vLLM-style statistics for one --percentile-metrics metric,
// in milliseconds.
type MetricStats struct {
	Metric      string            `json:"metric"`
	Mean        float64           `json:"mean"`
	Median      float64           `json:"median"`
	Std         float64           `json:"std"`
	Percentiles []PercentileValue `json:"percentiles"`
}

// PercentileValue is one requested percentile.
type PercentileValue struct {
	P     float64 `json:"p"`
	Value float64 `json:"value"`
}

// Details are bench_serving's --output-details arrays, in dispatch order,
// one entry per request including failures.
type Details struct {
	InputLens      []int       `json:"input_lens"`
	OutputLens     []int       `json:"output_lens"` // 0 for failures
	TTFTs          []float64   `json:"ttfts"`       // seconds
	ITLs           [][]float64 `json:"itls"`        // seconds
	GeneratedTexts []string    `json:"generated_texts"`
	Errors         []string    `json:"errors"`
	// servingprobe's: each request's scheduled, sent, first-token and end
	// times in seconds from the run's start (-1 where it has none: a
	// failure before its first token), and its outcome, so that a report
	// can be drawn from the JSONL alone.
	ScheduledTimes  []float64 `json:"scheduled_times"`
	SentTimes       []float64 `json:"sent_times"`
	FirstTokenTimes []float64 `json:"first_token_times"`
	EndTimes        []float64 `json:"end_times"`
	Outcomes        []string  `json:"request_outcomes"`
}

// Summary is a benchmark's result: bench_serving's figures (names follow
// its JSONL keys; latency Stats are in ms) and servingprobe's extras. It
// encodes to and from JSON with encoding/json for the HTTP API; the
// bench_serving JSONL form comes from Record.
type Summary struct {
	Tag                string          `json:"tag,omitempty"`
	Backend            string          `json:"backend"`
	DatasetName        string          `json:"dataset_name"`
	RequestRate        Rate            `json:"request_rate"`
	UseTraceTimestamps bool            `json:"use_trace_timestamps,omitempty"`
	MaxConcurrency     int             `json:"max_concurrency,omitempty"`
	SharegptOutputLen  int             `json:"sharegpt_output_len,omitempty"`
	RandomInputLen     int             `json:"random_input_len"`
	RandomOutputLen    int             `json:"random_output_len"`
	RandomRangeRatio   float64         `json:"random_range_ratio"`
	ServerInfo         json.RawMessage `json:"server_info,omitempty"`
	AcceptLength       *float64        `json:"accept_length,omitempty"`

	Duration                     float64 `json:"duration"` // seconds
	Completed                    int     `json:"completed"`
	TotalInputTokens             int     `json:"total_input_tokens"`
	TotalInputTextTokens         int     `json:"total_input_text_tokens"`
	TotalInputVisionTokens       int     `json:"total_input_vision_tokens"`
	TotalOutputTokens            int     `json:"total_output_tokens"`
	TotalOutputTokensRetokenized int     `json:"total_output_tokens_retokenized"`
	RequestThroughput            float64 `json:"request_throughput"`
	InputThroughput              float64 `json:"input_throughput"`
	OutputThroughput             float64 `json:"output_throughput"`
	OutputThroughputRetokenized  float64 `json:"output_throughput_retokenized"`
	TotalThroughput              float64 `json:"total_throughput"`
	TotalThroughputRetokenized   float64 `json:"total_throughput_retokenized"`
	E2ELatency                   Stats   `json:"e2e_latency_ms"`
	TTFT                         Stats   `json:"ttft_ms"`
	TPOT                         Stats   `json:"tpot_ms"`
	ITL                          Stats   `json:"itl_ms"`
	Concurrency                  float64 `json:"concurrency"`
	MaxOutputTokensPerS          float64 `json:"max_output_tokens_per_s"`
	MaxConcurrentRequests        int     `json:"max_concurrent_requests"`
	// ITLSamples and TPOTSamples are how many values the ITL and TPOT
	// statistics are over (an SLO says whether its percentile has enough).
	ITLSamples  int `json:"itl_samples"`
	TPOTSamples int `json:"tpot_samples"`
	// Stats is StatsSketch when the latency percentiles come from
	// sketches (within SketchRelativeError) and the peaks from a 10 ms
	// grid, "" when they are exact.
	Stats string `json:"stats,omitempty"`

	// Requests counts every result, Failed those that did not succeed, by
	// outcome in Outcomes. NotSent counts the prompts never sent, because
	// the run stopped early for the reason in Stopped.
	Requests int                    `json:"requests"`
	NotSent  int                    `json:"not_sent,omitempty"`
	Stopped  string                 `json:"stopped,omitempty"`
	Failed   int                    `json:"failed"`
	Outcomes map[prober.Outcome]int `json:"outcomes,omitempty"`
	// Clocks counts the results by the clock that stamped their arrival
	// times (prober.Clock): kernel receive times, the process's clock, or
	// both. Results that read no response are not counted.
	Clocks map[prober.Clock]int `json:"clocks,omitempty"`
	// ScheduledRequestRate is the pacer's realised rate, (n-1) over the span
	// of Scheduled times; ActualRequestRate the same over Sent times. Both
	// are 0 with fewer than two requests and +Inf for a burst.
	ScheduledRequestRate Rate `json:"scheduled_request_rate"`
	ActualRequestRate    Rate `json:"actual_request_rate"`
	// ClientQueue is Sent-Scheduled over every request that was sent;
	// E2EIncludingQueue is End-Scheduled over successes (the latency a user
	// of a saturated client would see, vllm-project/vllm#54101).
	ClientQueue       Stats `json:"client_queue_ms"`
	E2EIncludingQueue Stats `json:"e2e_latency_including_client_queue_ms"`
	// Goodput, when configured: requests meeting every SLO, per second.
	Goodput        Goodput       `json:"goodput,omitempty"`
	GoodRequests   int           `json:"good_requests,omitempty"`
	RequestGoodput float64       `json:"request_goodput,omitempty"`
	Percentiles    []MetricStats `json:"percentiles,omitempty"`
	Compat         Compat        `json:"compat"`
	Details        *Details      `json:"details,omitempty"`
	// SpooledDetails are the details kept on disk (Params.SpoolDetails),
	// which WriteRecord and AppendJSONL write out; nil otherwise.
	SpooledDetails *SpooledDetails `json:"-"`
	// Sweep says which point of a sweep or SLO search the run was; nil for
	// a single run.
	Sweep *SweepInfo `json:"sweep,omitempty"`
}

// ErrAllFailed is returned by Summary under CompatAllFailedError when no
// request succeeded.
var ErrAllFailed = errors.New("all requests failed")

// reqRec is what the accumulator keeps of one request.
type reqRec struct {
	idx      int
	ok       bool
	queued   bool    // Sent and Scheduled both known
	start    float64 // Sent, seconds from the accumulator's origin
	queue    float64 // Sent-Scheduled, seconds
	ttft     float64
	e2e      float64
	tpot     float64 // NaN when OutputTokens <= 1
	firstTok int     // tokens counted at start+ttft for the peak
	itlOff   int
	itlLen   int
}

// Accumulator builds a Summary from Results fed one at a time, so that a
// run's memory does not grow with kept Results. It is not safe for
// concurrent use; prober.Benchmark serialises its OnResult calls.
type Accumulator struct {
	p        Params
	perToken bool
	origin   time.Time

	recs     []reqRec
	itl      itlStore
	outcomes map[prober.Outcome]int
	clocks   map[prober.Clock]int
	good     int

	completed, totalIn, totalInText, totalInVision, totalOut, totalRetok int

	minSched, maxSched, minSent, maxSent time.Time
	nSched, nSent                        int

	details *Details
	spool   *detailSpool   // the details, under SpoolDetails
	sk      *sketches      // under StatsSketch, instead of recs and the samples in itl
	final   *final         // what the first Summary computed from itl, which it sorted
	times   [][4]time.Time // the details' scheduled, sent, first-token and end times
	start   time.Time      // what the details' times count from
}

// final is what a summary computes from the inter-token samples in their
// order, before it sorts them in place.
type final struct {
	itl            Stats
	n              int
	sorted         func(int) float64
	peakTok        float64
	peakConcurrent int
}

// NewAccumulator returns an empty Accumulator for a run with parameters p.
func NewAccumulator(p Params) *Accumulator {
	a := &Accumulator{
		p:        p,
		outcomes: make(map[prober.Outcome]int),
		clocks:   make(map[prober.Clock]int),
		// sglang's native /generate splits chunk gaps per token, its
		// OpenAI paths do not; compat keeps exactly that split.
		perToken: !p.Compat.ChunkITL || p.Backend == "sglang" || p.Backend == "sglang-native",
	}
	if p.Details {
		a.details = &Details{}
		if p.SpoolDetails {
			if sp, err := newDetailSpool(); err == nil {
				a.details, a.spool = nil, sp
			}
		}
	}
	if p.Stats == StatsSketch {
		a.sk = newSketches()
	}
	return a
}

// SetStart sets the instant the details' times count from: the start of
// the measured run. Without it they count from the first request sent.
func (a *Accumulator) SetStart(t time.Time) { a.start = t }

// Stop records why the run ended before sending every prompt
// (StoppedMaxDuration, StoppedInterrupted); the summary reports it.
func (a *Accumulator) Stop(reason string) { a.p.Stopped = reason }

// Add records request i (its index in dispatch order) and the dataset row
// it was built from. Each index must be added once, and none after
// Summary.
func (a *Accumulator) Add(i int, r prober.Result, row datasets.Prompt) {
	if a.final != nil {
		panic("bench: Accumulator.Add after Summary")
	}
	rec := reqRec{idx: i, tpot: math.NaN()}
	// Every timing comes from prober's one derivation; the bench only
	// converts to seconds.
	sm := r.Samples()
	if !r.Sent.IsZero() {
		if a.origin.IsZero() {
			a.origin = r.Sent
		}
		rec.start = r.Sent.Sub(a.origin).Seconds()
		a.minSent, a.maxSent = minTime(a.minSent, r.Sent, a.nSent), maxTime(a.maxSent, r.Sent, a.nSent)
		a.nSent++
		if prober.Defined(sm.Queue) {
			rec.queued = true
			rec.queue = sm.Queue.Seconds()
		}
	}
	if !r.Scheduled.IsZero() {
		a.minSched, a.maxSched = minTime(a.minSched, r.Scheduled, a.nSched), maxTime(a.maxSched, r.Scheduled, a.nSched)
		a.nSched++
	}
	// An undefined TTFT stays 0, as bench_serving keeps it for a success
	// that never produced text.
	if prober.Defined(sm.TTFT) {
		rec.ttft = sm.TTFT.Seconds()
	}
	rec.itlOff = a.itl.len()
	rec.itlLen = a.itl.appendResult(&r, !a.perToken)

	in := inputTokens(&sm, row)
	outLen := 0
	// sglang counts any 200 stream read without an exception as a success,
	// even one with no text; its TTFT then stays 0.
	emptyOK := a.p.Compat.EmptySuccess && r.Outcome == prober.OutcomeEmptyOutput
	if r.Outcome == prober.OutcomeSuccess || emptyOK {
		rec.ok = true
		outLen = sm.OutputTokens
		rec.e2e = max(sm.E2E, 0).Seconds()
		if sm.TPOTSeconds >= 0 {
			rec.tpot = sm.TPOTSeconds
		}
		rec.firstTok = 1
		if a.perToken {
			rec.firstTok = max(sm.FirstTokens, 1)
		}
		a.completed++
		total := in
		if a.p.Compat.DatasetInputTokens {
			total = row.PromptLen
		}
		a.totalIn += total
		text, vision := row.TextPromptLen, row.VisionPromptLen
		if text == 0 && vision == 0 {
			text = total // text-only rows leave the split unset
		}
		a.totalInText += text
		a.totalInVision += vision
		a.totalOut += outLen
		if a.p.CountTokens != nil {
			a.totalRetok += a.p.CountTokens(r.GeneratedText)
		}
		if a.p.Goodput.good(rec) {
			a.good++
		}
	} else {
		a.outcomes[r.Outcome]++
	}

	if r.Clock != "" {
		a.clocks[r.Clock]++
	}

	if a.spool != nil {
		row := spoolRow{inputLen: in, outputLen: outLen, ttft: rec.ttft, times: [4]time.Time{r.Scheduled, r.Sent, r.FirstToken, r.End},
			itls: a.itl.values(rec.itlOff, rec.itlLen), err: r.Err, outcome: string(r.Outcome)}
		if !a.p.DetailsNoTexts {
			row.text = r.GeneratedText
		}
		a.spool.add(i, row)
	}
	if d := a.details; d != nil {
		for len(d.InputLens) <= i {
			d.InputLens = append(d.InputLens, 0)
			d.OutputLens = append(d.OutputLens, 0)
			d.TTFTs = append(d.TTFTs, 0)
			d.ITLs = append(d.ITLs, nil)
			d.GeneratedTexts = append(d.GeneratedTexts, "")
			d.Errors = append(d.Errors, "")
			d.Outcomes = append(d.Outcomes, "")
		}
		for len(a.times) <= i {
			a.times = append(a.times, [4]time.Time{})
		}
		// Made relative in Summary, once the run's start is known.
		a.times[i] = [4]time.Time{r.Scheduled, r.Sent, r.FirstToken, r.End}
		d.Outcomes[i] = string(r.Outcome)
		d.InputLens[i] = in
		d.OutputLens[i] = outLen
		d.TTFTs[i] = rec.ttft
		d.ITLs[i] = a.itl.values(rec.itlOff, rec.itlLen)
		if !a.p.DetailsNoTexts {
			d.GeneratedTexts[i] = r.GeneratedText
		}
		d.Errors[i] = r.Err
	}
	if k := a.sk; k != nil {
		// Kept in the sketches only: no record, and the store is reused
		// by the next request.
		if rec.ok {
			gaps := func(yield func(float64) bool) {
				for j := range rec.itlLen {
					if !yield(a.itl.at(rec.itlOff + j)) {
						return
					}
				}
			}
			for g := range gaps {
				k.itl.Add(g)
			}
			k.peaks.add(rec, rec.firstTok, gaps, a.p.Compat.BucketConcurrency)
		}
		k.add(rec)
		a.itl.truncate(rec.itlOff)
		return
	}
	if !rec.ok {
		// Failures keep no ITL samples except in the details.
		a.itl.truncate(rec.itlOff)
		rec.itlLen = 0
	}
	a.recs = append(a.recs, rec)
}

func minTime(cur, t time.Time, n int) time.Time {
	if n == 0 || t.Before(cur) {
		return t
	}
	return cur
}

func maxTime(cur, t time.Time, n int) time.Time {
	if n == 0 || t.After(cur) {
		return t
	}
	return cur
}

// inputTokens is a request's prompt length: the server's count where it
// stated one (it includes the chat template, which the dataset's does
// not), else the dataset row's. input_lens and, by default,
// total_input_tokens both use it, so that they add up.
func inputTokens(sm *prober.Samples, row datasets.Prompt) int {
	switch sm.InputTokensSource {
	case prober.TokenSourceUsage, prober.TokenSourceMetaInfo:
		if sm.InputTokens > 0 {
			return sm.InputTokens
		}
	}
	return row.PromptLen
}

// Summarize computes the summary of results, where results[i] was built
// from rows[i], with the duration in p.Duration.
func Summarize(results []prober.Result, rows []datasets.Prompt, p Params) (Summary, error) {
	if len(rows) < len(results) {
		return Summary{}, fmt.Errorf("summarize: %d results but %d dataset rows", len(results), len(rows))
	}
	a := NewAccumulator(p)
	for i, r := range results {
		a.Add(i, r, rows[i])
	}
	return a.Summary(p.Duration)
}

// Summary computes the summary of everything added, for a run that took
// duration (bench_serving's dur_s). It may be called more than once, but
// ends the adding: it sorts the inter-token samples in place rather than
// copy them, the run's largest data.
// Throughputs are 0 for a zero duration, where bench_serving divides by
// zero.
func (a *Accumulator) Summary(duration time.Duration) (Summary, error) {
	p := a.p
	if a.completed == 0 && p.Compat.AllFailedError {
		return Summary{}, ErrAllFailed
	}
	recs := a.recs
	slices.SortFunc(recs, func(x, y reqRec) int { return cmp.Compare(x.idx, y.idx) })

	var ttfts, tpots, e2es, queues, e2eQ []float64
	nITL := 0
	for _, r := range recs {
		if r.queued {
			queues = append(queues, r.queue)
		}
		if !r.ok {
			continue
		}
		ttfts = append(ttfts, r.ttft)
		e2es = append(e2es, r.e2e)
		if !math.IsNaN(r.tpot) {
			tpots = append(tpots, r.tpot)
		}
		nITL += r.itlLen
		if r.queued {
			e2eQ = append(e2eQ, r.e2e+r.queue)
		}
	}

	if a.final == nil {
		f := &final{}
		// In dispatch order, for NumPy's order-dependent sums, then
		// sorted in place for the order statistics.
		if a.sk != nil {
			f.peakTok, f.peakConcurrent = a.sk.peaks.result(p.Compat.BucketConcurrency)
			f.itl = a.sk.itl.Stats()
		} else {
			f.peakTok, f.peakConcurrent = a.peaks(recs)
		}
		if a.sk == nil && nITL > 0 {
			m := meanAt(nITL, a.itl.cursor(recs).next)
			sd := stdAround(nITL, m, a.itl.cursor(recs).next)
			f.n, f.sorted = a.itl.sortInPlace()
			f.itl = statsOf(m, sd, f.n, f.sorted)
		}
		a.final = f
	}
	itlSt, nSortedITL, sortedITL := a.final.itl, a.final.n, a.final.sorted

	dur := duration.Seconds()
	per := func(x float64) float64 {
		if dur <= 0 {
			return 0
		}
		return x / dur
	}
	s := Summary{
		Tag:                p.Tag,
		Backend:            p.Backend,
		DatasetName:        p.DatasetName,
		RequestRate:        Rate(p.RequestRate),
		UseTraceTimestamps: p.UseTraceTimestamps,
		MaxConcurrency:     p.MaxConcurrency,
		SharegptOutputLen:  p.SharegptOutputLen,
		RandomInputLen:     p.RandomInputLen,
		RandomOutputLen:    p.RandomOutputLen,
		RandomRangeRatio:   p.RandomRangeRatio,
		ServerInfo:         p.ServerInfo,
		AcceptLength:       p.AcceptLength,

		Duration:                     dur,
		Completed:                    a.completed,
		TotalInputTokens:             a.totalIn,
		TotalInputTextTokens:         a.totalInText,
		TotalInputVisionTokens:       a.totalInVision,
		TotalOutputTokens:            a.totalOut,
		TotalOutputTokensRetokenized: a.totalRetok,
		RequestThroughput:            per(float64(a.completed)),
		InputThroughput:              per(float64(a.totalIn)),
		OutputThroughput:             per(float64(a.totalOut)),
		OutputThroughputRetokenized:  per(float64(a.totalRetok)),
		TotalThroughput:              per(float64(a.totalIn + a.totalOut)),
		TotalThroughputRetokenized:   per(float64(a.totalIn + a.totalRetok)),
		E2ELatency:                   ComputeStats(e2es),
		TTFT:                         ComputeStats(ttfts),
		TPOT:                         ComputeStats(tpots),
		ITL:                          itlSt,
		Concurrency:                  per(pairwiseSum(e2es)),
		ITLSamples:                   nSortedITL,
		Stats:                        p.Stats,
		TPOTSamples:                  len(tpots),

		Requests:             len(recs),
		Stopped:              p.Stopped,
		ScheduledRequestRate: spanRate(a.nSched, a.minSched, a.maxSched),
		ActualRequestRate:    spanRate(a.nSent, a.minSent, a.maxSent),
		ClientQueue:          ComputeStats(queues),
		E2EIncludingQueue:    ComputeStats(e2eQ),
		Compat:               p.Compat,
	}
	if k := a.sk; k != nil {
		s.E2ELatency, s.TTFT, s.TPOT = k.e2e.Stats(), k.ttft.Stats(), k.tpot.Stats()
		s.ClientQueue, s.E2EIncludingQueue = k.queue.Stats(), k.e2eQ.Stats()
		s.Concurrency = per(k.sum())
		s.ITLSamples, s.TPOTSamples = k.itl.Count(), k.tpot.Count()
		s.Requests = k.requests
	}
	s.NotSent = max(p.Planned-s.Requests, 0)
	s.Failed = s.Requests - a.completed
	if len(a.outcomes) > 0 {
		s.Outcomes = make(map[prober.Outcome]int, len(a.outcomes))
		for k, v := range a.outcomes {
			s.Outcomes[k] = v
		}
	}
	if len(a.clocks) > 0 {
		s.Clocks = maps.Clone(a.clocks)
	}
	s.MaxOutputTokensPerS, s.MaxConcurrentRequests = a.final.peakTok, a.final.peakConcurrent
	if len(p.Goodput) > 0 {
		s.Goodput = p.Goodput
		s.GoodRequests = a.good
		s.RequestGoodput = per(float64(a.good))
	}
	lists := map[string][]float64{
		MetricTTFT: ttfts, MetricTPOT: tpots, MetricE2EL: e2es,
		MetricClientQueueTime: queues, MetricE2ELIncludingClientQueue: e2eQ,
	}
	for _, m := range p.PercentileMetrics {
		v := lists[m]
		if a.sk != nil {
			s.Percentiles = append(s.Percentiles, metricStats(m, a.sk.byMetric(m), p.MetricPercentiles))
			continue
		}
		ms := MetricStats{Metric: m}
		n, at := len(v), func(i int) float64 { return v[i] }
		if m == MetricITL {
			// Sorted in place by its stats; its mean and std were taken
			// before, in dispatch order, as here for the other lists.
			ms.Mean, ms.Std = s.ITL.Mean, s.ITL.Std
			n, at = nSortedITL, sortedITL
		} else {
			ms.Mean, ms.Std = mean(v)*1000, std(v)*1000
			if !slices.IsSorted(v) {
				sorted := slices.Sorted(slices.Values(v))
				at = func(i int) float64 { return sorted[i] }
			}
		}
		ms.Median = medianAt(n, at) * 1000
		for _, q := range p.MetricPercentiles {
			ms.Percentiles = append(ms.Percentiles, PercentileValue{P: q, Value: percentileAt(n, at, q) * 1000})
		}
		s.Percentiles = append(s.Percentiles, ms)
	}
	start := a.start
	if start.IsZero() {
		start = a.minSent // the first request sent, whatever the order of Add
	}
	if a.spool != nil {
		s.SpooledDetails = &SpooledDetails{sp: a.spool, n: len(a.spool.offsets), start: start}
	}
	if a.details != nil {
		d := *a.details
		rel := func(t time.Time) float64 {
			if t.IsZero() || start.IsZero() {
				return -1
			}
			return t.Sub(start).Seconds()
		}
		n := len(a.times)
		d.ScheduledTimes, d.SentTimes, d.FirstTokenTimes, d.EndTimes = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i, ts := range a.times {
			d.ScheduledTimes[i], d.SentTimes[i], d.FirstTokenTimes[i], d.EndTimes[i] = rel(ts[0]), rel(ts[1]), rel(ts[2]), rel(ts[3])
		}
		s.Details = &d
	}
	return s, nil
}

// spanRate is (n-1) requests over the span from first to last.
func spanRate(n int, first, last time.Time) Rate {
	if n < 2 {
		return 0
	}
	span := last.Sub(first).Seconds()
	if span <= 0 {
		return Rate(math.Inf(1))
	}
	return Rate(float64(n-1) / span)
}

// peaks computes max_output_tokens_per_s and max_concurrent_requests.
//
// Tokens: bench_serving's 1-second buckets from the earliest start of a
// success, one count at start+ttft and one at each cumulative ITL. With
// per-token ITL that counts tokens; bench_serving on OpenAI paths counts
// chunks (sgl-project/sglang#33193), which CompatChunkITL restores.
//
// Concurrency: by default the exact maximum of requests in flight, a sweep
// over [start, end) with departures first at equal times, as vLLM. With
// CompatBucketConcurrency, bench_serving's count of requests touching each
// whole second, which overstates it (a burst of 50 through 8 slots gives 50).
func (a *Accumulator) peaks(recs []reqRec) (float64, int) {
	var t0, tEnd float64
	n := 0
	for _, r := range recs {
		if !r.ok {
			continue
		}
		if n == 0 || r.start < t0 {
			t0 = r.start
		}
		if end := r.start + r.e2e; n == 0 || end > tEnd {
			tEnd = end
		}
		n++
	}
	if n == 0 {
		return 0, 0
	}
	buckets := int(math.Ceil(tEnd-t0)) + 1
	tokens := make([]int, buckets)
	var conc []int
	if a.p.Compat.BucketConcurrency {
		conc = make([]int, buckets)
	}
	type edge struct {
		t     float64
		delta int
	}
	var edges []edge
	if conc == nil {
		edges = make([]edge, 0, 2*n)
	}
	add := func(t float64, k int) {
		if b := int(t - t0); b >= 0 && b < buckets {
			tokens[b] += k
		}
	}
	for _, r := range recs {
		if !r.ok {
			continue
		}
		cur := r.start + r.ttft
		add(cur, r.firstTok)
		for k := range r.itlLen {
			cur += a.itl.at(r.itlOff + k)
			add(cur, 1)
		}
		if conc != nil {
			for sec := int(r.start - t0); sec < min(int(r.start+r.e2e-t0)+1, buckets); sec++ {
				conc[sec]++
			}
		} else {
			edges = append(edges, edge{r.start, +1}, edge{r.start + r.e2e, -1})
		}
	}
	peakConc := 0
	if conc != nil {
		peakConc = slices.Max(conc)
	} else {
		slices.SortFunc(edges, func(x, y edge) int {
			if c := cmp.Compare(x.t, y.t); c != 0 {
				return c
			}
			return cmp.Compare(x.delta, y.delta) // -1 (departure) first
		})
		cur := 0
		for _, e := range edges {
			cur += e.delta
			peakConc = max(peakConc, cur)
		}
	}
	return float64(slices.Max(tokens)), peakConc
}
