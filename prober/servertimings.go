package prober

import (
	"math"
	"time"
)

// The per-request timings vLLM and llama.cpp put in their OpenAI-style
// responses (chat and completions, the last stream chunk or the whole
// answer). Both are read into ServerTimings.

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

// msDuration converts a stated millisecond count; false for a value that
// is absent, negative, not finite or beyond a day (no request's phase is:
// such a value is not a timing, and is not recorded).
func msDuration(v *float64) (time.Duration, bool) {
	if v == nil || math.IsNaN(*v) || *v < 0 || *v > 24*3600*1000 {
		return 0, false
	}
	return time.Duration(math.Round(*v * 1e6)), true
}

func count(v *int) int {
	if v == nil || *v < 0 {
		return 0
	}
	return *v
}

// serverTimings is what m and t state, the zero ServerTimings when both
// are nil.
func serverTimings(m *vllmMetricsJSON, t *llamaTimingsJSON) ServerTimings {
	var st ServerTimings
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
