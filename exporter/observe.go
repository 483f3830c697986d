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
// the timing arithmetic is in samplesOf.
func (o *observer) record(r prober.Result, model string) {
	m := o.m
	lv := []string{r.Target, r.Module, model, string(o.mode)}
	sm := samplesOf(r)
	ex := exemplarOf(r.RequestID, r.TraceID)

	outcome := r.Outcome
	if !slices.Contains(prober.Outcomes, outcome) {
		// Not a label value we know: never let it become one.
		outcome = prober.OutcomeParseError
	}
	m.requests.WithLabelValues(append(lv, string(outcome))...).Inc()
	if sm.queue >= 0 {
		observe(m.queue.WithLabelValues(lv...), sm.queue, ex)
	}
	if outcome == prober.OutcomeSuccess {
		if sm.ttft >= 0 {
			observe(m.ttft.WithLabelValues(lv...), sm.ttft, ex)
		}
		if sm.ttfat >= 0 {
			observe(m.ttfat.WithLabelValues(lv...), sm.ttfat, ex)
		}
		if sm.serverTTFT >= 0 {
			observe(m.serverTTFT.WithLabelValues(lv...), sm.serverTTFT, ex)
			observe(m.outsideTTFT.WithLabelValues(lv...), sm.outsideTTFT, ex)
		}
		if sm.e2e >= 0 {
			observe(m.e2e.WithLabelValues(lv...), sm.e2e, ex)
		}
		if sm.tpot >= 0 {
			observe(m.tpot.WithLabelValues(lv...), sm.tpot, ex)
		}
		if sm.answerTPOT >= 0 {
			observe(m.answerTPOT.WithLabelValues(lv...), sm.answerTPOT, ex)
		}
		observeITL(m.itl, lv, sm.itl, ex)
		observeITL(m.answerITL, lv, sm.answerITL, ex)
		m.promptTokens.WithLabelValues(lv...).Add(float64(max(r.InputTokens, 0)))
		m.genTokens.WithLabelValues(lv...).Add(float64(max(r.OutputTokens, 0)))
		m.reasoningTokens.WithLabelValues(lv...).Add(float64(sm.reasoningTokens))
	}
	if o.mode != ModeProbe {
		return
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
func observeITL(h *prometheus.HistogramVec, lv []string, gaps []itlSample, ex prometheus.Labels) {
	if len(gaps) == 0 {
		return
	}
	o := h.WithLabelValues(lv...)
	slowest := 0
	for i, s := range gaps {
		if s.perToken > gaps[slowest].perToken {
			slowest = i
		}
	}
	for i, s := range gaps {
		n := s.n
		if i == slowest && n > 0 {
			observe(o, s.perToken, ex)
			n--
		}
		for range n {
			o.Observe(s.perToken)
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

// samples are the derived timings of one result in seconds; -1 means "not
// defined for this result".
type samples struct {
	queue, ttft, ttfat, e2e, tpot float64
	itl                           []itlSample
	// serverTTFT and outsideTTFT are prober.Samples' split of ttft, -1
	// where the server stated no TTFT.
	serverTTFT, outsideTTFT float64
	// The answer phase: defined only where ttfat is (a successful
	// streamed request whose answer began), so that the answer
	// histograms count the requests the TTFAT histogram counts. Without
	// reasoning answerTPOT is tpot and answerITL is itl.
	answerTPOT float64
	answerITL  []itlSample
	// reasoningTokens is prober.Samples.ReasoningTokens, the count
	// `probe --json` and the history show: 0 without reasoning.
	reasoningTokens int
}

// itlSample is n tokens that each took perToken seconds.
type itlSample struct {
	perToken float64
	n        int
}

// maxITLSamplesPerEvent bounds the samples one event contributes. An event
// claiming a huge token count (a hostile or broken server) would otherwise
// cost one histogram observation per claimed token.
const maxITLSamplesPerEvent = 1024

// samplesOf converts r's samples (prober.Result.Samples and ITLGaps, the
// one place timing is derived) to seconds, -1 where undefined. It is pure.
func samplesOf(r prober.Result) samples {
	sm := r.Samples()
	sec := func(d time.Duration) float64 {
		if !prober.Defined(d) {
			return -1
		}
		return d.Seconds()
	}
	s := samples{queue: sec(sm.Queue), ttft: sec(sm.TTFT), ttfat: sec(sm.TTFAT), e2e: sec(sm.E2E), tpot: sm.TPOTSeconds,
		answerTPOT: -1, reasoningTokens: sm.ReasoningTokens, serverTTFT: sec(sm.ServerTTFT), outsideTTFT: sec(sm.OutsideServerTTFT)}
	if sm.E2E < 0 {
		return s // never sent: no ITL either
	}
	answered := s.ttfat >= 0
	if answered {
		s.answerTPOT = sm.AnswerTPOTSeconds
	}
	// One pass: the answer's gaps are those ITLGaps marks Answer (the
	// same gaps AnswerITLGaps yields), with the same per-event cap.
	for g := range r.ITLGaps(false) {
		is := itlSample{perToken: g.PerToken(), n: min(g.Tokens, maxITLSamplesPerEvent)}
		s.itl = append(s.itl, is)
		if g.Answer && answered {
			s.answerITL = append(s.answerITL, is)
		}
	}
	return s
}
