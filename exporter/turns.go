package exporter

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/servingprobe/servingprobe/prober"
)

// labelTurn is a conversation probe's turn, 1 to the module's turns (at
// most config.MaxTurns): a closed, configured range.
const labelTurn = "turn"

// turnLabels label the per-turn series. They have no mode: only the
// continuous prober sends conversations turn by turn.
var turnLabels = []string{labelTarget, labelModule, labelModel, labelTurn}

// turnMetrics are the series of conversation probes, one per turn, so
// that a cold first turn and the warm turns after it, served from the
// prefix cache, are apart; every other module has none. The requests are
// observed in the per-request metrics too, every turn together.
type turnMetrics struct {
	ttft, itl, e2e *prometheus.HistogramVec
	prompt, cached *prometheus.CounterVec
}

func newTurnMetrics(f promauto.Factory) *turnMetrics {
	return &turnMetrics{
		// The request layouts: a warm turn's TTFT is tens of
		// milliseconds, a cold one of a long history seconds.
		ttft: f.NewHistogramVec(histogramOpts("turn_time_to_first_token_seconds",
			"Time to first token of the successful requests of conversation probes, by turn, in seconds, as servingprobe_time_to_first_token_seconds. Turn 1 starts with a fresh random prefix, so no prefix cache holds it (cold); later turns resend the history, which a prefix cache can serve (warm).",
			requestLatencyBuckets), turnLabels),
		itl: f.NewHistogramVec(histogramOpts("turn_inter_token_latency_seconds",
			"Inter-token latency of the successful requests of conversation probes, by turn, in seconds, as servingprobe_inter_token_latency_seconds.",
			tokenLatencyBuckets), turnLabels),
		e2e: f.NewHistogramVec(histogramOpts("turn_e2e_request_latency_seconds",
			"End-to-end latency of the successful requests of conversation probes, by turn, in seconds, as servingprobe_e2e_request_latency_seconds.",
			requestLatencyBuckets), turnLabels),
		prompt: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "turn_prompt_tokens_total",
			Help: "Input tokens of the successful requests of conversation probes, by turn, as servingprobe_prompt_tokens_total counts them.",
		}, turnLabels),
		cached: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "turn_cached_prompt_tokens_total",
			Help: "Input tokens of the successful requests of conversation probes, by turn, that the server said it took from its prefix cache: usage.prompt_tokens_details.cached_tokens (OpenAI, vLLM), cached_tokens (sglang), timings.cache_n (llama.cpp). Divided by servingprobe_turn_prompt_tokens_total it is the prefix-cache hit ratio; it stays 0 for a server that states none (ollama).",
		}, turnLabels),
	}
}

func (t *turnMetrics) histograms() []*prometheus.HistogramVec {
	return []*prometheus.HistogramVec{t.ttft, t.itl, t.e2e}
}

// vecs are every per-turn vector, for deletion with their target, model
// or module.
func (t *turnMetrics) vecs() []*prometheus.MetricVec {
	return []*prometheus.MetricVec{t.ttft.MetricVec, t.itl.MetricVec, t.e2e.MetricVec, t.prompt.MetricVec, t.cached.MetricVec}
}

// create makes the series of turns 1 to n of (target, module, model).
func (t *turnMetrics) create(target, module, model string, n int) {
	for k := 1; k <= n; k++ {
		lv := []string{target, module, model, strconv.Itoa(k)}
		for _, h := range t.histograms() {
			h.WithLabelValues(lv...)
		}
		t.prompt.WithLabelValues(lv...)
		t.cached.WithLabelValues(lv...)
	}
}

// deleteModule removes the per-turn series of (target, module), so that
// a reload that lowers its turns leaves no stale turn behind.
func (t *turnMetrics) deleteModule(target, module string) {
	for _, v := range t.vecs() {
		v.DeletePartialMatch(prometheus.Labels{labelTarget: target, labelModule: module})
	}
}

// record adds one successful conversation turn; turns is the module's
// configured count, which bounds the label. A turn outside it (a reload
// lowered the turns while the probe ran) is not recorded.
func (t *turnMetrics) record(r prober.Result, model string, turns int, sm prober.SampleSeconds, ex prometheus.Labels) {
	if r.Turn < 1 || r.Turn > turns || r.Outcome != prober.OutcomeSuccess {
		return
	}
	lv := []string{r.Target, r.Module, model, strconv.Itoa(r.Turn)}
	if sm.TTFT >= 0 {
		observe(t.ttft.WithLabelValues(lv...), sm.TTFT, ex)
	}
	if sm.E2E >= 0 {
		observe(t.e2e.WithLabelValues(lv...), sm.E2E, ex)
	}
	observeITL(t.itl, lv, sm.ITL, ex)
	t.prompt.WithLabelValues(lv...).Add(float64(max(r.InputTokens, 0)))
	t.cached.WithLabelValues(lv...).Add(float64(prober.CachedPromptTokens(r)))
}
