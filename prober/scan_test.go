package prober

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// referenceDecoders are the encoding/json decoders the scanner must agree
// with, by backend name.
var referenceDecoders = []struct {
	backend string
	scan    func([]byte) (Delta, bool)
	ref     func([]byte) (Delta, error)
}{
	{"vllm", scanCompletions, decodeCompletionsJSON},
	{"vllm-chat", scanChat, decodeChatJSON},
	{"sglang", scanSGLang, decodeSGLangJSON},
	{"trt", scanTRT, decodeTRTJSON},
}

// comparable is a Delta with its text decoded.
type comparableDelta struct {
	Text             string
	Tokens           int
	Usage            Usage
	Cumulative       bool
	FinishReason     string
	SpecAcceptLength float64
	Server           ServerTimings
	Done             bool
}

func normal(d Delta) comparableDelta {
	return comparableDelta{d.TextString(), d.Tokens, d.Usage, d.Cumulative, d.FinishReason, d.SpecAcceptLength, d.Server, d.Done}
}

// checkScan fails when the scanner answers for data and encoding/json
// disagrees (an error, or another Delta).
func checkScan(t *testing.T, scan func([]byte) (Delta, bool), ref func([]byte) (Delta, error), data []byte) (answered bool) {
	t.Helper()
	in := bytes.Clone(data)
	got, ok := scan(data)
	if !bytes.Equal(in, data) {
		t.Fatalf("scan(%q) modified its input", in)
	}
	if !ok {
		return false
	}
	want, err := ref(data)
	if err != nil {
		t.Fatalf("scan(%q) answered %+v, but encoding/json fails: %v", data, normal(got), err)
	}
	if diff := cmp.Diff(normal(want), normal(got)); diff != "" {
		t.Fatalf("scan(%q) disagrees with encoding/json (-json +scan):\n%s", data, diff)
	}
	if !json.Valid(data) {
		t.Fatalf("scan(%q) accepted invalid JSON", data)
	}
	return true
}

var scanCases = []string{
	`{"choices":[{"text":" a","finish_reason":null}]}`,
	`{"choices":[{"text":"a\nb\u00e9\ud83d\ude00\"\\\/\b\f\r\t","finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`,
	`{"choices":[{"text":"\ud800x\udc00\ud800\ud800"}]}`,
	"{\"choices\":[{\"text\":\"bad \xff utf8 \xe2\x82\"}]}",
	`{"choices":[],"usage":{}}`,
	`{"choices":null,"usage":null}`,
	`{"choices":[null]}`,
	`{"choices":[{"delta":{"content":"x","reasoning_content":null,"role":"assistant","tool_calls":null}}]}`,
	`{"choices":[{"delta":{"content":"x","reasoning_content":"y"}}]}`,
	`{"choices":[{"delta":{"reasoning":"why"},"finish_reason":"length"}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}`,
	`{"choices":[{"message":{"content":"whole"}}]}`,
	`{"text":"abc","meta_info":{"finish_reason":null,"prompt_tokens":4,"completion_tokens":3,"cached_tokens":0,"spec_accept_length":1.5e0}}`,
	`{"text":"abc","meta_info":{"finish_reason":{"type":"length","length":3}}}`,
	`{"text":"abc","meta_info":{"finish_reason":"stop","completion_tokens":1.0}}`,
	`{"text_output":" t","model_name":"ensemble"}`,
	`{"text_output":null}`,
	`{"error":"boom"}`,
	`{"error":{"message":"boom"}}`,
	`{"object":"error","message":"m"}`,
	`{"object":"text_completion","message":5}`,
	`{"Choices":[{"text":"case folded"}]}`,
	`{"choices":[{"TEXT":"case folded"}]}`,
	`{"choices":[{"text":"a"}],"choices":[{"text":"b"}]}`,
	`{"choices":[{"text":"a"}]} x`,
	`{"choices":[{"text":"a"},]}`,
	`{"choices":[{"text":"a",}]}`,
	`{"choices":[{"text":5}]}`,
	`{"usage":{"prompt_tokens":-0,"completion_tokens":01}}`,
	`{"usage":{"completion_tokens":99999999999999999999}}`,
	`{"x":[1,2,{"y":[true,false,null,-1.5e+3]}],"choices":[{"text":"ok"}]}`,
	` {"choices" : [ { "text" : "sp" } ] } `,
	`{"te\u0078t":"escaped key"}`,
	"{\"\xc5\xbfext\":\"long s\"}",
	// Server timings under a key that differs from the field's name only
	// in case: encoding/json reads them, so the scanner must not skip them.
	`{"choices":[],"Metrics":{"time_to_first_token_ms":5}}`,
	`{"choices":[],"TIMINGS":{"prompt_ms":5}}`,
	`{"choices":[],"NvExt":{"timing":{"ttft_ms":5}}}`,
	// Dynamo's nvext, which the scanners read.
	`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}],"nvext":{"worker_id":{"prefill_worker_id":7},"timing":{"request_received_ms":1764316800418,"prefill_wait_time_ms":3.118,"prefill_time_ms":52.907,"ttft_ms":56.025,"total_time_ms":81.377,"kv_hit_rate":0.0}}}`,
	`{"choices":[{"index":0,"text":"a","finish_reason":"length"}],"nvext":{"timing":{"ttft_ms":null,"total_time_ms":-1,"prefill_time_ms":1e300}}}`,
	`{"choices":[],"nvext":{"timing":null}}`,
	`{"choices":[],"nvext":{"timing":{"ttft_ms":1},"timing":{"total_time_ms":2}}}`,
	`{"choices":[],"nvext":{"timing":{"ttft_ms":1}},"nvext":{"worker_id":{}}}`,
	`{"choices":[],"nvext":{"Timing":{"ttft_ms":1}}}`,
	`{"choices":[],"nvext":{"timing":{"TTFT_ms":1}}}`,
	`{"choices":[],"nvext":{"timing":{"ttft_ms":"1"}}}`,
	`{"choices":[],"nvext":{"timing":{"ttft_ms":1e400}}}`,
	`{"choices":[],"nvext":[]}`,
	`{"choices":[],"nvext":{"timing":[]}}`,
	// sglang's meta_info timing, which the /generate scanner reads.
	`{"text":"a","meta_info":{"finish_reason":"stop","e2e_latency":0.5,"queue_time":0.01,"forward_entry_time":1764316800.25,"prefill_finished_time":1764316800.3125,"request_received_ts":1764316800.25}}`,
	`{"text":"a","meta_info":{"finish_reason":null,"e2e_latency":"0.5","queue_time":1e400}}`,
	`{"text":"a","meta_info":{"finish_reason":"stop","e2e_latency":"0.5"}}`,
	`{"text":"a","meta_info":{"finish_reason":"stop","e2e_latency":1e400,"queue_time":-0.0}}`,
	`{"text":"a","meta_info":{"finish_reason":"stop","e2e_latency":0.5,"e2e_latency":0.6}}`,
	`{"text":"a","meta_info":{"finish_reason":"stop","E2E_latency":0.5}}`,
	`{"text":"a","meta_info":{"finish_reason":"stop","queue_time":null,"e2e_latency":true}}`,
	`{"text":"a","meta_info":{"e2e_latency":0.5,"finish_reason":"length"}}`,
	`[]`, `null`, `"s"`, `{`, `{"choices":[{"text":"unterminated}]}`,
}

func TestScanMatchesJSON(t *testing.T) {
	for _, c := range scanCases {
		for _, d := range referenceDecoders {
			checkScan(t, d.scan, d.ref, []byte(c))
		}
	}
}

// FuzzScanMatchesJSON is the differential fuzz target: whenever the
// hand-rolled scanner answers, encoding/json must agree exactly.
func FuzzScanMatchesJSON(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	for _, c := range benchEvents {
		f.Add([]byte(c.event))
	}
	for _, d := range referenceDecoders {
		for _, tr := range seedTranscripts(f, d.backend) {
			sr := NewStreamReader(bytes.NewReader(tr), FormatAuto, Limits{}, nil)
			for {
				ev, _, err := sr.Next()
				if err != nil {
					break
				}
				f.Add(bytes.Clone(ev.Data))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range referenceDecoders {
			checkScan(t, d.scan, d.ref, data)
		}
	})
}

// TestScanAnswersSteadyState pins that the usual events take the fast
// path (a fallback would be correct but would allocate).
func TestScanAnswersSteadyState(t *testing.T) {
	for _, c := range benchEvents {
		var scan func([]byte) (Delta, bool)
		switch c.backend {
		case "vllm", "truss":
			scan = scanCompletions
		case "vllm-chat", "sglang-oai-chat":
			scan = scanChat
		case "sglang":
			scan = scanSGLang
		case "trt":
			scan = scanTRT
		}
		if _, ok := scan([]byte(c.event)); !ok {
			t.Errorf("%s: scan(%q) fell back", c.backend, c.event)
		}
	}
}

// TestDecodeZeroAllocs: zero allocations per steady-state event, for each
// backend's Decode, including escaped text and a usage block.
func TestDecodeZeroAllocs(t *testing.T) {
	extra := []struct{ backend, event string }{
		{"vllm", `{"id":"c","object":"text_completion","choices":[{"index":0,"text":"line\nnext \u00e9","finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`},
		{"vllm", `{"id":"c","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}}`},
		{"vllm-chat", `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`},
		{"vllm-chat", `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"reasoning_content":"think\t"},"finish_reason":null}]}`},
		{"sglang", `{"text":"caf\u00e9 \"q\"","meta_info":{"id":"x","finish_reason":"stop","prompt_tokens":4,"completion_tokens":3,"cached_tokens":0,"spec_accept_length":2.25}}`},
		// Dynamo: nvext with worker ids on every chunk when disaggregated,
		// and the timing on the last one.
		{"vllm-chat", `{"id":"c","choices":[{"index":0,"delta":{"content":" a"},"finish_reason":null,"logprobs":null}],"created":1,"model":"m","object":"chat.completion.chunk","nvext":{"worker_id":{"prefill_worker_id":7,"decode_worker_id":9}}}`},
		{"vllm-chat", `{"id":"c","choices":[{"index":0,"delta":{"content":" is"},"finish_reason":"length","logprobs":null}],"created":1,"model":"m","object":"chat.completion.chunk","nvext":{"timing":{"request_received_ms":1764316800418,"prefill_wait_time_ms":3.118,"prefill_time_ms":52.907,"ttft_ms":56.025,"total_time_ms":81.377,"kv_hit_rate":0.0}}}`},
		{"vllm", `{"id":"c","choices":[{"index":0,"text":" is","finish_reason":"length"}],"created":1,"model":"m","object":"text_completion","nvext":{"timing":{"ttft_ms":56.025,"total_time_ms":81.377}}}`},
		// sglang with --enable-metrics: every chunk carries the scheduler's
		// timing (testdata/sglang/stated_timing.sse), read without a fallback.
		{"sglang", `{"text":" The sky","output_ids":[785,12884],"meta_info":{"id":"b3e1","finish_reason":null,"prompt_tokens":7,"weight_version":"default","num_retractions":0,"forward_entry_time":1764316800.4203105,"prefill_finished_time":1764316800.479629,"queue_time":0.0008712,"prefill_waiting_latency":0.0003105,"prefill_launch_latency":0.0412467,"reasoning_tokens":0,"completion_tokens":2,"cached_tokens":0}}`},
	}
	all := extra
	for _, c := range benchEvents {
		all = append(all, struct{ backend, event string }{c.backend, c.event})
	}
	for _, c := range all {
		b, err := NewBackend(c.backend)
		if err != nil {
			t.Fatal(err)
		}
		ev := SSEEvent{Data: []byte(c.event)}
		buf := make([]byte, 0, 1024)
		allocs := testing.AllocsPerRun(100, func() {
			d, err := b.Decode(ev)
			if err != nil {
				t.Fatal(err)
			}
			buf = d.AppendText(buf[:0])
		})
		if allocs != 0 {
			t.Errorf("%s: Decode(%q) + AppendText allocates %v times, want 0", c.backend, c.event, allocs)
		}
	}
}

// TestStreamZeroAllocsPerEvent: the whole per-event path (reader, Decode,
// text bookkeeping) allocates nothing per event once the request's
// buffers have grown: a request of 2n events allocates no more than one
// of n events, beyond the growth of Result.Events.
func TestStreamZeroAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race (sync.Pool drops items); make test runs this without -race")
	}
	for _, backend := range []string{"vllm", "vllm-chat", "sglang"} {
		be, _ := NewBackend(backend)
		p := &Prober{Backend: be, Options: RequestOptions{Stream: true}}
		run := func(n int) float64 {
			body := benchStream(backend, n)
			r := bytes.NewReader(body)
			events := make([]Event, 0, 2*n+2) // Result.Events, preallocated
			return testing.AllocsPerRun(20, func() {
				r.Reset(body)
				res := Result{Stream: true, Events: events[:0]}
				if err := p.stream(r, FormatSSE, &res); err != nil {
					t.Fatal(err)
				}
			})
		}
		run(512) // warm the pool's buffers
		small, large := run(256), run(512)
		if large > small {
			t.Errorf("%s: %v allocs for 256 events, %v for 512: allocations grow with events", backend, small, large)
		}
		if small > 2 {
			t.Errorf("%s: %v allocs per request, want at most 2 (the generated text string)", backend, small)
		}
	}
}

// memoScanners are the scanners a scanMemo is used with.
var memoScanners = []struct {
	backend string
	scan    func([]byte) (Delta, textPart, bool)
	ref     func([]byte) (Delta, error)
}{
	{"vllm", scanCompletionsText, decodeCompletionsJSON},
	{"vllm-chat", scanChatText, decodeChatJSON},
	{"trt", scanTRTText, decodeTRTJSON},
}

// checkMemo primes a memo with prev, then fails when its answer for data
// differs from the scanner's in any way, or from encoding/json's.
func checkMemo(t *testing.T, scan func([]byte) (Delta, textPart, bool), ref func([]byte) (Delta, error), prev, data []byte) (hit bool) {
	t.Helper()
	var m scanMemo
	var got Delta
	m.decode(prev, scan, &got)
	hit = m.ok
	if hit {
		hit = m.hit(data, &Delta{})
	}
	got = Delta{}
	ok := m.decode(data, scan, &got)
	want, _, wok := scan(data)
	if ok != wok || ok && (!bytes.Equal(got.Text, want.Text) || got.TextRaw != want.TextRaw || normal(got) != normal(want)) {
		t.Fatalf("after %q, memo answers %q with %+v (%v), the scanner with %+v (%v)", prev, data, got, ok, want, wok)
	}
	checkScan(t, func([]byte) (Delta, bool) { return got, ok }, ref, data)
	return hit
}

// FuzzScanMemo is the differential fuzz target of scanMemo: after any
// event, its answer for the next one is the scanner's (and so
// encoding/json's). Besides the given pair, it tries the first event with
// its text string replaced by arbitrary bytes, which is what makes the
// memo answer.
func FuzzScanMemo(f *testing.F) {
	for _, c := range benchEvents {
		f.Add([]byte(c.event), []byte(strings.Replace(c.event, " token", "x\"y", 1)), []byte(" tok\\\"en"))
	}
	for _, c := range memoChatCases {
		f.Add([]byte(c.prev), []byte(c.next), []byte("y"))
	}
	for _, d := range memoScanners {
		for _, tr := range seedTranscripts(f, d.backend) {
			sr := NewStreamReader(bytes.NewReader(tr), FormatAuto, Limits{}, nil)
			var prev []byte
			for {
				ev, _, err := sr.Next()
				if err != nil {
					break
				}
				if prev != nil {
					f.Add(prev, bytes.Clone(ev.Data), []byte(`a\u00e9\`))
				}
				prev = bytes.Clone(ev.Data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, prev, data, text []byte) {
		for _, d := range memoScanners {
			checkMemo(t, d.scan, d.ref, prev, data)
			var m scanMemo
			if m.decode(prev, d.scan, &Delta{}); m.ok {
				spliced := append(append(append([]byte(nil), m.prefix...), text...), m.suffix...)
				checkMemo(t, d.scan, d.ref, prev, spliced)
			}
		}
	})
}

// memoChatCases are chat events with several text parts: the memo may
// stand on a part only when every other part is empty.
var memoChatCases = []struct {
	prev, next string
	hit        bool
}{
	{`{"choices":[{"delta":{"reasoning_content":"","content":"x"}}]}`, `{"choices":[{"delta":{"reasoning_content":"","content":"yz"}}]}`, true},
	{`{"choices":[{"delta":{"reasoning_content":"","content":"x"}}]}`, `{"choices":[{"delta":{"reasoning_content":"y","content":"x"}}]}`, false},
	{`{"choices":[{"delta":{"reasoning_content":"x","content":""}}]}`, `{"choices":[{"delta":{"reasoning_content":"x","content":"y"}}]}`, false},
	{`{"choices":[{"delta":{"reasoning_content":"","content":""}}]}`, `{"choices":[{"delta":{"reasoning_content":"","content":"y"}}]}`, true},
	{`{"choices":[{"delta":{"reasoning_content":"","content":""}}]}`, `{"choices":[{"delta":{"reasoning_content":"y","content":""}}]}`, false},
	{`{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`, `{"choices":[{"delta":{"content":"c"}},{"delta":{"content":"b"}}]}`, true},
	{`{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`, `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"c"}}]}`, false},
	{`{"choices":[{"message":{"content":"whole"}}]}`, `{"choices":[{"message":{"content":"other"}}]}`, true},
}

// TestScanMemo pins that the memo answers the steady-state events of a
// stream (and, through checkMemo, that it answers them right), and not an
// event whose bytes around the text differ.
func TestScanMemo(t *testing.T) {
	for _, c := range benchEvents {
		var scan func([]byte) (Delta, textPart, bool)
		var ref func([]byte) (Delta, error)
		for _, d := range memoScanners {
			if d.backend == c.backend {
				scan, ref = d.scan, d.ref
			}
		}
		if scan == nil {
			continue
		}
		for _, text := range []string{"", "x", `a\"b`, `\u00e9\n`, "\xe2\x82\xac", `\ud83d\ude00`} {
			next := strings.Replace(c.event, " token", text, 1)
			if !checkMemo(t, scan, ref, []byte(c.event), []byte(next)) {
				t.Errorf("%s: memo missed %q after %q", c.backend, next, c.event)
			}
		}
		for _, next := range []string{
			strings.Replace(c.event, `"finish_reason":null`, `"finish_reason":"stop"`, 1),
			strings.Replace(c.event, " token", `x"`, 1),
			strings.Replace(c.event, " token", `x\`, 1),
			strings.Replace(c.event, " token", "\x01", 1),
			strings.Replace(c.event, "{", "{ ", 1),
			c.event + "x",
		} {
			if next != c.event && checkMemo(t, scan, ref, []byte(c.event), []byte(next)) {
				t.Errorf("%s: memo answered %q after %q", c.backend, next, c.event)
			}
		}
	}
	for _, c := range memoChatCases {
		if hit := checkMemo(t, scanChatText, decodeChatJSON, []byte(c.prev), []byte(c.next)); hit != c.hit {
			t.Errorf("after %q, memo hit for %q = %v, want %v", c.prev, c.next, hit, c.hit)
		}
	}
}

// TestStreamPresizedEvents: Result.Events is sized from the requested
// output length, and stays nil when the stream carried no output.
func TestStreamPresizedEvents(t *testing.T) {
	be, _ := NewBackend("vllm")
	p := &Prober{Backend: be, Options: RequestOptions{Stream: true}}
	res := Result{Stream: true, RequestedOutputTokens: 300}
	if err := p.stream(bytes.NewReader(benchStream("vllm", 256)), FormatSSE, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 256 || cap(res.Events) != 300 {
		t.Errorf("Events: len %d cap %d, want 256 and 300", len(res.Events), cap(res.Events))
	}
	res = Result{Stream: true, RequestedOutputTokens: 300}
	usageOnly := `data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}` + "\n\ndata: [DONE]\n\n"
	_ = p.stream(strings.NewReader(usageOnly), FormatSSE, &res)
	if res.Events != nil {
		t.Errorf("Events = %v (cap %d) for a stream without output, want nil", res.Events, cap(res.Events))
	}
}

// TestScanTRTLogProbCount pins how output_log_probs counts a response's
// tokens on the fast path and on the reference path alike.
func TestScanTRTLogProbCount(t *testing.T) {
	for _, tc := range []struct {
		data string
		want int
	}{
		{`{"output_log_probs":[0.0,-0.5,-1.25],"text_output":" a b c"}`, 3},
		{`{"output_log_probs":[],"text_output":" a"}`, 1},
		{`{"output_log_probs":0.0,"text_output":" a"}`, 1},
		{`{"output_log_probs":null,"text_output":" a"}`, 1},
		{`{"output_log_probs":[[0.0,0.0]],"text_output":" a b"}`, 2}, // one row per beam
		{`{"output_log_probs":[null,0.0],"text_output":" a b"}`, 2},
		{`{"text_output":" a"}`, 1},
	} {
		d, err := trtGenerateStream{}.Decode(SSEEvent{Data: []byte(tc.data)})
		if err != nil || d.Tokens != tc.want {
			t.Errorf("Decode(%q) = %d tokens, %v; want %d", tc.data, d.Tokens, err, tc.want)
		}
		checkScan(t, scanTRT, decodeTRTJSON, []byte(tc.data))
	}
}
