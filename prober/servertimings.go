package prober

import (
	"math"
	"time"

	"github.com/servingprobe/servingprobe/internal/jsonscan"
)

// The per-request timings servers put in their responses, read into
// ServerTimings: vLLM's "metrics" and llama.cpp's "timings" in their
// OpenAI-style responses (chat and completions, the last stream chunk or
// the whole answer), NVIDIA Dynamo's "nvext.timing" on its OpenAI
// frontend's last chunk, and sglang's meta_info on /generate.

// vllmMetricsJSON is vLLM's PerRequestMetrics (the response's "metrics",
// vllm/entrypoints/generate/base/protocol.py): every field is optional.
type vllmMetricsJSON struct {
	TimeToFirstTokenMS *float64 `json:"time_to_first_token_ms"`
	GenerationTimeMS   *float64 `json:"generation_time_ms"`
	QueueTimeMS        *float64 `json:"queue_time_ms"`
}

// llamaTimingsJSON is llama.cpp's "timings" (tools/server): prompt_n
// tokens processed in prompt_ms, predicted_n generated in predicted_ms,
// cache_n prompt tokens reused from the cache.
type llamaTimingsJSON struct {
	CacheN      *int     `json:"cache_n"`
	PromptN     *int     `json:"prompt_n"`
	PromptMS    *float64 `json:"prompt_ms"`
	PredictedN  *int     `json:"predicted_n"`
	PredictedMS *float64 `json:"predicted_ms"`
}

// dynamoNvextJSON is the "nvext" object NVIDIA Dynamo's OpenAI frontend
// adds to a response (NvExtResponse, lib/llm/src/protocols/openai/
// nvext.rs); only its timing is read.
type dynamoNvextJSON struct {
	Timing *dynamoTimingJSON `json:"timing"`
}

// dynamoTimingJSON is Dynamo's TimingInfo (lib/llm/src/protocols/common/
// timing.rs), every duration from the frontend's receipt of the request
// (its RequestTracker): the wait until prefill starts, prefill itself, the
// first token and the whole request. Dynamo sends it only when the request
// asks with "nvext": {"extra_fields": ["timing"]}, and only on the chunk
// that carries the finish reason (the last one with text).
type dynamoTimingJSON struct {
	PrefillWaitTimeMS *float64 `json:"prefill_wait_time_ms"`
	PrefillTimeMS     *float64 `json:"prefill_time_ms"`
	TTFTMS            *float64 `json:"ttft_ms"`
	TotalTimeMS       *float64 `json:"total_time_ms"`
}

// dynamoTimings maps Dynamo's timing, in dynamoTimingJSON's field order
// and milliseconds, NaN where not stated: its TTFT, the wait for prefill
// as the queue, the prefill, and the total.
func dynamoTimings(ms [4]float64) ServerTimings {
	var st ServerTimings
	st.QueueDuration, _ = durationOf(ms[0], time.Millisecond)
	st.PromptEvalDuration, _ = durationOf(ms[1], time.Millisecond)
	st.FirstToken, _ = durationOf(ms[2], time.Millisecond)
	st.TotalDuration, _ = durationOf(ms[3], time.Millisecond)
	return st
}

// orNaN is *v, NaN when v is nil (not stated).
func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// maxPhase bounds a stated duration: no phase of a request takes a day,
// so a larger value is not a timing and is not recorded.
const maxPhase = 24 * time.Hour

// durationOf converts a stated count of unit; false for a value that is
// NaN, negative or beyond maxPhase.
func durationOf(v float64, unit time.Duration) (time.Duration, bool) {
	if math.IsNaN(v) || v < 0 || v > float64(maxPhase/unit) {
		return 0, false
	}
	return time.Duration(math.Round(v * float64(unit))), true
}

// msDuration converts a stated millisecond count; false for a value that
// is absent or not a timing (durationOf).
func msDuration(v *float64) (time.Duration, bool) {
	if v == nil {
		return 0, false
	}
	return durationOf(*v, time.Millisecond)
}

func count(v *int) int {
	if v == nil || *v < 0 {
		return 0
	}
	return *v
}

// serverTimings is what m, t and nv state, the zero ServerTimings when
// all are nil.
func serverTimings(m *vllmMetricsJSON, t *llamaTimingsJSON, nv *dynamoNvextJSON) ServerTimings {
	var st ServerTimings
	if nv != nil && nv.Timing != nil {
		dt := nv.Timing
		st = dynamoTimings([4]float64{orNaN(dt.PrefillWaitTimeMS), orNaN(dt.PrefillTimeMS), orNaN(dt.TTFTMS), orNaN(dt.TotalTimeMS)})
	}
	if m != nil {
		st.FirstToken, _ = msDuration(m.TimeToFirstTokenMS)
		st.QueueDuration, _ = msDuration(m.QueueTimeMS)
		st.EvalDuration, _ = msDuration(m.GenerationTimeMS)
	}
	if t != nil {
		if d, ok := msDuration(t.PromptMS); ok {
			st.PromptEvalDuration, st.FirstToken = d, d
		}
		st.EvalDuration, _ = msDuration(t.PredictedMS)
		st.PromptEvalCount, st.EvalCount, st.PromptCachedCount = count(t.PromptN), count(t.PredictedN), count(t.CacheN)
	}
	return st
}

// sglangTimes are the timing fields of sglang's meta_info on /generate
// (python/sglang/srt/observability/req_time_stats.py: the API server's
// and the scheduler's convert_to_output_meta_info, and the tokenizer
// manager's e2e_latency), NaN where a field was not stated. Durations are
// in seconds; the timestamps are Unix seconds, all converted to the
// tokenizer manager's wall clock from the same monotonic clock, so their
// differences are the server's own durations.
type sglangTimes struct {
	// E2E is e2e_latency: from the tokenizer manager's receipt of the
	// request to its finish. Sent on the last chunk, always.
	E2E float64
	// Queue is queue_time: the wait in the scheduler's queue. The rest
	// need --enable-metrics: Queue, ForwardEntry (forward_entry_time) and
	// PrefillFinished (prefill_finished_time) come on every chunk once
	// set, Received (request_received_ts) on the last chunk only; all are
	// read from the last chunk (sglangRawTimes).
	Queue, ForwardEntry, PrefillFinished, Received float64
}

// server maps t onto ServerTimings. sglang states no first-token time of
// its own: its time to first token is derived, prefill_finished_time −
// request_received_ts (the first token is sampled by the prefill pass),
// from the request's arrival to the end of its prefill. The hop of that
// token back through the detokenizer to the HTTP response is not in it
// (it counts as outside the server). It is kept only when not longer than
// e2e_latency, where that is stated.
func (t sglangTimes) server() ServerTimings {
	var st ServerTimings
	st.TotalDuration, _ = durationOf(t.E2E, time.Second)
	st.QueueDuration, _ = durationOf(t.Queue, time.Second)
	if d, ok := between(t.Received, t.PrefillFinished); ok && (st.TotalDuration == 0 || d <= st.TotalDuration) {
		st.FirstToken = d
	}
	st.PromptEvalDuration, _ = between(t.ForwardEntry, t.PrefillFinished)
	return st
}

// between is the duration from Unix time a to b, in seconds; false unless
// both are stated, positive and finite, and b is not before a.
func between(a, b float64) (time.Duration, bool) {
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return 0, false
	}
	return durationOf(b-a, time.Second)
}

// checked is t without the durations that cannot be a request's phase
// (below zero or beyond maxPhase), for timings decoded straight into
// ServerTimings (ollama's nanoseconds).
func (t ServerTimings) checked() ServerTimings {
	for _, d := range []*time.Duration{&t.TotalDuration, &t.LoadDuration, &t.PromptEvalDuration, &t.EvalDuration, &t.FirstToken, &t.QueueDuration} {
		if *d < 0 || *d > maxPhase {
			*d = 0
		}
	}
	return t
}

// scanNvext reads Dynamo's nvext object for the chat and completions
// scanners (see scan.go), into st as serverTimings reads it: its timing
// is read, everything else (worker ids, token ids) skipped. Dynamo may
// send nvext on every chunk (its worker ids, when disaggregated), so it is
// read here rather than left to encoding/json. false means fall back.
func scanNvext(s *jsonscan.Scanner, st *ServerTimings) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '{' || !s.Enter() {
		return false
	}
	var m jsonscan.Seen
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "timing":
			ok = m.Once(0) && scanDynamoTiming(s, st)
		default:
			ok = !jsonscan.Folds(k, "timing") && s.Skip()
		}
		if !ok {
			return false
		}
	}
	s.Leave()
	return true
}

// scanDynamoTiming reads nvext.timing (dynamoTimingJSON).
func scanDynamoTiming(s *jsonscan.Scanner, st *ServerTimings) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '{' || !s.Enter() {
		return false
	}
	var m jsonscan.Seen
	n := math.NaN()
	ms := [4]float64{n, n, n, n}
	for first := true; ; first = false {
		k, end, ok := s.Key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(k) {
		case "prefill_wait_time_ms":
			ok = m.Once(0) && s.Float(&ms[0])
		case "prefill_time_ms":
			ok = m.Once(1) && s.Float(&ms[1])
		case "ttft_ms":
			ok = m.Once(2) && s.Float(&ms[2])
		case "total_time_ms":
			ok = m.Once(3) && s.Float(&ms[3])
		default:
			ok = !jsonscan.Folds(k, "prefill_wait_time_ms", "prefill_time_ms", "ttft_ms", "total_time_ms") && s.Skip()
		}
		if !ok {
			return false
		}
	}
	s.Leave()
	*st = dynamoTimings(ms) // null leaves a field NaN, as encoding/json leaves it nil
	return true
}
