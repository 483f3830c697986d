package prober

import "testing"

// serverTimingEvents are events that state a server's per-request timing,
// as each engine sends them: sglang with --enable-metrics on every chunk
// (mid-stream) and on its last one; Dynamo's worker ids (on every chunk
// when disaggregated) and its last chunk with nvext.timing.
var serverTimingEvents = []struct {
	name, backend, event string
}{
	{"sglang-metrics-mid", "sglang", `{"text":"The quick brown fox jumps over the lazy dog token","output_ids":[785,12884],"meta_info":{"id":"b3e1c0a29f7d4e65","finish_reason":null,"prompt_tokens":128,"weight_version":"default","num_retractions":0,"forward_entry_time":1764316800.4203105,"prefill_finished_time":1764316800.479629,"queue_time":0.0008712,"prefill_waiting_latency":0.0003105,"prefill_launch_latency":0.0412467,"reasoning_tokens":0,"completion_tokens":10,"cached_tokens":0}}`},
	{"sglang-metrics-last", "sglang", `{"text":"The quick brown fox jumps over the lazy dog token","output_ids":[785,12884],"meta_info":{"id":"b3e1c0a29f7d4e65","finish_reason":{"type":"length","length":10},"prompt_tokens":128,"weight_version":"default","num_retractions":0,"forward_entry_time":1764316800.4203105,"prefill_finished_time":1764316800.479629,"queue_time":0.0008712,"prefill_waiting_latency":0.0003105,"prefill_launch_latency":0.0412467,"reasoning_tokens":0,"completion_tokens":10,"cached_tokens":0,"e2e_latency":0.0958311,"request_received_ts":1764316800.4182072,"api_server_dispatch_finish_ts":1764316800.4194527,"request_finished_ts":1764316800.5140383,"inference_time":0.0916821,"decode_throughput":87.41,"response_sent_to_client_ts":1764316800.5141947}}`},
	{"dynamo-worker-ids-mid", "vllm-chat", `{"id":"chatcmpl-5d0c","choices":[{"index":0,"delta":{"content":" sky"},"finish_reason":null,"logprobs":null}],"created":1764316800,"model":"Qwen/Qwen3-0.6B","object":"chat.completion.chunk","nvext":{"worker_id":{"prefill_worker_id":7587890123456,"decode_worker_id":7587890123457}}}`},
	{"dynamo-last", "vllm-chat", `{"id":"chatcmpl-5d0c","choices":[{"index":0,"delta":{"content":" is"},"finish_reason":"length","logprobs":null}],"created":1764316800,"model":"Qwen/Qwen3-0.6B","object":"chat.completion.chunk","nvext":{"timing":{"request_received_ms":1764316800418,"prefill_wait_time_ms":3.118,"prefill_time_ms":52.907,"ttft_ms":56.025,"total_time_ms":81.377,"kv_hit_rate":0.0}}}`},
}

// BenchmarkDecodeServerTiming is Decode of an event that states the
// server's timing (the cost the timing adds to such an event).
func BenchmarkDecodeServerTiming(b *testing.B) {
	for _, c := range serverTimingEvents {
		b.Run(c.name, func(b *testing.B) {
			be, err := NewBackend(c.backend)
			if err != nil {
				b.Fatal(err)
			}
			ev := SSEEvent{Data: []byte(c.event)}
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if _, err := be.Decode(ev); err != nil {
					b.Fatal(err)
				}
			}
			if c := cpuTime(); c > 0 {
				b.ReportMetric(float64((c-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
