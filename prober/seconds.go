package prober

import "time"

// SampleSeconds are a Result's samples (Samples, ITLGaps) in seconds, -1
// where a sample is not defined for the request. They are the one
// seconds view of a Result: the exporter's histograms and /probe gauges,
// its history entries and `servingprobe probe --json` all read their
// figures from it, so that a request's TTFT is the same number on each.
type SampleSeconds struct {
	// Queue, TTFT, TTFAT and E2E are Samples' durations in seconds;
	// TPOT is Samples.TPOTSeconds.
	Queue, TTFT, TTFAT, E2E, TPOT float64
	// ServerTTFT and OutsideServerTTFT are Samples' split of TTFT, -1
	// where the server stated no TTFT.
	ServerTTFT, OutsideServerTTFT float64
	// ITL are the request's per-token inter-token gaps (ITLGaps, per
	// token); none for a request never sent.
	ITL ITLSamples
	// The answer phase: AnswerTPOT and AnswerITL are defined only where
	// TTFAT is (a streamed request whose answer began), so that the answer's
	// figures count the requests its TTFAT counts. Without reasoning they
	// are TPOT and ITL.
	AnswerTPOT float64
	AnswerITL  ITLSamples
	// Reasoning, ReasoningTokens, ReasoningTokensSource and AnswerTokens
	// are Samples'.
	Reasoning             bool
	ReasoningTokens       int
	ReasoningTokensSource TokenSource
	AnswerTokens          int
}

// ITLSample is one inter-token gap in seconds: Tokens tokens that each
// took PerToken seconds (ITLGap.PerToken).
type ITLSample struct {
	PerToken float64
	Tokens   int
}

// ITLSamples are a request's inter-token gaps, one entry per event.
type ITLSamples []ITLSample

// PerToken is the gaps expanded into one sample per token, as
// Result.AppendITLs gives them; never nil, so that it writes as a JSON
// array.
func (s ITLSamples) PerToken() []float64 {
	out := []float64{}
	for _, g := range s {
		for range g.Tokens {
			out = append(out, g.PerToken)
		}
	}
	return out
}

// SampleSeconds derives r's samples in seconds. It is pure.
func (r *Result) SampleSeconds() SampleSeconds {
	sm := r.Samples()
	sec := func(d time.Duration) float64 {
		if !Defined(d) {
			return -1
		}
		return d.Seconds()
	}
	s := SampleSeconds{
		Queue: sec(sm.Queue), TTFT: sec(sm.TTFT), TTFAT: sec(sm.TTFAT), E2E: sec(sm.E2E), TPOT: sm.TPOTSeconds,
		ServerTTFT: sec(sm.ServerTTFT), OutsideServerTTFT: sec(sm.OutsideServerTTFT), AnswerTPOT: -1,
		Reasoning: sm.Reasoning, ReasoningTokens: sm.ReasoningTokens, ReasoningTokensSource: sm.ReasoningTokensSource, AnswerTokens: sm.AnswerTokens,
	}
	if !Defined(sm.E2E) {
		return s // never sent: no ITL either
	}
	answered := s.TTFAT >= 0
	if answered {
		s.AnswerTPOT = sm.AnswerTPOTSeconds
	}
	// One pass: the answer's gaps are those ITLGaps marks Answer (the
	// same gaps AnswerITLGaps yields).
	for g := range r.ITLGaps(false) {
		is := ITLSample{PerToken: g.PerToken(), Tokens: g.Tokens}
		s.ITL = append(s.ITL, is)
		if g.Answer && answered {
			s.AnswerITL = append(s.AnswerITL, is)
		}
	}
	return s
}
