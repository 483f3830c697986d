package bench

import (
	"fmt"
	"iter"
	"slices"
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
	checks             CheckFailures    // nil when no check judged the request
}

// CheckFailures are the verdicts of one judged answer that were not a
// pass (prober.CheckFail, prober.CheckError), in the checks' order, each
// with its reason: the details' check_failures entry of the request. Nil
// is an answer no check judged (no checks, or a failed request; null in
// the record), empty an answer that passed every check ([]), so that a
// reader finds which requests failed which check.
type CheckFailures []prober.CheckResult

// checkFailuresOf is a result's CheckFailures.
func checkFailuresOf(checks []prober.CheckResult) CheckFailures {
	if len(checks) == 0 {
		return nil
	}
	out := CheckFailures{}
	for _, c := range checks {
		if c.Result != prober.CheckPass {
			out = append(out, c)
		}
	}
	return out
}

// PyValue is f as the record writes it (pyfmt.Valuer): null for an answer
// no check judged, else a list of {check, result, reason}.
func (f CheckFailures) PyValue() any {
	if f == nil {
		return nil
	}
	out := make([]record, len(f))
	for i, c := range f {
		out[i] = record{{"check", string(c.Check)}, {"result", string(c.Result)}, {"reason", c.Reason}}
	}
	return out
}

// validate refuses a check or a result the prober does not know, so that a
// record read back cannot bring names of its own.
func (f CheckFailures) validate() error {
	for _, c := range f {
		if !slices.Contains(prober.CheckNames, c.Check) {
			return fmt.Errorf("unknown check %q", c.Check)
		}
		if c.Result != prober.CheckFail && c.Result != prober.CheckError {
			return fmt.Errorf("check %s: result %q is not a failure (want fail or error)", c.Check, c.Result)
		}
	}
	return nil
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
	if row.checks != nil {
		// Made by the first judged request, as the timings are.
		for len(d.CheckFailures) <= i {
			d.CheckFailures = append(d.CheckFailures, nil)
		}
		d.CheckFailures[i] = row.checks
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
	for d.CheckFailures != nil && len(d.CheckFailures) < n {
		d.CheckFailures = append(d.CheckFailures, nil)
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

// DetailRequest is one request read back from a record's details: its
// recorded fields, whether the run counted it a success, and its samples
// by the same definitions as the summary's. Summary.DetailRequests is the
// one reader of the details' per-request arrays: the significance tests,
// the report's charts and the timeline all take their requests from it,
// so that none of them can count a request the others do not.
type DetailRequest struct {
	// Index is the request's position in the details' arrays.
	Index int
	// Outcome is the recorded outcome (prober.Outcome), "" where the
	// record has none (bench_serving writes no request_outcomes).
	Outcome string
	// OK: the run counted the request a success (see detailSucceeded).
	OK bool
	// Err is the recorded error, "" for a success.
	Err                 string
	InputLen, OutputLen int
	// Scheduled, Sent, FirstToken and End are the request's times in
	// seconds from the run's start, -1 where it has none (a failure before
	// its first token, or a record without servingprobe's times).
	Scheduled, Sent, FirstToken, End float64
	// TTFT, E2E and TPOT are the request's samples in seconds, -1 where
	// undefined. They are defined only for a success whose send and end
	// times the record holds, the requests the summary's latencies count:
	// E2E is End − Sent, TTFT as recorded, and TPOT is
	// prober.TPOTSeconds(E2E, TTFT, OutputLen) where a first token arrived.
	TTFT, E2E, TPOT float64
	// ITLs are the request's inter-token samples in seconds, as recorded.
	ITLs []float64
	// Server is what the server stated about the request's time, nil
	// where it stated none.
	Server *ServerTiming
	// CheckFailures are the answer's checks that did not pass: nil where
	// no check judged it, empty where it passed every one.
	CheckFailures CheckFailures
}

// Measured reports whether the request has samples: a success with its
// send and end times.
func (r *DetailRequest) Measured() bool { return r.E2E >= 0 }

// Len is the number of requests the details hold: the longest of their
// per-request arrays, so that a record whose arrays disagree (read back
// from a file, which holds whatever it holds) loses no request; an entry
// a shorter array lacks reads as absent.
func (d *Details) Len() int {
	if d == nil {
		return 0
	}
	return max(len(d.InputLens), len(d.OutputLens), len(d.TTFTs), len(d.ITLs), len(d.Errors), len(d.Outcomes),
		len(d.ScheduledTimes), len(d.SentTimes), len(d.FirstTokenTimes), len(d.EndTimes))
}

// DetailRequests yields each request of s's details in order; none when
// it kept no details.
func (s *Summary) DetailRequests() iter.Seq[DetailRequest] {
	return func(yield func(DetailRequest) bool) {
		for i := range s.Details.Len() {
			if !yield(s.DetailRequest(i)) {
				return
			}
		}
	}
}

// DetailRequest reads request i of s's details (0 ≤ i < s.Details.Len()).
func (s *Summary) DetailRequest(i int) DetailRequest {
	d := s.Details
	r := DetailRequest{Index: i, Outcome: entryAt(d.Outcomes, i, ""), Err: entryAt(d.Errors, i, ""),
		InputLen: entryAt(d.InputLens, i, 0), OutputLen: entryAt(d.OutputLens, i, 0),
		Scheduled: entryAt(d.ScheduledTimes, i, -1), Sent: entryAt(d.SentTimes, i, -1), FirstToken: entryAt(d.FirstTokenTimes, i, -1), End: entryAt(d.EndTimes, i, -1),
		TTFT: -1, E2E: -1, TPOT: -1, ITLs: entryAt(d.ITLs, i, nil), Server: entryAt(d.ServerTimings, i, nil),
		CheckFailures: entryAt(d.CheckFailures, i, nil)}
	r.OK = detailSucceeded(r.Outcome, r.Err, s.Compat.EmptySuccess)
	if !r.OK || r.Sent < 0 || r.End < 0 {
		return r
	}
	r.E2E = max(r.End-r.Sent, 0)
	if i < len(d.TTFTs) {
		r.TTFT = d.TTFTs[i]
		if r.FirstToken >= 0 {
			r.TPOT = prober.TPOTSeconds(r.E2E, r.TTFT, r.OutputLen)
		}
	}
	return r
}

// entryAt is v[i], or absent where v has no entry i.
func entryAt[T any](v []T, i int, absent T) T {
	if i < len(v) {
		return v[i]
	}
	return absent
}

// detailSucceeded is the one success rule of a request read back from a
// record's details: the rule the run counted it by. A recorded outcome
// decides as RequestSucceeded decides on the Result (success, or an empty
// output under compat empty-success). A request without one, as in every
// record bench_serving writes, keeps every request in its arrays, failures
// included (their output_lens 0): there errors is "" exactly for the
// successes, so an empty error is a success and any other a failure.
func detailSucceeded(outcome, err string, emptySuccess bool) bool {
	if outcome == "" {
		return err == ""
	}
	return outcomeSucceeded(prober.Outcome(outcome), emptySuccess)
}
