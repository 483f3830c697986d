package bench

import (
	"time"

	"github.com/servingprobe/servingprobe/prober"
)

// detailRow is one request's entry in each array of the details.
type detailRow struct {
	inputLen, outputLen int
	ttft                float64
	times               [4]time.Time // scheduled, sent, first token, end
	// itls are the inter-token samples of a row read back from the spool;
	// a row being added gives them as an itlRange.
	itls               []float64
	text, err, outcome string
	traceID            string           // "" when the request carried none
	server             *ServerTiming    // nil when the server stated none
	reasoning          *DetailReasoning // nil when the request did not reason
}

// DetailReasoning is what the details keep of a request that reasoned
// before answering (prober.Samples' reasoning rules), beyond the times
// and gaps every request has: enough for a merge of shards (Merge) to
// compute the run's ReasoningSummary exactly. A request that did not
// reason needs none of it: its TTFAT is its TTFT, its answer its whole
// output and its answer's gaps all of its gaps.
type DetailReasoning struct {
	// Tokens is the request's reasoning tokens, as the server stated them
	// or as counted (Source is prober.TokenSourceCounted then).
	Tokens int    `json:"reasoning_tokens"`
	Source string `json:"reasoning_tokens_source"`
	// TTFAT is the time to the first answer token in seconds
	// (prober.Samples.TTFAT), -1 where it has none (a stream cut while
	// thinking).
	TTFAT float64 `json:"ttfat"`
	// AnswerITLs is how many of the request's itls, the last ones, are
	// the answer's (prober.ITLGap.Answer).
	AnswerITLs int `json:"answer_itls"`
}

// PyValue is d as the record writes it (pyfmt.Valuer): null for a request
// that did not reason.
func (d *DetailReasoning) PyValue() any {
	if d == nil {
		return nil
	}
	return record{
		{"reasoning_tokens", d.Tokens},
		{"reasoning_tokens_source", d.Source},
		{"ttfat", d.TTFAT},
		{"answer_itls", d.AnswerITLs},
	}
}

// detailReasoningOf is a request's DetailReasoning: nil when it did not
// reason. answerITLs is how many of its inter-token samples are the
// answer's.
func detailReasoningOf(sm *prober.Samples, answerITLs int) *DetailReasoning {
	if !sm.Reasoning {
		return nil
	}
	d := &DetailReasoning{Tokens: sm.ReasoningTokens, Source: string(sm.ReasoningTokensSource), TTFAT: -1, AnswerITLs: answerITLs}
	if prober.Defined(sm.TTFAT) {
		d.TTFAT = sm.TTFAT.Seconds()
	}
	return d
}

// noDetails keeps no details (no --output-details).
type noDetails struct{}

func (noDetails) add(int, detailRow, itlRange) {}

func (noDetails) fill(*Summary, time.Time) {}

// memoryDetails keeps the details in memory, in Summary.Details.
type memoryDetails struct {
	d     Details
	times [][4]time.Time // made relative in fill, once the run's start is known
}

func (m *memoryDetails) add(i int, row detailRow, gaps itlRange) {
	d := &m.d
	for len(d.InputLens) <= i {
		d.InputLens = append(d.InputLens, 0)
		d.OutputLens = append(d.OutputLens, 0)
		d.TTFTs = append(d.TTFTs, 0)
		d.ITLs = append(d.ITLs, nil)
		d.GeneratedTexts = append(d.GeneratedTexts, "")
		d.Errors = append(d.Errors, "")
		d.Outcomes = append(d.Outcomes, "")
		m.times = append(m.times, [4]time.Time{})
	}
	m.times[i] = row.times
	d.Outcomes[i] = row.outcome
	d.InputLens[i] = row.inputLen
	d.OutputLens[i] = row.outputLen
	d.TTFTs[i] = row.ttft
	d.ITLs[i] = gaps.values()
	d.GeneratedTexts[i] = row.text
	d.Errors[i] = row.err
	if row.server != nil {
		// The array is made by the first request that states timings,
		// so that a run against a server that states none has none.
		for len(d.ServerTimings) <= i {
			d.ServerTimings = append(d.ServerTimings, nil)
		}
		d.ServerTimings[i] = row.server
	}
	if row.traceID != "" {
		// Made by the first request that carried one, as the timings are.
		for len(d.TraceIDs) <= i {
			d.TraceIDs = append(d.TraceIDs, "")
		}
		d.TraceIDs[i] = row.traceID
	}
	if row.reasoning != nil {
		// Made by the first request that reasoned, as the timings are.
		for len(d.Reasoning) <= i {
			d.Reasoning = append(d.Reasoning, nil)
		}
		d.Reasoning[i] = row.reasoning
	}
}

func (m *memoryDetails) fill(s *Summary, start time.Time) {
	d := m.d
	n := len(m.times)
	d.ScheduledTimes, d.SentTimes, d.FirstTokenTimes, d.EndTimes = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, ts := range m.times {
		d.ScheduledTimes[i], d.SentTimes[i], d.FirstTokenTimes[i], d.EndTimes[i] = relTime(ts[0], start), relTime(ts[1], start), relTime(ts[2], start), relTime(ts[3], start)
	}
	for d.ServerTimings != nil && len(d.ServerTimings) < n {
		d.ServerTimings = append(d.ServerTimings, nil)
	}
	for d.TraceIDs != nil && len(d.TraceIDs) < n {
		d.TraceIDs = append(d.TraceIDs, "")
	}
	for d.Reasoning != nil && len(d.Reasoning) < n {
		d.Reasoning = append(d.Reasoning, nil)
	}
	s.Details = &d
}

// relTime is t in seconds from start, -1 when either is unknown.
func relTime(t, start time.Time) float64 {
	if t.IsZero() || start.IsZero() {
		return -1
	}
	return t.Sub(start).Seconds()
}
