package prober

import (
	"iter"
	"time"
)

// Samples are the measurements of one Result. Result.Samples and
// Result.ITLGaps are the only timing arithmetic in servingprobe:
// `servingprobe probe`, the bench table and JSONL, the daemon's histograms,
// its history and landing page, and the log lines all take their numbers
// from them, so that no two surfaces can disagree about one request. The
// rules are in docs/metrics.md; TestSamples states each of them.
//
// A duration that is not defined for the request is -1. Without streaming
// (Result.Stream false) the answer arrives whole, so nothing measures a
// first token: TTFT and TPOT are -1 and only E2E is measured.
type Samples struct {
	// Queue is Sent − Scheduled: how long the request waited on the client
	// after the pacer released it. -1 when the request was not paced.
	Queue time.Duration
	// TTFT is FirstToken − Sent. -1 when no output arrived or the
	// response was not streamed.
	TTFT time.Duration
	// E2E is End − Sent. -1 when the request was never sent.
	E2E time.Duration
	// TPOTSeconds is (End − FirstToken) / (OutputTokens − 1) in seconds,
	// -1 below 2 tokens or without streaming. It is a ratio, kept as a float so that it is not
	// rounded to the nanosecond: the bench prints it to 15 digits, as
	// bench_serving does.
	TPOTSeconds float64

	InputTokens        int
	InputTokensSource  TokenSource
	OutputTokens       int
	OutputTokensSource TokenSource
	// EventTokensSource says where the per-event counts behind the
	// per-token ITL came from (see Result.EventTokensSource).
	EventTokensSource TokenSource
	// FirstTokens is how many tokens the first output event carried: they
	// arrive at TTFT and get no ITL entry.
	FirstTokens int

	// Reasoning: the request reasoned before answering (the server said
	// so in its stream or its count; see Result.ReasoningTokens).
	Reasoning bool
	// TTFAT is the time to the first answer token, FirstAnswer − Sent:
	// the wait for the answer itself, after any reasoning. Without
	// reasoning it is TTFT. -1 when no answer text arrived (a stream cut
	// while thinking) or the response was not streamed.
	TTFAT time.Duration
	// ReasoningTokens and AnswerTokens split OutputTokens (the answer
	// gets what reasoning did not); ReasoningTokensSource says whether the
	// server stated the reasoning count (usage) or it was counted.
	ReasoningTokens       int
	ReasoningTokensSource TokenSource
	AnswerTokens          int
	// AnswerTPOTSeconds is TPOT over the answer alone: (E2E − TTFAT) /
	// (AnswerTokens − 1), -1 below 2 answer tokens or without TTFAT.
	// Without reasoning it is TPOTSeconds.
	AnswerTPOTSeconds float64

	// ServerTTFT is the server's own time to first token, as it stated
	// it (ServerTimings.FirstToken); OutsideServerTTFT is TTFT minus it:
	// the network, HTTP and the server's front end. Both -1 where the
	// server stated none, TTFT is undefined, or the server's exceeds
	// ours (the statement cannot be of this request's time).
	ServerTTFT, OutsideServerTTFT time.Duration
}

// Defined reports whether d is a defined sample (not -1).
func Defined(d time.Duration) bool { return d >= 0 }

// Samples derives the measurements of r.
func (r *Result) Samples() Samples {
	s := Samples{
		Queue: -1, TTFT: -1, E2E: -1, TPOTSeconds: -1, TTFAT: -1, AnswerTPOTSeconds: -1, ServerTTFT: -1, OutsideServerTTFT: -1,
		Reasoning: r.ReasoningTokensSource != "", ReasoningTokens: max(r.ReasoningTokens, 0), ReasoningTokensSource: r.ReasoningTokensSource,
		InputTokens: max(r.InputTokens, 0), InputTokensSource: r.InputTokensSource,
		OutputTokens: max(r.OutputTokens, 0), OutputTokensSource: r.OutputTokensSource,
		EventTokensSource: r.EventTokensSource,
	}
	s.AnswerTokens = max(s.OutputTokens-s.ReasoningTokens, 0)
	if len(r.Events) > 0 {
		s.FirstTokens = max(r.Events[0].Tokens, 0)
	}
	if r.Sent.IsZero() {
		return s
	}
	if !r.Scheduled.IsZero() {
		s.Queue = max(r.Sent.Sub(r.Scheduled), 0)
	}
	// A response that was not streamed has its first token stamped when
	// the whole answer arrived: that is no measure of a first token, and
	// a TPOT from it would be about 0.
	streamedFirst := r.Stream && !r.FirstToken.IsZero()
	if streamedFirst {
		s.TTFT = max(r.FirstToken.Sub(r.Sent), 0)
		if st := r.Server.FirstToken; st > 0 && st <= s.TTFT {
			s.ServerTTFT, s.OutsideServerTTFT = st, s.TTFT-st
		}
	}
	if !r.End.IsZero() {
		s.E2E = max(r.End.Sub(r.Sent), 0)
		if streamedFirst && s.OutputTokens >= 2 {
			// (E2E − TTFT) in float seconds, not End − FirstToken: the
			// same operations as bench_serving, so the last digit agrees.
			s.TPOTSeconds = TPOTSeconds(s.E2E.Seconds(), s.TTFT.Seconds(), s.OutputTokens)
		}
	}
	switch {
	case !s.Reasoning:
		s.TTFAT = s.TTFT
	case r.Stream && !r.FirstAnswer.IsZero():
		s.TTFAT = max(r.FirstAnswer.Sub(r.Sent), 0)
	case streamedFirst && r.answerStart() == 0:
		// The server stated a reasoning count but streamed no reasoning
		// (it keeps its thinking to itself): the first event is the
		// answer's, as the answer's gaps (ITLGaps) take it.
		s.TTFAT = s.TTFT
	}
	if Defined(s.TTFAT) && Defined(s.E2E) {
		s.AnswerTPOTSeconds = TPOTSeconds(s.E2E.Seconds(), s.TTFAT.Seconds(), s.AnswerTokens)
	}
	return s
}

// TPOTSeconds is the time per output token in seconds of a request that
// took e2e seconds in all and ttft to its first token (or to its first
// answer token, for the answer's TPOT): (e2e − ttft) / (tokens − 1), -1
// below 2 tokens. The first token's wait is TTFT's, so the other tokens
// share the rest. It is the one TPOT formula: Samples uses it, and so does
// the bench where it reads requests back from a record's details, so that
// both give the same number for the same request, to the last digit when
// given the same seconds.
func TPOTSeconds(e2e, ttft float64, tokens int) float64 {
	if tokens < 2 {
		return -1
	}
	return max(e2e-ttft, 0) / float64(tokens-1)
}

// ITLGap is one inter-token gap: the time between an output event and the
// previous counted one, shared by the Tokens tokens the later event
// carried. A per-token ITL sample is Gap/Tokens, Tokens times over.
type ITLGap struct {
	Gap    time.Duration
	Tokens int
	// Answer: the gap is in the answer phase, its earlier event being the
	// first answer event or a later one (see ITLGaps). Without reasoning
	// every gap is the answer's.
	Answer bool
}

// PerToken is the gap each of the event's tokens took, in seconds.
func (g ITLGap) PerToken() float64 { return g.Gap.Seconds() / float64(g.Tokens) }

// ITLGaps yields the inter-token gaps of r.
//
// Per token (perChunk false), the default everywhere: every event after the
// first that carries n ≥ 1 tokens is one gap since the previous event that
// carried tokens, shared by its n tokens. An event with 0 tokens (text that
// arrived before the server's count moved, as sglang's /generate sends) is
// skipped and does not move the reference time, as bench_serving does on
// /generate. The tokens of the first event get no entry: they are TTFT.
//
// Per chunk (perChunk true, bench's --compat chunk-itl): every event after
// the first is one sample of its gap since the previous event, whatever it
// carried, as bench_serving measures its OpenAI backends.
//
// The answer's gaps (ITLGap.Answer) are those measured from the first
// answer event (the first not marked reasoning) or a later counted one: the
// gaps between the answer's chunks, the wait for its first token being
// TTFAT. They are the last gaps of the list, so a caller can keep them as
// a suffix of the request's samples. The gap from the last reasoning
// event to the first answer event is reasoning's, not the answer's; an
// answer event that carries no token (an sglang chunk whose count did not
// move) moves no reference, so the answer's gaps then start at its next
// counted event.
func (r *Result) ITLGaps(perChunk bool) iter.Seq[ITLGap] {
	return func(yield func(ITLGap) bool) {
		if len(r.Events) < 2 {
			return
		}
		answerFrom := r.answerStart()
		prev, prevIdx := r.Events[0].At, 0
		for i, e := range r.Events[1:] {
			n := e.Tokens
			if perChunk {
				n = 1
			} else if n <= 0 {
				continue
			}
			if !yield(ITLGap{Gap: max(e.At.Sub(prev), 0), Tokens: n, Answer: prevIdx >= answerFrom}) {
				return
			}
			prev, prevIdx = e.At, i+1
		}
	}
}

// answerStart is the index of r's first answer event: 0 without reasoning
// or where no event was marked reasoning (a server that states a reasoning
// count but streams no reasoning), the first event not marked reasoning
// otherwise, and len(r.Events) when every event was reasoning (a stream cut
// while thinking).
func (r *Result) answerStart() int {
	if r.ReasoningTokensSource == "" {
		return 0
	}
	for i, e := range r.Events {
		if !e.Reasoning {
			return i
		}
	}
	return len(r.Events)
}

// AnswerITLGaps yields the gaps of ITLGaps that are the answer's: the
// answer-phase inter-token latency.
func (r *Result) AnswerITLGaps(perChunk bool) iter.Seq[ITLGap] {
	return func(yield func(ITLGap) bool) {
		for g := range r.ITLGaps(perChunk) {
			if g.Answer && !yield(g) {
				return
			}
		}
	}
}

// AppendITLs appends r's inter-token latencies in seconds to dst, each gap
// expanded into its per-token samples (see ITLGaps).
func (r *Result) AppendITLs(dst []float64, perChunk bool) []float64 {
	return appendPerToken(dst, r.ITLGaps(perChunk))
}

// AppendAnswerITLs appends r's answer-phase inter-token latencies in
// seconds to dst, as AppendITLs does (see AnswerITLGaps).
func (r *Result) AppendAnswerITLs(dst []float64, perChunk bool) []float64 {
	return appendPerToken(dst, r.AnswerITLGaps(perChunk))
}

func appendPerToken(dst []float64, gaps iter.Seq[ITLGap]) []float64 {
	for g := range gaps {
		v := g.PerToken()
		for range g.Tokens {
			dst = append(dst, v)
		}
	}
	return dst
}
