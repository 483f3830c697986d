package bench

import (
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// reqRec is what the accumulator derives from one request for its
// statistics.
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
	// The answer phase (prober.Samples): the time to the first answer
	// token and the answer's TPOT, NaN where undefined.
	ttfat, answerTPOT float64
	itlOff            int
	itlLen            int
	// itlAnswer is how many of the record's inter-token samples, the last
	// ones, are the answer's (prober.ITLGap.Answer): all of them for a
	// request that did not reason.
	itlAnswer int
}

// statistics keeps the latencies of the requests added: every sample
// (exactStats) or a sketch of each list (sketchStats, in constant memory).
type statistics interface {
	// add takes a request's record. Its inter-token samples are in itl at
	// the record's range, the last ones there; add keeps them or drops
	// them (itlStore.truncate).
	add(r reqRec, itl *itlStore)
	// latencies are the distributions and peaks of everything added. It
	// may be called more than once, and ends the adding.
	latencies(itl *itlStore) latencies
}

// distribution is one latency list as the summary reads it.
type distribution interface {
	Stats() Stats // in ms
	Count() int
	// percentile is the value at percentile p (0 to 100), in seconds.
	percentile(p float64) float64
}

// latencies are what a statistics strategy hands the summary.
type latencies struct {
	ttft, tpot, itl, e2e, queue, e2eQ distribution
	ttfat, answerTPOT                 distribution
	// answerITL is the answer's inter-token samples of every success (all
	// of a success that did not reason); it is itl itself when no success
	// reasoned before gaps it measured.
	answerITL distribution
	// e2eSum is the sum of the successes' E2E latencies in seconds, for
	// the concurrency.
	e2eSum         float64
	peakTokens     float64
	peakConcurrent int
}

// byMetric is the distribution of a --percentile-metrics name; an unknown
// name reads as an empty list.
func (l *latencies) byMetric(m string) distribution {
	byName := map[string]distribution{
		MetricTTFT: l.ttft, MetricTPOT: l.tpot, MetricITL: l.itl, MetricE2EL: l.e2e,
		MetricClientQueueTime: l.queue, MetricE2ELIncludingClientQueue: l.e2eQ,
	}
	if d, ok := byName[m]; ok {
		return d
	}
	return exactDist{}
}

// metricStats is a metric's vLLM-style statistics from its distribution.
func metricStats(m string, d distribution, percentiles []float64) MetricStats {
	st := d.Stats()
	ms := MetricStats{Metric: m, Mean: st.Mean, Median: st.Median, Std: st.Std}
	for _, q := range percentiles {
		ms.Percentiles = append(ms.Percentiles, PercentileValue{P: q, Value: d.percentile(q) * 1000})
	}
	return ms
}

// detailSink keeps the per-request arrays of --output-details: in memory
// (memoryDetails), in a temporary file (detailSpool), or not at all
// (noDetails).
type detailSink interface {
	// add keeps request i's row, whose inter-token samples are read from
	// gaps by a sink that keeps them, so that keeping no details costs no
	// copy of them.
	add(i int, row detailRow, gaps itlRange)
	// fill hands the details to the summary, with their times counted
	// from start.
	fill(s *Summary, start time.Time)
}

// Accumulator builds a Summary from Results fed one at a time, so that a
// run's memory does not grow with kept Results. It is not safe for
// concurrent use; prober.Benchmark serialises its OnResult calls.
//
// It composes a statistics strategy (exact or sketch, from Params.Stats)
// and a details sink (memory, spool or none, from Params.Details and
// SpoolDetails); what it counts itself (totals, outcomes, rates, goodput)
// is the same under each.
type Accumulator struct {
	p        Params
	perToken bool
	origin   time.Time

	stats   statistics
	details detailSink
	// itl holds the inter-token samples of the request being added, and
	// of every request before it under exact statistics.
	itl  itlStore
	done bool // a Summary was taken: no more Add

	// requests counts every result added, notStreamed those asked for
	// without streaming.
	requests, notStreamed int
	outcomes              map[prober.Outcome]int
	clocks                map[prober.Clock]int
	good                  int

	// valid counts the answer checks' verdicts.
	valid   Validity
	answers Answers
	// turns counts a conversation's turns apart.
	turns turnTally

	completed, totalIn, totalInText, totalInVision, totalOut, totalRetok int
	// Successes that reasoned before answering, those of them whose
	// reasoning count was counted rather than stated, and the split of
	// the successes' output.
	reasoned, reasoningCounted, totalReasoning, totalAnswer int

	minSched, maxSched, minSent, maxSent time.Time
	nSched, nSent                        int

	start time.Time // what the details' times count from
	cache cacheTally
	batch batchTally
	eng   engineTally
	tput  throughputTally // the throughputs' intervals (ci.go)
}

// NewAccumulator returns an empty Accumulator for a run with parameters p.
func NewAccumulator(p Params) *Accumulator {
	a := &Accumulator{
		p:        p,
		outcomes: make(map[prober.Outcome]int),
		clocks:   make(map[prober.Clock]int),
		// Per token by default; compat keeps bench_serving's split,
		// which depends on the backend.
		perToken: p.PerTokenITL(),
		stats:    &exactStats{bucketConcurrency: p.Compat.BucketConcurrency},
		details:  noDetails{},
		cache:    cacheTally{on: p.CacheReport},
	}
	if p.Stats == StatsSketch {
		a.stats = newSketchStats(p.Compat.BucketConcurrency)
		a.turns.sketch = true
	}
	if p.Details {
		a.details = &memoryDetails{}
		if p.SpoolDetails {
			// Kept in memory when the file cannot be made.
			if sp, err := newDetailSpool(); err == nil {
				a.details = sp
			}
		}
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
	if a.done {
		panic("bench: Accumulator.Add after Summary")
	}
	a.requests++
	a.valid.addChecks(r.Checks)
	a.answers.add(r.Checks)
	if !r.Stream {
		a.notStreamed++
	}
	sm := benchSamples(&r)
	rec := a.record(i, &r, &sm)
	in := inputTokens(&sm, row)
	outLen := 0
	if rec.ok {
		outLen = sm.OutputTokens
		a.countSuccess(rec, &r, in, outLen, row)
		if sm.Reasoning {
			a.reasoned++
			if sm.ReasoningTokensSource == prober.TokenSourceCounted {
				a.reasoningCounted++
			}
		}
		a.totalReasoning += sm.ReasoningTokens
		a.totalAnswer += sm.AnswerTokens
	} else {
		a.outcomes[r.Outcome]++
	}
	a.cache.add(&r, rec.ok, in)
	a.turns.add(&r, rec.ok, rec.ttft, in)
	a.batch.add(rec.ok, row)
	a.eng.add(&r, rec.ok, outLen)
	if r.Clock != "" {
		a.clocks[r.Clock]++
	}
	d := detailRow{inputLen: in, outputLen: outLen, ttft: rec.ttft, times: [4]time.Time{r.Scheduled, r.Sent, r.FirstToken, r.End},
		err: r.Err, outcome: string(r.Outcome), traceID: r.TraceID, server: serverTimingOf(r.Server), reasoning: detailReasoningOf(&sm, rec.itlAnswer),
		checks: checkFailuresOf(r.Checks)}
	if !a.p.DetailsNoTexts {
		d.text = r.GeneratedText
	}
	// The details read the samples before the statistics may drop them.
	a.details.add(i, d, a.itl.of(rec))
	a.stats.add(rec, &a.itl)
}

// ResultSamples are r's samples as the bench table and JSONL report them
// (see benchSamples), for a caller that follows a run as it goes.
func ResultSamples(r *prober.Result) prober.Samples { return benchSamples(r) }

// benchSamples are r's samples as the bench table and JSONL report them.
// Every timing comes from prober's one derivation; the bench only converts
// to seconds. A response that was not streamed has no measured first token,
// so prober leaves its TTFT and TPOT undefined; bench_serving's
// --disable-stream still reports them, taking the whole response as one
// chunk: TTFT is the time to the response (the request's latency) and
// TPOT follows from it. The bench keeps that convention, here and nowhere
// else, by deriving the samples as for a stream of that one chunk, and the
// table says so (Summary.NotStreamed).
func benchSamples(r *prober.Result) prober.Samples {
	if r.Stream {
		return r.Samples()
	}
	one := *r
	one.Stream = true
	return one.Samples()
}

// record is request i's record; its inter-token samples are appended to
// the store, and its times counted into the run's spans.
func (a *Accumulator) record(i int, r *prober.Result, sm *prober.Samples) reqRec {
	rec := reqRec{idx: i, tpot: math.NaN(), ttfat: math.NaN(), answerTPOT: math.NaN()}
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
	rec.itlLen, rec.itlAnswer = a.itl.appendResult(r, !a.perToken)

	if RequestSucceeded(r, a.p.Compat.EmptySuccess) {
		rec.ok = true
		rec.e2e = max(sm.E2E, 0).Seconds()
		if sm.TPOTSeconds >= 0 {
			rec.tpot = sm.TPOTSeconds
		}
		if prober.Defined(sm.TTFAT) {
			rec.ttfat = sm.TTFAT.Seconds()
		}
		if sm.AnswerTPOTSeconds >= 0 {
			rec.answerTPOT = sm.AnswerTPOTSeconds
		}
		rec.firstTok = 1
		if a.perToken {
			rec.firstTok = max(sm.FirstTokens, 1)
		}
		if a.p.Embedding {
			rec.firstTok = 0 // an embedding generates no token for the peak to count
		}
	}
	return rec
}

// countSuccess adds a success to the run's totals and goodput.
func (a *Accumulator) countSuccess(rec reqRec, r *prober.Result, in, outLen int, row datasets.Prompt) {
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
	if !r.End.IsZero() && !a.origin.IsZero() {
		a.tput.add(r.End.Sub(a.origin).Seconds(), total, outLen)
	}
	if a.p.CountTokens != nil {
		a.totalRetok += a.p.CountTokens(r.GeneratedText)
	}
	if a.p.Goodput.good(rec) {
		a.good++
	}
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
// ends the adding: exact statistics sort the inter-token samples in place
// rather than copy them, the run's largest data.
// Throughputs are 0 for a zero duration, where bench_serving divides by
// zero.
func (a *Accumulator) Summary(duration time.Duration) (Summary, error) {
	p := a.p
	if a.completed == 0 && p.Compat.AllFailedError {
		return Summary{}, ErrAllFailed
	}
	a.done = true
	l := a.stats.latencies(&a.itl)

	dur := duration.Seconds()
	per := func(x float64) float64 {
		if dur <= 0 {
			return 0
		}
		return x / dur
	}
	s := Summary{
		Embedding: p.Embedding,

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
		E2ELatency:                   l.e2e.Stats(),
		TTFT:                         l.ttft.Stats(),
		TPOT:                         l.tpot.Stats(),
		ITL:                          l.itl.Stats(),
		Concurrency:                  per(l.e2eSum),
		MaxOutputTokensPerS:          l.peakTokens,
		MaxConcurrentRequests:        l.peakConcurrent,
		ITLSamples:                   l.itl.Count(),
		TPOTSamples:                  l.tpot.Count(),
		Stats:                        p.Stats,

		Requests:             a.requests,
		NotStreamed:          a.notStreamed,
		Valid:                a.valid,
		Answers:              a.answers,
		NotSent:              max(p.Planned-a.requests, 0),
		Stopped:              p.Stopped,
		Failed:               a.requests - a.completed,
		ScheduledRequestRate: spanRate(a.nSched, a.minSched, a.maxSched),
		ActualRequestRate:    spanRate(a.nSent, a.minSent, a.maxSent),
		ClientQueue:          l.queue.Stats(),
		E2EIncludingQueue:    l.e2eQ.Stats(),
		Compat:               p.Compat,
	}
	s.echoParams(&p)
	if a.reasoned > 0 {
		// Only a run that reasoned: the summary of any other run, and its
		// table and record, stay as they were.
		s.Reasoning = &ReasoningSummary{
			Requests: a.reasoned, CountedRequests: a.reasoningCounted,
			ReasoningTokens: a.totalReasoning, AnswerTokens: a.totalAnswer,
			TTFAT: l.ttfat.Stats(), AnswerTPOT: l.answerTPOT.Stats(), AnswerITL: l.answerITL.Stats(),
		}
		if ps := itlPercentiles(p.PercentileMetrics, p.MetricPercentiles); ps != nil {
			s.Reasoning.AnswerITLPercentiles = metricStats(MetricITL, l.answerITL, ps).Percentiles
		}
	}
	if len(a.outcomes) > 0 {
		s.Outcomes = maps.Clone(a.outcomes)
	}
	if len(a.clocks) > 0 {
		s.Clocks = maps.Clone(a.clocks)
	}
	s.Engine = a.eng.notes()
	if len(p.Goodput) > 0 {
		s.Goodput = p.Goodput
		s.GoodRequests = a.good
		s.RequestGoodput = per(float64(a.good))
	}
	for _, m := range p.PercentileMetrics {
		s.Percentiles = append(s.Percentiles, metricStats(m, l.byMetric(m), p.MetricPercentiles))
	}
	start := a.start
	if start.IsZero() {
		start = a.minSent // the first request sent, whatever the order of Add
	}
	s.CI = a.ci(l, start, &s)
	a.details.fill(&s, start)
	a.cache.fill(&s, p.CostPerHour)
	a.turns.fill(&s)
	s.EmbeddingBatch = a.batch.summary()
	s.Shard = shardOf(p.Shard, start, a.stats, a.reasoned > 0)
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
