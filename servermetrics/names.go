package servermetrics

// Kind is what a server metric measures, whatever the engine calls it.
type Kind string

// The kinds the report reads. Latency kinds are histograms in seconds,
// token and event kinds counters, the rest gauges.
const (
	TTFT     Kind = "ttft"
	Queue    Kind = "queue"
	Prefill  Kind = "prefill"
	Decode   Kind = "decode"
	E2E      Kind = "e2e"
	PerToken Kind = "per_token"

	PromptTokens     Kind = "prompt_tokens"
	GenerationTokens Kind = "generation_tokens"
	PrefixQueries    Kind = "prefix_cache_queries"
	PrefixHits       Kind = "prefix_cache_hits"
	CachedTokens     Kind = "cached_tokens"
	Preemptions      Kind = "preemptions"

	Running Kind = "running"
	Waiting Kind = "waiting"
	KVUsage Kind = "kv_cache_usage"
)

// LatencyKinds are the histograms, in the order the block prints them.
var LatencyKinds = []Kind{TTFT, Queue, Prefill, Decode, E2E, PerToken}

// CounterKinds are the counters, in the order the block prints them.
var CounterKinds = []Kind{PromptTokens, GenerationTokens, PrefixQueries, PrefixHits, CachedTokens, Preemptions}

// GaugeKinds are the gauges sampled through the run.
var GaugeKinds = []Kind{Running, Waiting, KVUsage}

// Name is one engine's metric for a Kind. Counters are named without
// their _total suffix: Python's prometheus_client declares them so and
// appends _total to the sample, client_golang (llm-d-inference-sim) puts
// _total in both; Parse strips it.
type Name struct {
	Metric string
	Kind   Kind
	Engine string
}

// Names is the table, in order of preference: for each kind the first name
// the endpoint exposes is read, so a current name wins over the deprecated
// alias the same server still exposes beside it.
//
// vLLM: vllm/v1/metrics/loggers.py (PrometheusStatLogger). It renamed
// gpu_cache_usage_perc and gpu_prefix_cache_{queries,hits} to
// kv_cache_usage_perc and prefix_cache_{queries,hits} in 0.9 and still
// exposes both; inter_token_latency_seconds replaced
// time_per_output_token_seconds (both carry the gap between output tokens;
// llm-d-inference-sim v0.10.2, pkg/llm-d-inference-sim/metrics.go, exposes
// both with the same values). kv_cache_usage_perc is a fraction: "1 means
// 100 percent usage".
//
// sglang: python/sglang/srt/metrics/collector.py (TokenizerMetricsCollector
// and SchedulerMetricsCollector). It has no prefill or decode histogram;
// its queue time is queue_time_seconds, its KV pool usage token_usage (a
// fraction), its waiting requests num_queue_reqs, its preemptions
// retractions, and its prefix-cache hits cached_tokens_total against
// prompt_tokens_total.
var Names = []Name{
	{"vllm:time_to_first_token_seconds", TTFT, "vllm"},
	{"vllm:request_queue_time_seconds", Queue, "vllm"},
	{"vllm:request_prefill_time_seconds", Prefill, "vllm"},
	{"vllm:request_decode_time_seconds", Decode, "vllm"},
	{"vllm:e2e_request_latency_seconds", E2E, "vllm"},
	{"vllm:inter_token_latency_seconds", PerToken, "vllm"},
	{"vllm:time_per_output_token_seconds", PerToken, "vllm"},
	{"vllm:prompt_tokens", PromptTokens, "vllm"},
	{"vllm:generation_tokens", GenerationTokens, "vllm"},
	{"vllm:prefix_cache_queries", PrefixQueries, "vllm"},
	{"vllm:gpu_prefix_cache_queries", PrefixQueries, "vllm"},
	{"vllm:prefix_cache_hits", PrefixHits, "vllm"},
	{"vllm:gpu_prefix_cache_hits", PrefixHits, "vllm"},
	{"vllm:num_preemptions", Preemptions, "vllm"},
	{"vllm:num_requests_running", Running, "vllm"},
	{"vllm:num_requests_waiting", Waiting, "vllm"},
	{"vllm:kv_cache_usage_perc", KVUsage, "vllm"},
	{"vllm:gpu_cache_usage_perc", KVUsage, "vllm"},

	{"sglang:time_to_first_token_seconds", TTFT, "sglang"},
	{"sglang:queue_time_seconds", Queue, "sglang"},
	{"sglang:e2e_request_latency_seconds", E2E, "sglang"},
	{"sglang:inter_token_latency_seconds", PerToken, "sglang"},
	{"sglang:prompt_tokens", PromptTokens, "sglang"},
	{"sglang:generation_tokens", GenerationTokens, "sglang"},
	{"sglang:cached_tokens", CachedTokens, "sglang"},
	{"sglang:num_retracted_requests", Preemptions, "sglang"},
	{"sglang:num_running_reqs", Running, "sglang"},
	{"sglang:num_queue_reqs", Waiting, "sglang"},
	{"sglang:token_usage", KVUsage, "sglang"},

	// TensorRT-LLM's trtllm-serve: tensorrt_llm/metrics/collector.py
	// (MetricsCollector, prefix "trtllm_", Python prometheus_client, so
	// counters as above). Its time_per_output_token histogram holds one
	// observation per request, the request's mean gap, not one per gap.
	// kv_cache_utilization is used over max blocks, a fraction.
	{"trtllm_time_to_first_token_seconds", TTFT, "trtllm"},
	{"trtllm_request_queue_time_seconds", Queue, "trtllm"},
	{"trtllm_request_prefill_time_seconds", Prefill, "trtllm"},
	{"trtllm_request_decode_time_seconds", Decode, "trtllm"},
	{"trtllm_e2e_request_latency_seconds", E2E, "trtllm"},
	{"trtllm_time_per_output_token_seconds", PerToken, "trtllm"},
	{"trtllm_prompt_tokens", PromptTokens, "trtllm"},
	{"trtllm_generation_tokens", GenerationTokens, "trtllm"},
	{"trtllm_prompt_cached_tokens", CachedTokens, "trtllm"},
	{"trtllm_num_requests_running", Running, "trtllm"},
	{"trtllm_num_requests_waiting", Waiting, "trtllm"},
	{"trtllm_kv_cache_utilization", KVUsage, "trtllm"},

	// NVIDIA Dynamo's HTTP frontend: lib/runtime/src/metrics/
	// prometheus_names.rs (frontend_service, prefix "dynamo_frontend_",
	// the Rust prometheus crate: a counter's TYPE line keeps _total). Its
	// clock is the frontend's, so its TTFT includes routing and the
	// worker's queue. It has no prompt-token counter: input_sequence_tokens
	// and cached_tokens are per-request histograms, read by their sums.
	// inflight_requests counts every request between the frontend and an
	// engine, those the engine still queues included; queued_requests
	// those that have not had a first response.
	{"dynamo_frontend_time_to_first_token_seconds", TTFT, "dynamo"},
	{"dynamo_frontend_request_duration_seconds", E2E, "dynamo"},
	{"dynamo_frontend_inter_token_latency_seconds", PerToken, "dynamo"},
	{"dynamo_frontend_input_sequence_tokens", PromptTokens, "dynamo"},
	{"dynamo_frontend_output_tokens", GenerationTokens, "dynamo"},
	{"dynamo_frontend_cached_tokens", CachedTokens, "dynamo"},
	{"dynamo_frontend_inflight_requests", Running, "dynamo"},
	{"dynamo_frontend_queued_requests", Waiting, "dynamo"},

	// llama.cpp's llama-server with --metrics: tools/server's metrics
	// handler (the "llamacpp:" prefix; plain lines without labels, the
	// TYPE line naming the sample, _total included). It has no histogram
	// and no cached-token counter. requests_processing are the busy
	// slots, requests_deferred the tasks waiting for one.
	// kv_cache_usage_ratio is a fraction, in older builds that exposed it.
	// prompt_tokens_total counts the prompt tokens processed, which leaves
	// out those reused from the prompt cache (excludesCached).
	{"llamacpp:prompt_tokens", PromptTokens, "llamacpp"},
	{"llamacpp:tokens_predicted", GenerationTokens, "llamacpp"},
	{"llamacpp:requests_processing", Running, "llamacpp"},
	{"llamacpp:requests_deferred", Waiting, "llamacpp"},
	{"llamacpp:kv_cache_usage_ratio", KVUsage, "llamacpp"},
}

// histogramSum are the counter kinds read from a histogram's _sum:
// Dynamo states its prompt and cached tokens only as per-request
// histograms, whose sum over the run is the tokens' count.
var histogramSum = map[string]bool{
	"dynamo_frontend_input_sequence_tokens": true,
	"dynamo_frontend_cached_tokens":         true,
}

// excludesCached are the prompt counters that leave out the prompt tokens
// served from the cache (llama.cpp's prompt_tokens_total, which counts the
// tokens it processed): where the engine also counts the cached tokens,
// the tokens queried are the two counters' sum; where it does not, a run
// whose prompts hit the cache shows fewer prompt tokens than it sent
// (Report.PromptExcludesCached).
var excludesCached = map[string]bool{"llamacpp:prompt_tokens": true}

// PromptExcludesCached reports whether the report's prompt-token counter
// leaves out the tokens the server's prompt cache served, so that a
// count below the client's can be the cache rather than lost traffic.
func (r *Report) PromptExcludesCached() bool {
	for _, c := range r.Counters {
		if c.Kind != PromptTokens {
			continue
		}
		if c.Metric != "" {
			return excludesCached[c.Metric]
		}
		// A report read back from a JSONL record keeps no counter's
		// name: the engine's prompt counter is the one it read.
		for _, n := range Names {
			if n.Kind == PromptTokens && n.Engine == r.Engine {
				return excludesCached[n.Metric]
			}
		}
	}
	return false
}

// Engines are the engines Names covers, as Report.Engine names them.
// llm-d-inference-sim (pkg/llm-d-inference-sim/metrics.go) is not one of
// its own: it exposes vLLM's names with a model_name label only, and
// reads as vllm.
var Engines = []string{"vllm", "sglang", "trtllm", "dynamo", "llamacpp"}

// enginePrefixes are the name prefixes of the engines in Names: a family
// under one of them that the table does not hold is listed as unknown
// (other families, such as process_ and python_, are not an engine's).
var enginePrefixes = []string{"vllm:", "sglang:", "trtllm_", "dynamo_frontend_", "llamacpp:"}
