package servermetrics

// Requests is the kind of a server's completed-request counter: the
// traffic it served, whoever sent it, which live headroom divides by a
// capacity. It is read by CompletedRequests only, not printed in a run's
// block (a run knows its own request count).
const Requests Kind = "requests"

// requestNames are the completed-request counters, in Names' form and
// order of preference. Each counts a request once, when it ends, summed
// over its labels (finish reason, status):
//
//   - vLLM: vllm:request_success_total (vllm/v1/metrics/loggers.py), by
//     finished_reason; llm-d-inference-sim exposes it too.
//   - sglang: sglang:num_requests_total (TokenizerMetricsCollector).
//   - TensorRT-LLM: trtllm_request_success_total (MetricsCollector).
//   - Dynamo: dynamo_frontend_requests_total, by status (errors counted:
//     they are load the server took).
//
// llama.cpp's llama-server states none (its request gauges count slots,
// and no counter counts requests), so a llama-server target has no
// completed-request rate, and no headroom computed from one.
var requestNames = []Name{
	{"vllm:request_success", Requests, "vllm"},
	{"sglang:num_requests", Requests, "sglang"},
	{"trtllm_request_success", Requests, "trtllm"},
	{"dynamo_frontend_requests", Requests, "dynamo"},
}

// CompletedRequests is the snapshot's completed-request counter (the
// first of requestNames it holds) and its name; ok is false when the
// server states none.
func CompletedRequests(s *Snapshot) (count float64, metric string, ok bool) {
	for _, n := range requestNames {
		if v, has := s.Counters[n.Metric]; has {
			return v, n.Metric, true
		}
	}
	return 0, "", false
}
