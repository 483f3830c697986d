package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// Params are the run's parameters that the summary echoes or depends on.
// Field names follow bench_serving's flags, and so do the JSON keys, which
// are a bench window's body keys (runner.Spec embeds Params, so that a
// parameter the record echoes is declared here once); fields that are no
// flag have none.
type Params struct {
	// Backend names the backend in the table, the record and the default
	// output file; what the summary does differently for a backend comes
	// from the trait fields below, which the caller fills from its
	// prober.BackendInfo.
	Backend string `json:"backend"`
	// Dataset is --dataset-name.
	Dataset string `json:"dataset_name"`
	// RequestRate is the configured rate in req/s; +Inf for a burst.
	RequestRate float64 `json:"request_rate"`
	// UseTraceTimestamps prints and writes the rate as "trace".
	UseTraceTimestamps bool `json:"use_trace_timestamps"`
	MaxConcurrency     int  `json:"max_concurrency"` // 0: not set
	// Options are the dataset's flags. The record echoes
	// SharegptOutputLen (0: not set) and the Random* lengths; ImageCount
	// and ImageResolution only name the default output file.
	datasets.Options
	Tag string `json:"tag"` // "": not set
	// NumPrompts only names the default output file.
	NumPrompts int `json:"num_prompts"`
	// ServerInfo is the raw JSON of GET /server_info, or nil.
	ServerInfo json.RawMessage `json:"-"`
	// AcceptLength is the speculative-decoding accept length, if known.
	AcceptLength *float64 `json:"-"`
	// Duration is the benchmark duration (prober.BenchmarkRun.Duration).
	// Summarize reads it; Accumulator.Summary takes it as an argument.
	Duration time.Duration `json:"-"`

	// SplitChunkGaps: bench_serving splits a multi-token chunk's gap
	// evenly over its tokens for this backend even under --compat
	// chunk-itl (it does on its native /generate path, not on its OpenAI
	// paths), and counts the first chunk's tokens at TTFT for the peak.
	SplitChunkGaps bool `json:"-"`
	// Embedding: the backend returns embeddings, so bench_serving's table
	// leaves out the output-token rows and the TTFT, TPOT and ITL
	// sections.
	Embedding bool `json:"-"`

	Compat Compat `json:"compat"`
	// Goodput holds vLLM's --goodput SLOs; empty means not configured.
	Goodput Goodput `json:"goodput"`
	// PercentileMetrics and MetricPercentiles are vLLM's
	// --percentile-metrics and --metric-percentiles; when PercentileMetrics
	// is empty no extra percentiles are reported.
	PercentileMetrics []string  `json:"percentile_metrics"`
	MetricPercentiles []float64 `json:"metric_percentiles"`
	// CountTokens counts the tokens of a completion without special tokens,
	// for total_output_tokens_retokenized. Nil leaves that total at 0. It
	// must handle its own errors.
	CountTokens func(text string) int `json:"-"`
	// Details keeps the per-request arrays of --output-details.
	Details bool `json:"-"`
	// DetailsNoTexts leaves the generated texts out of the details: a
	// report or a plot needs the times, not a copy of every output.
	DetailsNoTexts bool `json:"-"`
	// SpoolDetails keeps the details in a temporary file instead of
	// memory, for a record to be written from (Summary.WriteRecord):
	// Summary.Details is then nil and Summary.SpooledDetails set. If the
	// file cannot be made, they are kept in memory.
	SpoolDetails bool `json:"-"`
	// Stats is StatsExact ("" too) or StatsSketch: every latency then goes
	// into a Sketch and no record is kept per request, so that memory does
	// not grow with the requests of a run (see sketches).
	Stats string `json:"stats"`
	// Planned is how many prompts the run prepared; those beyond the
	// requests added were never sent. 0: unknown.
	Planned int `json:"-"`
	// Shard, set on a shard of a run split across processes (bench
	// --shard), is written into the record for a merge; nil otherwise.
	Shard *ShardInfo `json:"-"`
	// Stopped says why the run ended early: StoppedMaxDuration,
	// StoppedInterrupted, StoppedConversations, one of the Ended* reasons
	// of an SLO search's point, or "" when every prompt was sent.
	Stopped         string `json:"-"`
	CacheCostParams        // --cache-report and --cost-per-hour (cachereport.go)
}

// PerTokenITL reports whether ITL is one sample per token, a chunk's gap
// split over its tokens: servingprobe's default, and bench_serving's own
// rule for a backend that splits even under --compat chunk-itl. Else it is
// one sample per chunk.
func (p Params) PerTokenITL() bool { return !p.Compat.ChunkITL || p.SplitChunkGaps }

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
	// ServerTimings are what each request's server stated about its time
	// (ollama's final object), null for a request that stated none. The
	// array is there only when at least one request of the run stated
	// timings, so that the record of a run against any other server keeps
	// the keys it always had.
	ServerTimings []*ServerTiming `json:"server_timings,omitempty"`
	// Reasoning is each request's reasoning, null for a request that did
	// not reason (see DetailReasoning). The array is there only when at
	// least one request of the run reasoned, so that the record of any
	// other run keeps the keys it always had.
	Reasoning []*DetailReasoning `json:"request_reasoning,omitempty"`
	// TraceIDs are the W3C trace ids the requests carried in their
	// traceparent header (prober.Result.TraceID), "" for a request that
	// carried none: a request's trace in the server's tracing backend.
	// The array is there only when at least one request carried one.
	TraceIDs []string `json:"trace_ids,omitempty"`
	// CheckFailures are each request's answer checks that did not pass
	// (see CheckFailures): null for a request no check judged, [] for
	// one that passed every check. The array is there only when at least
	// one request was judged.
	CheckFailures []CheckFailures `json:"check_failures,omitempty"`
}

// ServerTiming is the time a server stated it spent on one request, as
// ollama's final object states it (prober.ServerTimings), with the
// durations in seconds like the details' other times rather than ollama's
// nanoseconds: load, prompt evaluation (prefill) and evaluation (decode)
// with the tokens each counted, and the total.
type ServerTiming struct {
	TotalDuration      float64 `json:"total_duration"`
	LoadDuration       float64 `json:"load_duration"`
	PromptEvalCount    int     `json:"prompt_eval_count"`
	PromptEvalDuration float64 `json:"prompt_eval_duration"`
	EvalCount          int     `json:"eval_count"`
	EvalDuration       float64 `json:"eval_duration"`
	// The server's own time to first token and queue time, and the
	// prompt tokens it took from its cache (prober.ServerTimings: vLLM's
	// metrics object, llama.cpp's timings, Dynamo's nvext.timing,
	// sglang's meta_info), in seconds; written only
	// when stated, so that ollama's objects keep their keys.
	FirstTokenDuration float64 `json:"first_token_duration,omitempty"`
	QueueDuration      float64 `json:"queue_duration,omitempty"`
	PromptCachedCount  int     `json:"prompt_cached_count,omitempty"`
}

// serverTimingOf converts a result's server timings for the details; nil
// when the server stated none.
func serverTimingOf(st prober.ServerTimings) *ServerTiming {
	if !st.Stated() {
		return nil
	}
	return &ServerTiming{
		TotalDuration: st.TotalDuration.Seconds(), LoadDuration: st.LoadDuration.Seconds(),
		PromptEvalCount: st.PromptEvalCount, PromptEvalDuration: st.PromptEvalDuration.Seconds(),
		EvalCount: st.EvalCount, EvalDuration: st.EvalDuration.Seconds(),
		FirstTokenDuration: st.FirstToken.Seconds(), QueueDuration: st.QueueDuration.Seconds(), PromptCachedCount: st.PromptCachedCount,
	}
}

// PerOutputToken is the server's decode time per generated token in
// seconds, by prober.ServerTimings.PerOutputToken's definition; -1 when
// the server did not state both its eval count and duration.
func (t *ServerTiming) PerOutputToken() float64 {
	st := prober.ServerTimings{EvalCount: t.EvalCount, EvalDuration: time.Duration(math.Round(t.EvalDuration * 1e9))}
	d := st.PerOutputToken()
	if d < 0 {
		return -1
	}
	return d.Seconds()
}

// PyValue is t as the record writes it (pyfmt.Valuer), in ollama's key order.
func (t *ServerTiming) PyValue() any {
	if t == nil {
		return nil
	}
	r := record{
		{"total_duration", t.TotalDuration},
		{"load_duration", t.LoadDuration},
		{"prompt_eval_count", t.PromptEvalCount},
		{"prompt_eval_duration", t.PromptEvalDuration},
		{"eval_count", t.EvalCount},
		{"eval_duration", t.EvalDuration},
	}
	if t.FirstTokenDuration > 0 {
		r = append(r, field{"first_token_duration", t.FirstTokenDuration})
	}
	if t.QueueDuration > 0 {
		r = append(r, field{"queue_duration", t.QueueDuration})
	}
	if t.PromptCachedCount > 0 {
		r = append(r, field{"prompt_cached_count", t.PromptCachedCount})
	}
	return r
}

// Summary is a benchmark's result: bench_serving's figures (names follow
// its JSONL keys; latency Stats are in ms) and servingprobe's extras. It
// encodes to and from JSON with encoding/json for the HTTP API; the
// bench_serving JSONL form comes from Record.
type Summary struct {
	Tag     string `json:"tag,omitempty"`
	Backend string `json:"backend"`
	// Embedding is Params.Embedding: the table's layout for an embedding
	// backend. A JSONL record does not hold it (bench_serving's has no
	// such key), so a summary read back by ParseRecord has it false.
	Embedding          bool            `json:"embedding,omitempty"`
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
	// Server is what the server's own metrics endpoints said about the
	// run (servingprobe's Server metrics block), one per endpoint.
	Server []servermetrics.Report `json:"-"`

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
	// CI are the figures' confidence intervals (ci.go); nil where a
	// record did not hold them.
	CI *CI `json:"ci,omitempty"`

	// Requests counts every result, Failed those that did not succeed, by
	// outcome in Outcomes. NotSent counts the prompts never sent, because
	// the run stopped early for the reason in Stopped.
	Requests int `json:"requests"`
	// NotStreamed counts the requests made without streaming, whose TTFT
	// and TPOT follow bench_serving's --disable-stream convention (the
	// whole response is the first chunk) rather than a measurement. The
	// JSONL record leaves it out, to keep bench_serving's bytes.
	NotStreamed int                    `json:"not_streamed,omitempty"`
	NotSent     int                    `json:"not_sent,omitempty"`
	Stopped     string                 `json:"stopped,omitempty"`
	Failed      int                    `json:"failed"`
	Outcomes    map[prober.Outcome]int `json:"outcomes,omitempty"`
	// Clocks counts the results by the clock that stamped their arrival
	// times (prober.Clock): kernel receive times, the process's clock, or
	// both. Results that read no response are not counted.
	Clocks map[prober.Clock]int `json:"clocks,omitempty"`
	// Engine notes connection retries and outputs shorter than asked; nil
	// when there were none.
	Engine *EngineNotes `json:"engine,omitempty"`
	// ScheduledRequestRate is the pacer's realised rate, (n-1) over the span
	// of Scheduled times; ActualRequestRate the same over Sent times. Both
	// are 0 with fewer than two requests and +Inf for a burst.
	ScheduledRequestRate Rate `json:"scheduled_request_rate"`
	ActualRequestRate    Rate `json:"actual_request_rate"`
	// ClientQueue is Sent-Scheduled over every request that was sent;
	// E2EIncludingQueue is End-Scheduled over successes: the latency a user
	// of a saturated client would see, which latencies from Sent hide by
	// leaving out the wait for a free slot (coordinated omission).
	ClientQueue       Stats `json:"client_queue_ms"`
	E2EIncludingQueue Stats `json:"e2e_latency_including_client_queue_ms"`
	// Reasoning is the answer phase of a run in which some request
	// reasoned before answering; nil otherwise.
	Reasoning *ReasoningSummary `json:"reasoning,omitempty"`
	// Valid is the answer checks' verdicts by check; nil for a run
	// without checks (the table's "Valid responses" block).
	Valid Validity `json:"valid_responses,omitempty"`
	// Answers counts the judged answers as wholes: how many passed every
	// check (Answers.ValidPercent, the share an SLO and the gate read).
	Answers Answers `json:"valid_answers,omitzero"`
	// Conversations are a run of multi-turn conversations' figures by
	// turn (cold turn 1, warm later turns); nil for any other run.
	Conversations *Conversations `json:"conversations,omitempty"`
	// EmbeddingBatch is the inputs per request of a run whose embedding
	// rows were lists; nil for every other run.
	EmbeddingBatch *EmbeddingBatch `json:"embedding_batch,omitempty"`
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
	// Shard says which part of a run split across processes this summary
	// is; nil for a run in one process.
	Shard *ShardInfo `json:"shard,omitempty"`
	// Merged, on the merge of a run's shards, says what was merged and
	// keeps each shard's own figures; nil otherwise.
	Merged    *MergeInfo `json:"merged,omitempty"`
	CacheCost            // --cache-report and --cost-per-hour (cachereport.go, cost.go)
}

// ReasoningSummary is the answer phase of a run whose requests reasoned
// before answering (prober.Samples' reasoning rules). bench_serving's TTFT,
// TPOT and output counts include the reasoning; these set the answer
// beside them.
type ReasoningSummary struct {
	// Requests counts the successes that reasoned; CountedRequests those
	// of them whose reasoning count the server did not state, so that it
	// was counted from their reasoning events.
	Requests        int `json:"requests"`
	CountedRequests int `json:"counted_requests"`
	// ReasoningTokens and AnswerTokens split the successes' output tokens.
	ReasoningTokens int `json:"reasoning_tokens"`
	AnswerTokens    int `json:"answer_tokens"`
	// TTFAT is the time to the first answer token over every success with
	// one (TTFT for a success that did not reason); AnswerTPOT is the
	// answer's TPOT over those with two answer tokens or more. In ms.
	TTFAT      Stats `json:"ttfat_ms"`
	AnswerTPOT Stats `json:"answer_tpot_ms"`
	// AnswerITL is the inter-token latency of the answers: the gaps from
	// each success's first answer token on (prober.ITLGap.Answer), all of
	// them for a success that did not reason, per token or per chunk as
	// the run's ITL. In ms. AnswerITLPercentiles are it at the run's
	// --metric-percentiles when its --percentile-metrics name itl, as the
	// ITL's own; nil otherwise (the table shows its P99).
	AnswerITL            Stats             `json:"answer_itl_ms"`
	AnswerITLPercentiles []PercentileValue `json:"answer_itl_percentiles,omitempty"`
}

// ErrAllFailed is returned by Summary under CompatAllFailedError when no
// request succeeded.
var ErrAllFailed = errors.New("all requests failed")

// TemplateInputTokens is what the total input tokens hold beyond the
// text and vision tokens: servingprobe's total is the server's prompt
// count where it states one, which includes the chat template and any
// special tokens, while the text and vision lines are the dataset's
// counts, as bench_serving's are. The table prints it when it is not 0,
// so that its input lines add up (total = text + vision + this); it is
// negative where the server counted fewer tokens than the dataset.
func (s *Summary) TemplateInputTokens() int {
	return s.TotalInputTokens - s.TotalInputTextTokens - s.TotalInputVisionTokens
}
