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
	if ok && r.Outcome == prober.OutcomeSuccess && validTokenSource(r.OutputTokensSource) {
		s.setTokenSource(r.Target, r.OutputTokensSource)
	}
}

func validTokenSource(s prober.TokenSource) bool {
	switch s {
	case prober.TokenSourceUsage, prober.TokenSourceMetaInfo, prober.TokenSourceProtocol, prober.TokenSourceTokenizer,
		prober.TokenSourceRequested, prober.TokenSourceEvents:
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
	ex := exemplarOf(r.RequestID)

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
		if sm.e2e >= 0 {
			observe(m.e2e.WithLabelValues(lv...), sm.e2e, ex)
		}
		if sm.tpot >= 0 {
			observe(m.tpot.WithLabelValues(lv...), sm.tpot, ex)
		}
		if len(sm.itl) > 0 {
			// One exemplar per request, on its slowest gap: that is the
			// sample a tail bucket should point back from. An exemplar on
			// every token cost 8 allocations per sample.
			h := m.itl.WithLabelValues(lv...)
			slowest := 0
			for i, s := range sm.itl {
				if s.perToken > sm.itl[slowest].perToken {
					slowest = i
				}
			}
			for i, s := range sm.itl {
				n := s.n
				if i == slowest && n > 0 {
					observe(h, s.perToken, ex)
					n--
				}
				for range n {
					h.Observe(s.perToken)
				}
			}
		}
		m.promptTokens.WithLabelValues(lv...).Add(float64(max(r.InputTokens, 0)))
		m.genTokens.WithLabelValues(lv...).Add(float64(max(r.OutputTokens, 0)))
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

func observe(o prometheus.Observer, v float64, ex prometheus.Labels) {
	if eo, ok := o.(prometheus.ExemplarObserver); ok && ex != nil {
		eo.ObserveWithExemplar(v, ex)
		return
	}
	o.Observe(v)
}

// maxExemplarIDRunes keeps the exemplar within the 128-rune limit of an
// exemplar label set (ObserveWithExemplar panics beyond it).
const maxExemplarIDRunes = 100

func exemplarOf(id string) prometheus.Labels {
	if id == "" {
		return nil
	}
	if r := []rune(id); len(r) > maxExemplarIDRunes {
		id = string(r[:maxExemplarIDRunes])
	}
	return prometheus.Labels{"request_id": id}
}

// samples are the derived timings of one result in seconds; -1 means "not
// defined for this result".
type samples struct {
	queue, ttft, ttfat, e2e, tpot float64
	itl                           []itlSample
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
	s := samples{queue: sec(sm.Queue), ttft: sec(sm.TTFT), ttfat: sec(sm.TTFAT), e2e: sec(sm.E2E), tpot: sm.TPOTSeconds}
	if sm.E2E < 0 {
		return s // never sent: no ITL either
	}
	for g := range r.ITLGaps(false) {
		s.itl = append(s.itl, itlSample{perToken: g.PerToken(), n: min(g.Tokens, maxITLSamplesPerEvent)})
	}
	return s
}
