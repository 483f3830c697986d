// Package prober sends requests to LLM inference servers and measures them.
// It owns one Backend per wire protocol, the stream reader, Run (one
// request becomes one Result), the continuous Scheduler, Benchmark and the
// pacers.
//
// Invariants: no Prometheus imports (the exporter maps Results to metrics);
// durations are differences of time.Now values, which are monotonic.
//
// # Timing definitions
//
//   - Sent is taken immediately before client.Do; Scheduled is when the
//     pacer released the request; Sent − Scheduled is client queue time.
//   - Every event is stamped once, when the Read that delivered the end of
//     its data returned, before any decoding. Events that arrived in one
//     Read share its time.
//   - An output event is one that carries text or tokens. Role-only,
//     usage-only, finish-only events and keep-alive comments are not output
//     events and never move any timestamp below.
//   - FirstToken is the first output event; TTFT = FirstToken − Sent.
//   - End is the arrival of [DONE], or of EOF for streams without one, or
//     the failure; E2E = End − Sent.
//   - Chunk ITL is the gap between consecutive output events (bench_serving
//     on OpenAI backends). Per-token ITL splits each gap evenly over the
//     event's tokens, counted from cumulative completion_tokens (sglang's
//     meta_info, vLLM's continuous usage), the protocol (TensorRT-LLM: one),
//     or our tokenizer on the chunk's text; with none of these it is one
//     per event and equals chunk ITL.
//   - TPOT = (End − FirstToken) / (OutputTokens − 1), for at least 2 tokens.
//
// Token counts prefer the server (usage, then meta_info), then our
// tokenizer, then events (streaming) or the requested length. Each count
// records its TokenSource.
package prober
