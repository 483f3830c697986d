package prober

import (
	"testing"
	"time"
)

// TestDecodeServerTimings: vLLM's metrics object, llama.cpp's timings
// object and Dynamo's nvext.timing, on a chat and a completions chunk, and
// sglang's meta_info on /generate, are read into ServerTimings by the
// decoders the prober runs (the allocation-free scanner hands an OpenAI
// chunk with such an object to encoding/json; it reads sglang's fields
// itself). The objects are written from the servers' sources: vLLM's
// PerRequestMetrics (vllm/entrypoints/generate/base/protocol.py),
// llama.cpp's get_formated_timings (tools/server), ai-dynamo/dynamo's
// TimingInfo (lib/llm/src/protocols/common/timing.rs at commit 0353adc8,
// sent by the chat and completions delta generators with the finish
// reason), sgl-project/sglang's meta_info (python/sglang/srt/managers/
// tokenizer_manager.py at 001067ff, observability/req_time_stats.py at
// 00ce49e0). testdata/sglang/stated_timing.sse and
// testdata/vllm-chat/dynamo_nvext_timing.sse are whole streams of each.
func TestDecodeServerTimings(t *testing.T) {
	const (
		vllm  = `"metrics":{"time_to_first_token_ms":48.25,"generation_time_ms":310.5,"queue_time_ms":2.0,"mean_itl_ms":10.35,"tokens_per_second":96.6}`
		llama = `"timings":{"cache_n":3,"prompt_n":12,"prompt_ms":35.5,"prompt_per_token_ms":2.958,"prompt_per_second":338.0,"predicted_n":31,"predicted_ms":401.75,"predicted_per_token_ms":12.96,"predicted_per_second":77.16}`
		bad   = `"metrics":{"time_to_first_token_ms":-3,"queue_time_ms":1e300}`
	)
	const (
		// Dynamo's TimingInfo (lib/llm/src/protocols/common/timing.rs),
		// on the chunk with the finish reason.
		dynamo = `"nvext":{"timing":{"request_received_ms":1764316800418,"prefill_wait_time_ms":3.118,"prefill_time_ms":52.907,"ttft_ms":56.025,"total_time_ms":81.377,"kv_hit_rate":0.0}}`
		// sglang's meta_info timing with --enable-metrics
		// (python/sglang/srt/observability/req_time_stats.py), on the
		// last chunk; timestamps exact in binary, so the derived TTFT
		// (prefill finished − received) is exactly 62.5 ms.
		sglang = `"forward_entry_time":1764316800.25,"prefill_finished_time":1764316800.3125,"queue_time":0.0008712,"prefill_waiting_latency":0.0003105,"prefill_launch_latency":0.0412467,"e2e_latency":0.0958311,"request_received_ts":1764316800.25,"api_server_dispatch_finish_ts":1764316800.2512456,"request_finished_ts":1764316800.3458311,"inference_time":0.0958311,"decode_throughput":87.41`
	)
	dynamoWant := ServerTimings{FirstToken: 56025 * time.Microsecond, QueueDuration: 3118 * time.Microsecond,
		PromptEvalDuration: 52907 * time.Microsecond, TotalDuration: 81377 * time.Microsecond}
	sglangWant := ServerTimings{FirstToken: 62500 * time.Microsecond, QueueDuration: 871200, PromptEvalDuration: 62500 * time.Microsecond, TotalDuration: 95831100}
	vllmWant := ServerTimings{FirstToken: 48250 * time.Microsecond, QueueDuration: 2 * time.Millisecond, EvalDuration: 310500 * time.Microsecond}
	llamaWant := ServerTimings{FirstToken: 35500 * time.Microsecond, PromptEvalDuration: 35500 * time.Microsecond, PromptEvalCount: 12,
		EvalDuration: 401750 * time.Microsecond, EvalCount: 31, PromptCachedCount: 3}
	for _, tc := range []struct {
		name string
		b    Backend
		data string
		want ServerTimings
	}{
		{"vllm chat", openAIChat{}, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":31,"total_tokens":36},` + vllm + `}`, vllmWant},
		{"vllm completions", openAICompletions{}, `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"x","finish_reason":"length"}],` + vllm + `}`, vllmWant},
		{"llama.cpp chat", openAIChat{}, `{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk",` + llama + `}`, llamaWant},
		{"llama.cpp completions", openAICompletions{}, `{"choices":[{"text":"","index":0,"finish_reason":"length"}],"created":1,"model":"m","object":"text_completion","id":"c",` + llama + `}`, llamaWant},
		{"out of range values are not timings", openAIChat{}, `{"choices":[],` + bad + `}`, ServerTimings{}},
		{"null objects", openAIChat{}, `{"choices":[{"index":0,"delta":{"content":"a"}}],"metrics":null,"timings":null,"nvext":null}`, ServerTimings{}},
		{"dynamo chat", openAIChat{}, `{"id":"c","choices":[{"index":0,"delta":{"content":" is"},"finish_reason":"length","logprobs":null}],"created":1,"model":"m","object":"chat.completion.chunk",` + dynamo + `}`, dynamoWant},
		{"dynamo completions", openAICompletions{}, `{"id":"c","choices":[{"index":0,"text":" is","finish_reason":"length"}],"created":1,"model":"m","object":"text_completion",` + dynamo + `}`, dynamoWant},
		{"dynamo worker ids only", openAIChat{}, `{"choices":[{"index":0,"delta":{"content":"a"}}],"nvext":{"worker_id":{"prefill_worker_id":7,"decode_worker_id":9}}}`, ServerTimings{}},
		{"dynamo before its first token", openAIChat{}, `{"choices":[],"nvext":{"timing":{"request_received_ms":1764316800418}}}`, ServerTimings{}},
		{"sglang last chunk", sglangGenerate{}, `{"text":" The sky is","meta_info":{"id":"b","finish_reason":"stop","prompt_tokens":7,"completion_tokens":3,"cached_tokens":0,` + sglang + `}}`, sglangWant},
		{"sglang without --enable-metrics", sglangGenerate{}, `{"text":"a","meta_info":{"id":"b","finish_reason":"stop","prompt_tokens":7,"completion_tokens":1,"cached_tokens":0,"e2e_latency":0.0958311}}`,
			ServerTimings{TotalDuration: 95831100}},
		// sglang repeats its scheduler's timing on every chunk; only the
		// last chunk's, with the finish reason, is read.
		{"sglang mid-stream", sglangGenerate{}, `{"text":"a","meta_info":{"id":"b","finish_reason":null,"prompt_tokens":7,"completion_tokens":1,"cached_tokens":0,"forward_entry_time":1764316800.25,"prefill_finished_time":1764316800.3125,"queue_time":0.0008712,"prefill_waiting_latency":null,"prefill_launch_latency":null}}`,
			ServerTimings{}},
		{"sglang plain finish reason", sglangGenerate{}, `{"text":"a","meta_info":{"id":"b","finish_reason":"stop","prompt_tokens":7,"completion_tokens":1,"cached_tokens":0,"forward_entry_time":1764316800.25,"prefill_finished_time":1764316800.3125,"queue_time":0.0008712,"prefill_waiting_latency":null,"prefill_launch_latency":null}}`,
			ServerTimings{QueueDuration: 871200, PromptEvalDuration: 62500 * time.Microsecond}},
		{"sglang number beyond float64 is not a timing", sglangGenerate{}, `{"text":"a","meta_info":{"finish_reason":"stop","prompt_tokens":7,"completion_tokens":1,"e2e_latency":1e400,"queue_time":0.5}}`,
			ServerTimings{QueueDuration: 500 * time.Millisecond}},
		{"sglang prefill before arrival is not a TTFT", sglangGenerate{}, `{"text":"a","meta_info":{"finish_reason":"stop","prompt_tokens":7,"completion_tokens":1,"prefill_finished_time":1764316800.25,"request_received_ts":1764316800.5,"queue_time":-0.001}}`, ServerTimings{}},
		{"sglang TTFT beyond its e2e is not kept", sglangGenerate{}, `{"text":"a","meta_info":{"finish_reason":"stop","prompt_tokens":7,"completion_tokens":1,"e2e_latency":0.05,"request_received_ts":1764316800.25,"prefill_finished_time":1764316800.5}}`,
			ServerTimings{TotalDuration: 50 * time.Millisecond}},
		// A timing that is not a number loses that timing, not the
		// request (the tokens and the finish still count).
		{"sglang timing not a number", sglangGenerate{}, `{"text":"a","meta_info":{"finish_reason":"stop","prompt_tokens":7,"completion_tokens":1,"e2e_latency":"n/a","queue_time":true,"forward_entry_time":{},"request_received_ts":[1]}}`, ServerTimings{}},
		{"sglang timestamps not Unix times", sglangGenerate{}, `{"text":"a","meta_info":{"finish_reason":"stop","prompt_tokens":7,"completion_tokens":1,"request_received_ts":0,"prefill_finished_time":0.05,"forward_entry_time":-1}}`, ServerTimings{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, memo := range []bool{false, true} {
				var d Delta
				var err error
				if memo {
					err = tc.b.decodeMemo(SSEEvent{Data: []byte(tc.data)}, &scanMemo{}, &d)
				} else {
					d, err = tc.b.Decode(SSEEvent{Data: []byte(tc.data)})
				}
				if err != nil {
					t.Fatal(err)
				}
				if d.Server != tc.want {
					t.Errorf("memo %v: Server = %+v, want %+v", memo, d.Server, tc.want)
				}
			}
		})
	}
}
