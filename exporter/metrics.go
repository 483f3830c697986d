package exporter

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

const namespace = "servingprobe"

// Mode is the value of the mode label: who sent the request.
type Mode string

// The modes.
const (
	ModeProbe Mode = "probe" // the continuous prober
	ModeBench Mode = "bench" // a bench window
)

// Label names.
const (
	labelTarget      = "target"
	labelModule      = "module"
	labelModel       = "model"
	labelMode        = "mode"
	labelOutcome     = "outcome"
	labelBackend     = "backend"
	labelTokenSource = "token_source"
	// labelReasoningSource is on servingprobe_target_info, beside
	// token_source, rather than on the reasoning counter: see its help.
	labelReasoningSource = "reasoning_token_source"
	labelResult          = "result"
	labelCheck           = "check"
)

// requestLabels is L: every per-request metric carries these.
var requestLabels = []string{labelTarget, labelModule, labelModel, labelMode}

// Classic bucket layouts. Native buckets (factor 1.1) are always added; the
// classic ones serve a Prometheus that does not ingest native histograms, so
// they must be usable on their own. The boundaries are hand-picked rather
// than ExponentialBucketsRange's irrational values: latency SLOs and their
// burn-rate rules count requests at or under a threshold with one bucket
// (le="2"), which is exact only when the threshold is a boundary. So every
// round value an SLO is likely to use (100 ms, 200 ms, 250 ms, 500 ms, 1 s,
// 2 s, 5 s ...) is one; the steps stay at most about 1.6x, so an
// interpolated quantile is off by less than one step.
var (
	// TTFT and end-to-end latency: from a warm, prefix-cached small model on
	// the same host (about 10 ms) to a long prefill queued behind a full
	// batch, or a long generation (two minutes).
	requestLatencyBuckets = []float64{
		0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75,
		1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120,
	}
	// ITL and TPOT: a decode step takes about 1 ms (a tiny model, or
	// speculative decoding) to seconds (a heavily batched or swapping server).
	tokenLatencyBuckets = []float64{
		0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03,
		0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 0.75, 1, 2.5, 5,
	}
	// Client queue time and scheduler lag are normally well under a
	// millisecond; the layout exists to show when they are not, up to a
	// stalled minute.
	queueBuckets = []float64{
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
		1, 2.5, 5, 10, 30, 60,
	}
)

// Native histogram settings shared by every histogram. A factor of 1.1
// gives schema 3 (2^(1/8) ≈ 1.09 per bucket). 1 ms to 120 s is 17 powers of
// two, 136 buckets at that schema; the cap of 160 leaves headroom before the
// resolution is halved, and bounds memory when a server sends wild values.
const (
	nativeBucketFactor     = 1.1
	nativeMaxBucketNumber  = 160
	nativeMinResetDuration = time.Hour
)

func histogramOpts(name, help string, buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{
		Namespace:                       namespace,
		Name:                            name,
		Help:                            help,
		Buckets:                         buckets,
		NativeHistogramBucketFactor:     nativeBucketFactor,
		NativeHistogramMaxBucketNumber:  nativeMaxBucketNumber,
		NativeHistogramMinResetDuration: nativeMinResetDuration,
	}
}

// Metrics holds every long-lived metric of the daemon. All methods are safe
// for concurrent use.
type Metrics struct {
	ttft, ttfat, itl, tpot, e2e, queue *prometheus.HistogramVec
	// serverTTFT and outsideTTFT split ttft where the server stated its
	// own (prober.Samples.ServerTTFT): nothing is observed where it did not.
	serverTTFT, outsideTTFT *prometheus.HistogramVec
	answerITL, answerTPOT   *prometheus.HistogramVec
	requests                *prometheus.CounterVec
	promptTokens, genTokens *prometheus.CounterVec
	reasoningTokens         *prometheus.CounterVec

	probeSuccess, lastSuccess, lastProbe *prometheus.GaugeVec

	skipped *prometheus.CounterVec
	// answerChecks counts the answer checks' verdicts (answerchecks.go).
	answerChecks *prometheus.CounterVec

	lag *prometheus.HistogramVec

	targetInfo *prometheus.GaugeVec
	tlsExpiry  *prometheus.GaugeVec

	reloadSuccess, reloadTimestamp prometheus.Gauge

	benchRunning, benchLastStart, benchLastEnd *prometheus.GaugeVec
	benchRuns                                  *prometheus.CounterVec
	benchReqThroughput, benchOutThroughput     *prometheus.GaugeVec
	benchCompleted, benchFailed                *prometheus.GaugeVec
	benchRate, benchConcurrency, benchPoint    *prometheus.GaugeVec
	benchCapacityRate, benchCapacityConc       *prometheus.GaugeVec
	benchLowerRate, benchLowerConc             *prometheus.GaugeVec
	// capacity are the scheduled capacity checks' gauges (capacity.go).
	capacity *capacityMetrics

	// turns are the per-turn series of conversation probes (turns.go).
	turns *turnMetrics

	series *seriesState
}

// NewMetrics creates every long-lived metric and registers it on reg.
// Build info and the Go and process collectors are registered by the
// daemon, not here.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		ttft: f.NewHistogramVec(histogramOpts("time_to_first_token_seconds",
			"Time to first token of successful requests, in seconds: the arrival of the first stream event carrying output text or tokens, minus the moment the request was sent. Role-only and keep-alive events do not count.",
			requestLatencyBuckets), requestLabels),
		// TTFT's layout, so that the three compare bucket by bucket.
		serverTTFT: f.NewHistogramVec(histogramOpts("server_time_to_first_token_seconds",
			"The server's own time to first token of successful streamed requests that stated one, in seconds, as the server states it in its response: vLLM's metrics.time_to_first_token_ms (from the request's arrival at its API server: queue and prefill), llama.cpp's timings.prompt_ms (prompt processing; it states no queue), NVIDIA Dynamo's nvext.timing.ttft_ms (from its frontend's receipt), sglang's prefill_finished_time minus request_received_ts in meta_info (from the request's arrival to the end of its prefill, with --enable-metrics). Requests whose server stated none, or one longer than the client's TTFT, are not observed.",
			requestLatencyBuckets), requestLabels),
		outsideTTFT: f.NewHistogramVec(histogramOpts("time_to_first_token_outside_server_seconds",
			"Time to first token minus the server's own (servingprobe_server_time_to_first_token_seconds), in seconds, for the same requests: the network, HTTP and the server's work outside its engine's stated time.",
			requestLatencyBuckets), requestLabels),
		// The same layout as TTFT, so that the two can be compared bucket
		// by bucket: reasoning adds seconds to minutes before the answer.
		ttfat: f.NewHistogramVec(histogramOpts("time_to_first_answer_token_seconds",
			"Time to first answer token of successful streamed requests, in seconds: the arrival of the first stream event carrying answer text (content, tool-call arguments), after any reasoning (reasoning fields, reasoning or thinking events, or think tags), minus the moment the request was sent. Without reasoning it equals the time to first token. Requests whose stream ended before any answer are not observed.",
			requestLatencyBuckets), requestLabels),
		itl: f.NewHistogramVec(histogramOpts("inter_token_latency_seconds",
			"Inter-token latency of successful requests, in seconds, one sample per output token after the first: an event carrying n tokens that arrived g seconds after the previous output event contributes n samples of g/n.",
			tokenLatencyBuckets), requestLabels),
		tpot: f.NewHistogramVec(histogramOpts("time_per_output_token_seconds",
			"Time per output token of successful requests with at least two output tokens, in seconds: (end of the response minus first token) divided by (output tokens minus one).",
			tokenLatencyBuckets), requestLabels),
		// The answer phase of ITL and TPOT, with their buckets so that each
		// pair can be compared bucket by bucket: a reasoning model's
		// thinking tokens can stream at another pace than its answer.
		answerITL: f.NewHistogramVec(histogramOpts("answer_inter_token_latency_seconds",
			"Inter-token latency of the answer of successful streamed requests, in seconds, one sample per answer token after the first answer event, as for servingprobe_inter_token_latency_seconds: the gaps measured from the first answer event (after any reasoning) on. The wait from the last reasoning event to the first answer event is not one of them. Without reasoning it equals the inter-token latency. Requests whose stream ended before any answer are not observed.",
			tokenLatencyBuckets), requestLabels),
		answerTPOT: f.NewHistogramVec(histogramOpts("answer_time_per_output_token_seconds",
			"Time per output token of the answer of successful streamed requests with at least two answer tokens, in seconds: (end of the response minus first answer token) divided by (answer tokens minus one), the answer tokens being the output tokens minus the reasoning tokens. Without reasoning it equals the time per output token. Requests whose stream ended before any answer are not observed.",
			tokenLatencyBuckets), requestLabels),
		e2e: f.NewHistogramVec(histogramOpts("e2e_request_latency_seconds",
			"End-to-end latency of successful requests, in seconds: the end of the response ([DONE] or end of body) minus the moment the request was sent.",
			requestLatencyBuckets), requestLabels),
		queue: f.NewHistogramVec(histogramOpts("client_queue_seconds",
			"Client-side queue time of every sent request, in seconds: the moment the request was sent minus the moment it was scheduled (the planned probe tick, or the bench arrival time). It is not included in the other latencies.",
			queueBuckets), requestLabels),
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "requests_total",
			Help: "Requests that finished, by outcome: success, http_4xx, http_429, http_5xx, connect_error, connection_closed, timeout, stream_cut, parse_error, server_error, overrun, empty_output or canceled.",
		}, append(append([]string{}, requestLabels...), labelOutcome)),
		promptTokens: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "prompt_tokens_total",
			Help: "Input tokens of successful requests, as the server reported them, else as our tokenizer counted them (see servingprobe_target_info's token_source).",
		}, requestLabels),
		genTokens: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "generation_tokens_total",
			Help: "Output tokens of successful requests, as the server reported them, else as our tokenizer or the stream events counted them (see servingprobe_target_info's token_source).",
		}, requestLabels),
		// The labels of generation_tokens_total, and no source label: the
		// two subtract and divide series by series (answer tokens, the
		// reasoning share), and the source is on target_info, joined on
		// target, as token_source is for every other count.
		reasoningTokens: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "reasoning_tokens_total",
			Help: "Reasoning (thinking) tokens of successful requests, the part of servingprobe_generation_tokens_total that went to reasoning, so that answer tokens are generation minus reasoning tokens: the server's completion_tokens_details.reasoning_tokens (sglang: usage.reasoning_tokens; Responses: output_tokens_details.reasoning_tokens) where it states a count above 0, else the tokens of the stream events that carried reasoning, added up (see servingprobe_target_info's reasoning_token_source). A request without reasoning adds 0.",
		}, requestLabels),
		probeSuccess: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "probe_success",
			Help: "Whether the last finished continuous probe succeeded (1) or not (0). Absent until the first probe of the series finishes.",
		}, []string{labelTarget, labelModule, labelModel}),
		lastSuccess: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "last_success_timestamp_seconds",
			Help: "Unix time in seconds at which the last successful continuous probe ended. Absent until a probe has succeeded.",
		}, []string{labelTarget, labelModule, labelModel}),
		lastProbe: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "last_probe_timestamp_seconds",
			Help: "Unix time in seconds at which the last continuous probe ended, in any outcome. Absent until the first probe finishes.",
		}, []string{labelTarget, labelModule, labelModel}),
		skipped: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "probes_skipped_total",
			Help: "Probe ticks skipped because max_in_flight probes of the target and module were still running.",
		}, []string{labelTarget, labelModule}),
		answerChecks: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "answer_checks_total",
			Help: "Answer checks of continuous probes that answered, by check (json_schema, tool_call, regex, contains, equals, no_reasoning_in_content, as the module configures them) and result: pass, fail (the answer is wrong by the check), or error (it could not be judged: its JSON or tool call was cut at the requested length). A request that failed is not judged; its latency is recorded whatever the checks say.",
		}, []string{labelTarget, labelModule, labelCheck, labelResult}),
		lag: f.NewHistogramVec(histogramOpts("scheduler_lag_seconds",
			"Scheduler lag of continuous probes, in seconds: the moment a probe started minus its planned tick.",
			queueBuckets), []string{labelTarget, labelModule}),
		targetInfo: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "target_info",
			Help: "Descriptive labels of a configured target, always 1: its model, backend, where the token counts of its last successful request came from (token_source: usage, meta_info, tokenizer, requested, events, or unknown before the first success), and where the reasoning count of its last successful request that reasoned came from (reasoning_token_source: usage when the server stated the count, named as in token_source; counted when we added up the tokens of its reasoning events; none before any request reasoned).",
		}, []string{labelTarget, labelModel, labelBackend, labelTokenSource, labelReasoningSource}),
		// Per target, not module: every module of a target dials the same
		// host. Created at the first response over TLS, never for http://.
		tlsExpiry: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "tls_cert_expiry_timestamp_seconds",
			Help: "Unix time in seconds at which the TLS certificate chain of the target's last response over TLS expires: the earliest NotAfter of the chain the client verified (of the certificates the server sent, with verification off). Absent until a response over TLS arrives.",
		}, []string{labelTarget}),
		reloadSuccess: f.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "config_last_reload_successful",
			Help: "Whether the last configuration load or reload succeeded (1) or not (0).",
		}),
		reloadTimestamp: f.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "config_last_reload_success_timestamp_seconds",
			Help: "Unix time in seconds of the last successful configuration load or reload.",
		}),
		benchRunning: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_running",
			Help: "Whether a bench window is running on the target (1) or not (0).",
		}, []string{labelTarget}),
		benchLastStart: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_start_timestamp_seconds",
			Help: "Unix time in seconds at which the last bench run on the target started.",
		}, []string{labelTarget}),
		benchLastEnd: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_end_timestamp_seconds",
			Help: "Unix time in seconds at which the last finished bench run on the target ended.",
		}, []string{labelTarget}),
		benchRuns: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "bench_runs_total",
			Help: "Bench runs that ended on the target, by result: completed, failed, canceled, or write_failed when the run's result could not be written to the results directory.",
		}, []string{labelTarget, labelResult}),
		benchReqThroughput: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_request_throughput_requests_per_second",
			Help: "Request throughput of the last finished bench run on the target, in completed requests per second of benchmark duration.",
		}, []string{labelTarget}),
		benchOutThroughput: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_output_throughput_tokens_per_second",
			Help: "Output token throughput of the last finished bench run on the target, in output tokens per second of benchmark duration.",
		}, []string{labelTarget}),
		benchCompleted: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_completed_requests",
			Help: "Requests that succeeded in the last finished bench run on the target.",
		}, []string{labelTarget}),
		benchFailed: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_failed_requests",
			Help: "Requests that failed in the last finished bench run on the target; not those the run itself cancelled at its time limit (max_duration, a search point's time), which the run's record counts under outcomes.canceled.",
		}, []string{labelTarget}),
		benchRate: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_request_rate_requests_per_second",
			Help: "Request rate the running bench run (or sweep point) on the target sends at, in requests per second; +Inf when every request is sent at once; 0 when no bench runs.",
		}, []string{labelTarget}),
		benchConcurrency: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_max_concurrency",
			Help: "Most requests the running bench run (or sweep point) on the target keeps in flight; 0 when no bench runs.",
		}, []string{labelTarget}),
		benchPoint: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_point_start_timestamp_seconds",
			Help: "Unix time in seconds at which the measured load of the last bench run, or of the last point of a sweep or SLO search, on the target started.",
		}, []string{labelTarget}),
		benchCapacityRate: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_slo_capacity_requests_per_second",
			Help: "Highest request rate at which every objective held in the last completed SLO search over request rates on the target; 0 when none did. Absent when a limit of ours bounded that answer (see servingprobe_bench_last_slo_capacity_lower_bound_requests_per_second).",
		}, []string{labelTarget}),
		benchLowerRate: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_slo_capacity_lower_bound_requests_per_second",
			Help: "Highest request rate at which every objective held in the last completed SLO search over request rates on the target, when a limit of ours (the run's request rate, bench.max_request_rate, its max concurrency, num_prompts, the memory budget, slo_max, slo_max_points or slo_budget) stopped the search before the SLO broke: the server's capacity is at least this. Absent when a point the server failed bounded the answer (see servingprobe_bench_last_slo_capacity_requests_per_second).",
		}, []string{labelTarget}),
		benchCapacityConc: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_slo_capacity_max_concurrency",
			Help: "Highest max concurrency at which every objective held in the last completed SLO search over concurrencies on the target; 0 when none did. Absent when a limit of ours bounded that answer (see servingprobe_bench_last_slo_capacity_lower_bound_max_concurrency).",
		}, []string{labelTarget}),
		benchLowerConc: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bench_last_slo_capacity_lower_bound_max_concurrency",
			Help: "Highest max concurrency at which every objective held in the last completed SLO search over concurrencies on the target, when a limit of ours (bench.max_concurrency, num_prompts, the memory budget, slo_max, slo_max_points or slo_budget) stopped the search before the SLO broke: the server's capacity is at least this. Absent when a point the server failed bounded the answer.",
		}, []string{labelTarget}),
	}
	m.turns = newTurnMetrics(f)
	m.capacity = newCapacityMetrics(f)
	m.series = newSeriesState(m)
	return m
}

// requestHistograms are the histograms labelled with L, the one list that
// pre-creation (probe and bench series) and deletion read, so that a new
// histogram cannot be created in one place and left stale in another.
func (m *Metrics) requestHistograms() []*prometheus.HistogramVec {
	return []*prometheus.HistogramVec{m.ttft, m.ttfat, m.itl, m.tpot, m.e2e, m.queue, m.answerITL, m.answerTPOT}
}

// statedHistograms are the histograms labelled with L that hold what a
// server states: they are deleted with the others but never pre-created,
// so that a target whose server states nothing exports none of them.
func (m *Metrics) statedHistograms() []*prometheus.HistogramVec {
	return []*prometheus.HistogramVec{m.serverTTFT, m.outsideTTFT}
}

// perRequestVecs are the vectors labelled with L.
func (m *Metrics) perRequestVecs() []*prometheus.MetricVec {
	var vs []*prometheus.MetricVec
	for _, h := range append(m.requestHistograms(), m.statedHistograms()...) {
		vs = append(vs, h.MetricVec)
	}
	vs = append(vs, m.turns.vecs()...)
	return append(vs, m.requests.MetricVec, m.promptTokens.MetricVec, m.genTokens.MetricVec, m.reasoningTokens.MetricVec)
}

// probeGaugeVecs are the vectors labelled with target, module, model.
func (m *Metrics) probeGaugeVecs() []*prometheus.MetricVec {
	return []*prometheus.MetricVec{m.probeSuccess.MetricVec, m.lastSuccess.MetricVec, m.lastProbe.MetricVec}
}

// targetVecs are every vector with a target label.
func (m *Metrics) targetVecs() []*prometheus.MetricVec {
	return append(append(m.perRequestVecs(), m.probeGaugeVecs()...),
		m.skipped.MetricVec, m.answerChecks.MetricVec, m.lag.MetricVec, m.targetInfo.MetricVec, m.tlsExpiry.MetricVec,
		m.benchRunning.MetricVec, m.benchLastStart.MetricVec, m.benchLastEnd.MetricVec, m.benchRuns.MetricVec,
		m.benchReqThroughput.MetricVec, m.benchOutThroughput.MetricVec, m.benchCompleted.MetricVec, m.benchFailed.MetricVec,
		m.benchRate.MetricVec, m.benchConcurrency.MetricVec, m.benchPoint.MetricVec,
		m.benchCapacityRate.MetricVec, m.benchCapacityConc.MetricVec, m.benchLowerRate.MetricVec, m.benchLowerConc.MetricVec,
		m.capacity.capacity.MetricVec, m.capacity.lowerBound.MetricVec, m.capacity.timestamp.MetricVec, m.capacity.headroom.MetricVec)
}

// ReloadSucceeded records a successful configuration load at t.
func (m *Metrics) ReloadSucceeded(t time.Time) {
	m.reloadSuccess.Set(1)
	m.reloadTimestamp.Set(float64(t.UnixNano()) / 1e9)
}

// ReloadFailed records a failed configuration reload.
func (m *Metrics) ReloadFailed() { m.reloadSuccess.Set(0) }

// ObserveLag implements prober.LoopObserver.
func (m *Metrics) ObserveLag(target, module string, lag time.Duration) {
	m.series.mu.RLock()
	defer m.series.mu.RUnlock()
	if !m.series.hasModule(target, module) {
		return // a loop that is being stopped
	}
	m.lag.WithLabelValues(target, module).Observe(lag.Seconds())
}

// ObserveSkip implements prober.LoopObserver.
func (m *Metrics) ObserveSkip(target, module string) {
	m.series.mu.RLock()
	defer m.series.mu.RUnlock()
	if !m.series.hasModule(target, module) {
		return
	}
	m.skipped.WithLabelValues(target, module).Inc()
}

// BenchPoint marks the start of a bench run's measured load on target, or
// of one point of a sweep: rate requests per second (+Inf: all at once)
// with at most maxConcurrency in flight.
func (m *Metrics) BenchPoint(target string, start time.Time, rate float64, maxConcurrency int) {
	m.series.mu.RLock()
	defer m.series.mu.RUnlock()
	if _, ok := m.series.targets[target]; !ok {
		return
	}
	m.benchRate.WithLabelValues(target).Set(rate)
	m.benchConcurrency.WithLabelValues(target).Set(float64(maxConcurrency))
	m.benchPoint.WithLabelValues(target).Set(unixSeconds(start))
}

// BenchStarted marks a bench run on target as running since start.
// Calls for a target that is not configured are ignored.
func (m *Metrics) BenchStarted(target string, start time.Time) {
	m.series.mu.RLock()
	defer m.series.mu.RUnlock()
	if _, ok := m.series.targets[target]; !ok {
		return
	}
	m.benchRunning.WithLabelValues(target).Set(1)
	m.benchLastStart.WithLabelValues(target).Set(unixSeconds(start))
}

// BenchFinished marks the bench run on target as ended at end with result;
// the headline gauges are set only for a completed run, so that a failed or
// cancelled run does not overwrite the last real figures.
func (m *Metrics) BenchFinished(target string, end time.Time, result BenchStatus, h BenchHeadline) {
	m.series.mu.RLock()
	defer m.series.mu.RUnlock()
	if _, ok := m.series.targets[target]; !ok {
		return
	}
	m.benchRunning.WithLabelValues(target).Set(0)
	m.benchRate.WithLabelValues(target).Set(0)
	m.benchConcurrency.WithLabelValues(target).Set(0)
	m.benchLastEnd.WithLabelValues(target).Set(unixSeconds(end))
	m.benchRuns.WithLabelValues(target, string(result)).Inc()
	if result != BenchSucceeded {
		return
	}
	m.benchReqThroughput.WithLabelValues(target).Set(h.RequestThroughput)
	m.benchOutThroughput.WithLabelValues(target).Set(h.OutputThroughput)
	m.benchCompleted.WithLabelValues(target).Set(float64(h.Completed))
	m.benchFailed.WithLabelValues(target).Set(float64(h.Failed))
	if h.CapacityBy != "" {
		// A capacity and a lower bound of the same kind never stand side
		// by side: the last search's answer is one or the other, so that
		// the capacity alerts never read a limit of ours as the server's.
		g, lower := m.benchCapacityRate, m.benchLowerRate
		if h.CapacityBy == "max_concurrency" {
			g, lower = m.benchCapacityConc, m.benchLowerConc
		}
		if h.CapacityBoundedBy != "" {
			g, lower = lower, g
		}
		g.WithLabelValues(target).Set(h.Capacity)
		lower.DeleteLabelValues(target)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// probeMetrics are the gauges of one /probe request, registered on a fresh
// registry per request, as blackbox_exporter does. They carry no target
// label: Prometheus adds it by relabelling.
type probeMetrics struct {
	success, duration                  prometheus.Gauge
	promptTokens, outputTokens, status prometheus.Gauge
	reasoningTokens                    prometheus.Gauge
	outcome                            *prometheus.GaugeVec
	// ttft, e2e and tpot are registered only when the probe measured
	// them (see setProbeMetrics): a 0 would read as a measurement.
	reg             prometheus.Registerer
	ttft, e2e, tpot prometheus.Gauge
}

func newProbeMetrics(reg prometheus.Registerer) *probeMetrics {
	f := promauto.With(reg)
	g := func(name, help string) prometheus.Gauge {
		return f.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	}
	measured := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	}
	return &probeMetrics{
		reg:      reg,
		success:  g("probe_success", "Whether the probe succeeded (1) or not (0)."),
		duration: g("probe_duration_seconds", "Wall time of the whole probe in seconds, including model detection and connection setup."),
		ttft:     measured("probe_time_to_first_token_seconds", "Time to first token of the probe request in seconds; absent when it was not measured (no token arrived, or the response was not streamed)."),
		e2e:      measured("probe_e2e_request_latency_seconds", "End-to-end latency of the probe request in seconds, from sent to the end of the response; absent when the request was not sent."),
		tpot:     measured("probe_time_per_output_token_seconds", "Time per output token of the probe request in seconds; absent when it was not measured (fewer than two output tokens, or the response was not streamed)."),
		promptTokens: g("probe_prompt_tokens",
			"Input tokens of the probe request."),
		outputTokens: g("probe_output_tokens", "Output tokens of the probe request."),
		reasoningTokens: g("probe_reasoning_tokens",
			"Reasoning tokens of the probe request: the part of servingprobe_probe_output_tokens that went to reasoning, the count servingprobe_reasoning_tokens_total adds up; 0 without reasoning. /probe?debug=true says whether the server stated them or they were counted."),
		status: g("probe_http_status_code", "HTTP status code of the probe response; 0 if none arrived."),
		outcome: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "probe_outcome",
			Help: "The outcome of the probe: 1 for the outcome it had, 0 for the others.",
		}, []string{labelOutcome}),
	}
}

// ClassicBuckets returns copies of the classic bucket layouts, for tests and
// tools that need to know what a classic histogram_quantile can resolve.
func ClassicBuckets() (request, token, queue []float64) {
	return slices.Clone(requestLatencyBuckets), slices.Clone(tokenLatencyBuckets), slices.Clone(queueBuckets)
}
