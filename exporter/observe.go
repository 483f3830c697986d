package exporter

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/prober"
)

// Observer returns a prober.Observer that records results with the given
// mode label. Results of targets or modules that are not configured (a
// reload removed them while the request ran) are dropped, so that they
// cannot re-create deleted series.
func (m *Metrics) Observer(mode Mode) prober.Observer { return &observer{m: m, mode: mode} }

type observer struct {
	m    *Metrics
	mode Mode
}

var _ prober.Observer = (*observer)(nil)

func (o *observer) Observe(r prober.Result) {
	s := o.m.series
	s.mu.RLock()
	model, ok, switchTo := s.resolve(&r, o.mode)
	if switchTo != "" {
		s.mu.RUnlock()
		s.switchModel(r.Target, switchTo)
		s.mu.RLock()
		model, ok, _ = s.resolve(&r, o.mode)
	}
	if ok {
		o.record(r, model)
		if !r.TLSCertExpiry.IsZero() {
			o.m.tlsExpiry.WithLabelValues(r.Target).Set(unixSeconds(r.TLSCertExpiry))
		}
	}
	s.mu.RUnlock()
	if ok && r.Outcome == prober.OutcomeSuccess {
		var tokens, reasoning prober.TokenSource
		if validTokenSource(r.OutputTokensSource) {
			tokens = r.OutputTokensSource
		}
		if src := r.ReasoningTokensSource; src == prober.TokenSourceCounted || validTokenSource(src) {
			reasoning = src
		}
		s.setSources(r.Target, tokens, reasoning)
	}
}

// validTokenSource reports whether s is a source of a count the server
// stated or we made of the whole output: a closed set, since it becomes
// a label value.
func validTokenSource(s prober.TokenSource) bool {
	switch s {
	case prober.TokenSourceUsage, prober.TokenSourceMetaInfo, prober.TokenSourceProtocol, prober.TokenSourceTokenizer,
		prober.TokenSourceTokenizerEstimate, prober.TokenSourceRequested, prober.TokenSourceEvents:
		return true
	}
	return false
}

// record maps one result to metrics. It takes values and writes metrics;
// the timing arithmetic is prober's (Result.SampleSeconds).
func (o *observer) record(r prober.Result, model string) {
	m := o.m
	lv := []string{r.Target, r.Module, model, string(o.mode)}
	sm := r.SampleSeconds()
	ex := exemplarOf(r.RequestID, r.TraceID)

	outcome := r.Outcome
	if !slices.Contains(prober.Outcomes, outcome) {
		// Not a label value we know: never let it become one.
		outcome = prober.OutcomeParseError
	}
	m.requests.WithLabelValues(append(lv, string(outcome))...).Inc()
	if sm.Queue >= 0 {
		observe(m.queue.WithLabelValues(lv...), sm.Queue, ex)
	}
	if outcome == prober.OutcomeSuccess {
		if sm.TTFT >= 0 {
			observe(m.ttft.WithLabelValues(lv...), sm.TTFT, ex)
		}
		if sm.TTFAT >= 0 {
			observe(m.ttfat.WithLabelValues(lv...), sm.TTFAT, ex)
		}
		if sm.ServerTTFT >= 0 {
			observe(m.serverTTFT.WithLabelValues(lv...), sm.ServerTTFT, ex)
			observe(m.outsideTTFT.WithLabelValues(lv...), sm.OutsideServerTTFT, ex)
		}
		if sm.E2E >= 0 {
			observe(m.e2e.WithLabelValues(lv...), sm.E2E, ex)
		}
		if sm.TPOT >= 0 {
			observe(m.tpot.WithLabelValues(lv...), sm.TPOT, ex)
		}
		if sm.AnswerTPOT >= 0 {
			observe(m.answerTPOT.WithLabelValues(lv...), sm.AnswerTPOT, ex)
		}
		observeITL(m.itl, lv, sm.ITL, ex)
		observeITL(m.answerITL, lv, sm.AnswerITL, ex)
		m.promptTokens.WithLabelValues(lv...).Add(float64(max(r.InputTokens, 0)))
		m.genTokens.WithLabelValues(lv...).Add(float64(max(r.OutputTokens, 0)))
		m.reasoningTokens.WithLabelValues(lv...).Add(float64(sm.ReasoningTokens))
	}
	if o.mode != ModeProbe {
		return
	}
	if t := m.series.targets[r.Target]; t != nil {
		m.recordAnswerChecks(&r, t.Checks[r.Module])
	}
	if r.Turn > 0 {
		m.turns.record(r, model, m.series.targets[r.Target].Turns[r.Module], sm, ex)
	}
	gl := lv[:3]
	end := r.End
	if end.IsZero() {
		end = time.Now()
	}
	m.lastProbe.WithLabelValues(gl...).Set(unixSeconds(end))
	if outcome == prober.OutcomeSuccess {
		m.probeSuccess.WithLabelValues(gl...).Set(1)
		m.lastSuccess.WithLabelValues(gl...).Set(unixSeconds(end))
	} else {
		m.probeSuccess.WithLabelValues(gl...).Set(0)
	}
}

// observeITL adds the per-token samples of gaps to h's series lv. One
// exemplar per request, on its slowest gap: that is the sample a tail
// bucket should point back from. An exemplar on every token cost 8
// allocations per sample.
func observeITL(h *prometheus.HistogramVec, lv []string, gaps prober.ITLSamples, ex prometheus.Labels) {
	if len(gaps) == 0 {
		return
	}
	o := h.WithLabelValues(lv...)
	slowest := 0
	for i, s := range gaps {
		if s.PerToken > gaps[slowest].PerToken {
			slowest = i
		}
	}
	for i, s := range gaps {
		n := min(s.Tokens, maxITLSamplesPerEvent)
		if i == slowest && n > 0 {
			observe(o, s.PerToken, ex)
			n--
		}
		for range n {
			o.Observe(s.PerToken)
		}
	}
}

func observe(o prometheus.Observer, v float64, ex prometheus.Labels) {
	if eo, ok := o.(prometheus.ExemplarObserver); ok && ex != nil {
		eo.ObserveWithExemplar(v, ex)
		return
	}
	o.Observe(v)
}

// maxExemplarIDRunes keeps the exemplar within the 128-rune limit of an
// exemplar label set, names and values counted (ObserveWithExemplar
// panics beyond it): what the trace id's label leaves to the request id's.
const maxExemplarIDRunes = 128 - len("request_id") - len("trace_id") - 32

// exemplarOf is a result's exemplar: its request id and, where it carried
// one, its W3C trace id (prober.TraceIDOf's 32 hex digits), under the
// label name Grafana's exemplar link to a trace reads by default.
func exemplarOf(id, traceID string) prometheus.Labels {
	if id == "" && traceID == "" {
		return nil
	}
	l := prometheus.Labels{}
	if id != "" {
		if r := []rune(id); len(r) > maxExemplarIDRunes {
			id = string(r[:maxExemplarIDRunes])
		}
		l["request_id"] = id
	}
	if len(traceID) == 32 {
		l["trace_id"] = traceID
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// itlSample is n tokens that each took perToken seconds: prober's, so
// that the landing page's quantiles weigh the history's gaps as the
// histograms count them.
type itlSample = prober.ITLSample

// maxITLSamplesPerEvent bounds the samples one event contributes. An event
// claiming a huge token count (a hostile or broken server) would otherwise
// cost one histogram observation per claimed token.
const maxITLSamplesPerEvent = 1024

// cappedITL is gaps with each event's count bounded by
// maxITLSamplesPerEvent, as the histograms count them.
func cappedITL(gaps prober.ITLSamples) []itlSample {
	out := make([]itlSample, len(gaps))
	for i, g := range gaps {
		out[i] = itlSample{PerToken: g.PerToken, Tokens: min(g.Tokens, maxITLSamplesPerEvent)}
	}
	return out
}
