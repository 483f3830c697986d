// Package simulator is an in-process LLM inference server used as a probe
// target, a benchmark peer and a source of ground truth for timing error.
//
// It speaks every wire protocol the prober speaks, framed byte for byte as the
// real servers frame their streams:
//
//   - sglang POST /generate: cumulative "text" and "output_ids" with a
//     "meta_info" block, then "data: [DONE]" (sglang 0.4/0.5 framing, compact
//     orjson separators).
//   - OpenAI POST /v1/completions and POST /v1/chat/completions, streaming and
//     not, in vLLM's shape: "cmpl-"/"chatcmpl-" ids, a chat role chunk with
//     empty content sent together with the first token, content deltas, the
//     finish_reason on the chunk that carries the last token, a usage-only
//     chunk with "choices":[] only when stream_options.include_usage is set,
//     then "data: [DONE]". Completion chunks are serialised with every field
//     (pydantic exclude_unset=False, so "usage":null appears), chat chunks
//     with only the fields set (exclude_unset=True), as vLLM 0.6 to 0.10 do.
//     GET /v1/models, POST /tokenize and POST /detokenize are answered too.
//   - TensorRT-LLM (Triton) POST /v2/models/{model}/generate_stream and
//     /generate: one event per chunk, no terminator.
//   - truss POST /v1/models/model:predict: the OpenAI completions body and
//     stream.
//   - OpenAI's Responses API, POST /v1/responses, and Anthropic's Messages
//     API, POST /v1/messages, as vLLM's converters write them: typed events
//     with an "event:" line (response.created, response.output_text.delta,
//     then response.completed or response.incomplete with the usage;
//     message_start with the input count, content_block_delta text deltas,
//     message_delta with stop_reason and usage, message_stop), no [DONE].
//   - POST /v1/embeddings: one JSON object with a 384-float embedding per
//     input and the prompt count, after TTFT's prefill model.
//
// # Token model
//
// Output tokens are short words drawn from a fixed list by a per-request
// seeded generator, so text looks plausible and never needs JSON escaping;
// each is one token of the Qwen3 tokenizer. Prompt tokens are counted
// exactly with that tokenizer, the one the simulator names on /model_info,
// as the real servers count them: a text prompt is encoded as it is, and a
// chat request is the model's chat template rendered over the messages with
// the generation prompt, so its count includes the template's role markers
// (see countText). When a prompt is given as token ids, its length is the
// count.
//
// # Latency model
//
// Time runs from admission (a slot under --sim.max-running-requests; waiting
// requests queue FIFO, so load raises TTFT as on a real server). The first
// token is written TTFT + PrefillPerToken*prompt_tokens + jitter after
// admission. Each later chunk follows the previous one by one decode step,
// ITL + ITLPerRunningRequest*running + jitter, and carries TokensPerChunk
// tokens (several to mimic speculative decoding). The schedule is absolute,
// as an engine's is: a slow client does not slow generation, it makes writes
// pile up. With ITL and jitter zero the decode loop never touches a timer.
//
// Without ignore_eos (or a minimum length that covers it) generation may stop
// at a seeded geometric EOS point with mean MeanOutputTokens; with it, exactly
// the requested maximum is produced.
//
// # Write modes
//
// By default every SSE event is its own Write followed by Flush, as uvicorn
// sends them. In coalesced mode events accumulate in a buffer that is written
// only when it fills or the stream ends, so that the client, not the server,
// bounds throughput.
//
// # Ground truth
//
// For each request the server records, on its monotonic clock, when the
// request arrived (its handler started), when it was admitted, and when each
// event was written (the moment the Write+Flush that carried it returned; in
// coalesced mode, the flush of the buffer that held it). Served through
// StampListener with ConnContext (HTTP/1.x), it also records the kernel's
// receive time of the request (Truth.Received, Linux), when the server read
// it (Truth.Read), and when the write system call carrying each event began
// (Chunk.Wrote). TTFT then counts from the kernel's receipt: the time a
// request waits to be read and for net/http to run its handler is the
// server's, not the client's; and a write's start, unlike its return, is
// not delayed by the writer's wait for a CPU after the call.
//
// Records are keyed by the X-Request-Id request header (generated when
// absent, echoed in the response), kept in a ring of TruthSize entries, and
// served by Server.Truth, Server.Truths, Server.WaitTruth and GET
// /debug/truth/{id}. A record is published when its handler returns.
//
// # Server metrics
//
// GET /metrics serves the engine's own Prometheus metrics in vLLM's names
// (vllm/v1/metrics/loggers.py) or, with MetricsNames sglang, sglang's
// (python/sglang/srt/metrics/collector.py): their HELP and TYPE lines,
// label sets, bucket layouts and prometheus_client's text (metrics.go).
// One server serves one name set, as a real engine does. Every value comes
// from the ground truth above, through one function (engineMetrics.observe):
// TTFT, queue, prefill, decode, E2E and inter-token histograms from a
// request's arrival, admission and token-chunk flush times, counted once per
// admitted request when its last token chunk is flushed (before the stream's
// end, so a client that read the end finds it counted; with coalescing the
// last chunk leaves with the end, so the request is counted just after, when
// the handler returns, and a scrape at once may miss it); prompt and
// generation token counters; the prefix cache's queries and hits (vLLM) or
// cached tokens (sglang) from a deterministic block model (prefixCache:
// chained block hashes, blocks of 16 tokens under vLLM's names and 1 under
// sglang's, the last prompt token never a hit, least recently used blocks
// evicted beyond KVCacheTokens); and live gauges: requests running and
// waiting for a slot under MaxRunningRequests, and KV-cache usage, the
// blocks of prompt plus output that running requests reserve from admission
// over KVCacheTokens. Preemptions stay zero: the simulator never preempts.
// POST /reset_prefix_cache (vLLM) and POST /flush_cache (sglang) empty the
// prefix cache. Each read's gauges are kept (Server.Scrapes) as the ground
// truth of what a sampler saw. POST /start_profile and /stop_profile answer
// 200 as sglang's do and are only counted (Server.ProfileCalls): there is no
// profiler.
//
// A request's images (a chat message's image_url parts, sglang's
// image_data beside a /generate text or a completions prompt, as base64
// data URLs) count in its prompt tokens as a Qwen2-VL engine counts them,
// from each image's size (datasets.Qwen2VLImageTokens); an image by
// http(s) URL counts 0, as the simulator fetches nothing.
//
// # Faults
//
// Faults are injected per request with the X-Servingprobe-Fault header (unless
// HeaderFaults is off) or at configured rates; see Fault for the list.
package simulator
