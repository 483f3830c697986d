package prober

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Steady-state events as real servers send them (vLLM and sglang field
// order), one token each.
var benchEvents = []struct {
	backend string
	event   string
}{
	{"vllm", `{"id":"cmpl-8a1f0c2e","object":"text_completion","created":1730000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"text":" token","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`},
	{"vllm-chat", `{"id":"chatcmpl-8a1f0c2e","object":"chat.completion.chunk","created":1730000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`},
	{"sglang-oai-chat", `{"id":"5f1c","object":"chat.completion.chunk","created":1730000000,"model":"default","choices":[{"index":0,"delta":{"role":null,"content":" token","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}`},
	{"sglang", `{"text":"The quick brown fox jumps over the lazy dog token","meta_info":{"id":"5f1c","finish_reason":null,"prompt_tokens":128,"weight_version":"default","completion_tokens":10,"cached_tokens":0,"e2e_latency":0.05}}`},
	{"trt", `{"model_name":"ensemble","model_version":"1","sequence_end":false,"sequence_id":0,"sequence_start":false,"text_output":" token"}`},
	{"truss", `{"id":"cmpl-1","object":"text_completion","created":1730000000,"model":"m","choices":[{"index":0,"text":" token","logprobs":null,"finish_reason":null}]}`},
}

// BenchmarkDecode is one backend's Decode of one steady-state event.
func BenchmarkDecode(b *testing.B) {
	for _, c := range benchEvents {
		b.Run(c.backend, func(b *testing.B) {
			be, err := NewBackend(c.backend)
			if err != nil {
				b.Fatal(err)
			}
			ev := SSEEvent{Data: []byte(c.event)}
			b.SetBytes(int64(len(c.event)))
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

// benchStream is a whole SSE body of n token events for a backend, ending
// with a finish chunk and [DONE] (sglang: cumulative text, growing).
func benchStream(backend string, n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		switch backend {
		case "sglang":
			fmt.Fprintf(&buf, "data: {\"text\":\"%s\",\"meta_info\":{\"id\":\"5f1c\",\"finish_reason\":null,\"prompt_tokens\":128,\"completion_tokens\":%d,\"cached_tokens\":0}}\n\n",
				strings.Repeat(" tok", i+1), i+1)
		case "vllm":
			buf.WriteString("data: " + benchEvents[0].event + "\n\n")
		case "vllm-chat":
			buf.WriteString("data: " + benchEvents[1].event + "\n\n")
		case "trt":
			buf.WriteString("data: " + benchEvents[4].event + "\n\n")
		}
	}
	switch backend {
	case "vllm":
		buf.WriteString(`data: {"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":128,"completion_tokens":` + fmt.Sprint(n) + "}}\n\ndata: [DONE]\n\n")
	case "vllm-chat":
		buf.WriteString(`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":128,"completion_tokens":` + fmt.Sprint(n) + "}}\n\ndata: [DONE]\n\n")
	case "sglang":
		buf.WriteString("data: [DONE]\n\n")
	}
	return buf.Bytes()
}

// BenchmarkStream is the client's whole per-token path without a socket:
// the stream reader, Decode and the bookkeeping of Prober.stream, per token
// (a 256-token request; per-request costs are amortised over 256 tokens).
func BenchmarkStream(b *testing.B) {
	const n = 256
	for _, backend := range []string{"vllm", "vllm-chat", "sglang", "trt"} {
		b.Run(backend, func(b *testing.B) {
			be, err := NewBackend(backend)
			if err != nil {
				b.Fatal(err)
			}
			p := &Prober{Backend: be, Options: RequestOptions{Stream: true}}
			body := benchStream(backend, n)
			r := bytes.NewReader(body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				r.Reset(body)
				res := Result{Stream: true, RequestedOutputTokens: n} // as Run sets it
				if err := p.stream(r, FormatSSE, &res); err != nil {
					b.Fatal(err)
				}
			}
			reportPerToken(b, cpu, n)
		})
	}
}

// BenchmarkStreamReaderTimeNow is the reader with the real clock, one event
// per read (the per-token-flush shape: one read per token).
func BenchmarkStreamReaderTimeNow(b *testing.B) {
	ev := []byte("data: " + benchEvents[1].event + "\n\n")
	r := &stepReader{}
	sr := NewStreamReader(r, FormatSSE, Limits{}, nil)
	body := bytes.Repeat(ev, 256)
	b.ReportAllocs()
	for b.Loop() {
		r.b, r.step = body, len(ev)
		sr.Reset(r, FormatSSE, Limits{}, time.Now)
		for {
			if _, _, err := sr.Next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/event")
}

// reportPerToken reports wall and CPU time per token of a b.Loop benchmark
// of n tokens per iteration; cpu is cpuTime() before the loop. The CPU
// figure (the whole process: GC included) is the robust one on a shared
// machine, where wall time also counts time spent waiting for a core.
func reportPerToken(b *testing.B, cpu time.Duration, n int) {
	tokens := float64(b.N * n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tokens, "ns/token")
	if c := cpuTime(); c > 0 {
		b.ReportMetric(float64((c-cpu).Nanoseconds())/tokens, "cpu-ns/token")
	}
}
