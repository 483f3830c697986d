package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// reasoningShardRun is sketchRun's requests with every one whose index
// reasons(i) reasoning, in each of the ways prober.Samples tells apart:
// reasoning events then an answer, the count counted or stated; a count
// stated with no reasoning streamed (the whole stream is the answer); a
// stream that never left its reasoning (no TTFAT).
func reasoningShardRun(n int, reasons func(i int) bool) ([]prober.Result, []datasets.Prompt) {
	results, rows := sketchRun(n)
	for i := range results {
		if !reasons(i) {
			continue
		}
		r := &results[i]
		k := min(1+i%5, len(r.Events)-1) // reasoning events
		source := prober.TokenSourceCounted
		switch i % 7 {
		case 1, 4:
			source = prober.TokenSourceUsage
		case 3:
			k = 0 // stated, none streamed
			source = prober.TokenSourceUsage
		case 5:
			k = len(r.Events) // cut while thinking
		}
		tokens := 0
		for j := range k {
			r.Events[j].Reasoning = true
			tokens += r.Events[j].Tokens
		}
		if source == prober.TokenSourceUsage {
			tokens += 1 + i%3 // the server's count need not be the events'
		}
		r.ReasoningTokens, r.ReasoningTokensSource = min(tokens, r.OutputTokens), source
		if k > 0 && k < len(r.Events) {
			r.FirstAnswer = r.Events[k].At
		}
	}
	return results, rows
}

// reasoningKeys are the record's keys of the answer phase in its
// servingprobe block, with their bytes.
func reasoningKeys(t *testing.T, line []byte) map[string]string {
	t.Helper()
	var top struct {
		Servingprobe map[string]json.RawMessage `json:"servingprobe"`
	}
	if err := json.Unmarshal(pythonToJSON(line), &top); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range top.Servingprobe {
		if strings.Contains(k, "reasoning") || strings.Contains(k, "ttfat") || strings.Contains(k, "answer") {
			out[k] = string(v)
		}
	}
	return out
}

func mergeReasoningParams() Params {
	p := fixtureParams()
	p.Duration = 3 * time.Second
	p.MaxConcurrency = 0
	p.PercentileMetrics = []string{MetricTTFT, MetricITL}
	p.MetricPercentiles = []float64{50, 90, 99}
	return p
}

// singleRun is results summarized in one process with parameters p.
func singleRun(t *testing.T, results []prober.Result, rows []datasets.Prompt, p Params) Summary {
	t.Helper()
	a := NewAccumulator(p)
	a.SetStart(base)
	for i := range results {
		a.Add(i, results[i], rows[i])
	}
	s, err := a.Summary(p.Duration)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var reasoningSplits = []struct {
	name    string
	reasons func(int) bool
}{
	{"every shard reasons", func(i int) bool { return i%2 == 0 || i%5 == 0 }},
	{"only shard 0 of 3 reasons", func(i int) bool { return i%3 == 0 }},
}

// TestMergeReasoningDetails: a run whose requests reasoned, split into
// three shards that kept their details, merges into the reasoning block of
// the run summarized in one process: the same ReasoningSummary to the
// last bit, the same bytes in the record, whether every shard reasoned or
// only one (the others' answers are their whole outputs).
func TestMergeReasoningDetails(t *testing.T) {
	for _, tc := range reasoningSplits {
		t.Run(tc.name, func(t *testing.T) {
			results, rows := reasoningShardRun(900, tc.reasons)
			p := mergeReasoningParams()
			single := p
			single.Details = true
			want := singleRun(t, results, rows, single)
			if want.Reasoning == nil || want.Reasoning.Requests == 0 {
				t.Fatal("the fixture did not reason")
			}
			got, err := Merge(shardRecords(t, results, rows, p, 3, true))
			if err != nil {
				t.Fatal(err)
			}
			if got.Merged.ReasoningNotMerged != "" {
				t.Errorf("ReasoningNotMerged = %q", got.Merged.ReasoningNotMerged)
			}
			if diff := cmp.Diff(want.Reasoning, got.Reasoning); diff != "" {
				t.Errorf("merged Reasoning (-single run +merge):\n%s", diff)
			}
			wantLine, err := want.Record(JSONOptions{Details: true})
			if err != nil {
				t.Fatal(err)
			}
			gotLine, err := got.Record(JSONOptions{Details: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(reasoningKeys(t, wantLine), reasoningKeys(t, gotLine)); diff != "" {
				t.Errorf("the record's reasoning keys (-single run +merge):\n%s", diff)
			}
			if !slices.EqualFunc(want.Details.Reasoning, got.Details.Reasoning, func(a, b *DetailReasoning) bool {
				return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
			}) {
				t.Error("the merged details' request_reasoning is not the single run's, in its order")
			}
			// The merged record, read back, merges no further but reads
			// its reasoning back as written.
			back, err := ParseRecord(gotLine)
			if err != nil {
				t.Fatal(err)
			}
			if back.Reasoning == nil || back.Reasoning.Requests != want.Reasoning.Requests || back.Reasoning.TTFAT.P99 != want.Reasoning.TTFAT.P99 {
				t.Errorf("merged record read back: %+v", back.Reasoning)
			}
		})
	}
}

// TestMergeReasoningSketches: the same runs with --stats sketch merge, from
// the shards' sketches, into what one sketch of the whole run reports
// (the same buckets: the same quantiles), so every quantile of TTFAT,
// answer TPOT and answer ITL is within the sketch's relative error of the
// exact samples around its rank; the counts are exact.
func TestMergeReasoningSketches(t *testing.T) {
	for _, tc := range reasoningSplits {
		t.Run(tc.name, func(t *testing.T) {
			results, rows := reasoningShardRun(2400, tc.reasons)
			p := mergeReasoningParams()
			exact := singleRun(t, results, rows, p)
			p.Stats = StatsSketch
			one := singleRun(t, results, rows, p)
			got, err := Merge(shardRecords(t, results, rows, p, 3, false))
			if err != nil {
				t.Fatal(err)
			}
			if got.Merged.From != MergedFromSketches || got.Merged.ReasoningNotMerged != "" {
				t.Fatalf("merged from %q, reasoning not merged %q", got.Merged.From, got.Merged.ReasoningNotMerged)
			}
			g, o, e := got.Reasoning, one.Reasoning, exact.Reasoning
			if g == nil {
				t.Fatal("the merge has no reasoning block")
			}
			if g.Requests != e.Requests || g.CountedRequests != e.CountedRequests || g.ReasoningTokens != e.ReasoningTokens || g.AnswerTokens != e.AnswerTokens {
				t.Errorf("counts %+v, want the exact run's %+v", g, e)
			}
			lists := map[string][]float64{}
			for _, r := range results {
				if r.Outcome != prober.OutcomeSuccess {
					continue
				}
				sm := r.Samples()
				if prober.Defined(sm.TTFAT) {
					lists["ttfat"] = append(lists["ttfat"], sm.TTFAT.Seconds()*1000)
				}
				if sm.AnswerTPOTSeconds >= 0 {
					lists["answer tpot"] = append(lists["answer tpot"], sm.AnswerTPOTSeconds*1000)
				}
				for _, v := range r.AppendAnswerITLs(nil, false) {
					lists["answer itl"] = append(lists["answer itl"], v*1000)
				}
			}
			for _, c := range []struct {
				name               string
				got, once, exactSt Stats
			}{{"ttfat", g.TTFAT, o.TTFAT, e.TTFAT}, {"answer tpot", g.AnswerTPOT, o.AnswerTPOT, e.AnswerTPOT}, {"answer itl", g.AnswerITL, o.AnswerITL, e.AnswerITL}} {
				sorted := slices.Sorted(slices.Values(lists[c.name]))
				for _, q := range []struct{ p, got, once float64 }{{50, c.got.Median, c.once.Median}, {90, c.got.P90, c.once.P90}, {99, c.got.P99, c.once.P99}} {
					if q.got != q.once {
						t.Errorf("%s p%v: merged sketches %v, one sketch of the run %v", c.name, q.p, q.got, q.once)
					}
					vi := float64(len(sorted)-1) * q.p / 100
					lo, hi := sorted[int(math.Floor(vi))], sorted[int(math.Ceil(vi))]
					if q.got < lo*(1-SketchRelativeError) || q.got > hi*(1+SketchRelativeError) {
						t.Errorf("%s p%v: merged sketches %.6g, samples around the rank %.6g..%.6g", c.name, q.p, q.got, lo, hi)
					}
				}
				if !relClose(c.got.Mean, c.exactSt.Mean, 1e-9) || c.got.Max != c.exactSt.Max {
					t.Errorf("%s: merged sketches %+v, exact %+v", c.name, c.got, c.exactSt)
				}
			}
			for k, pv := range g.AnswerITLPercentiles {
				if w := o.AnswerITLPercentiles[k]; pv != w {
					t.Errorf("answer ITL percentile %d = %+v, one sketch %+v", k, pv, w)
				}
			}
		})
	}
}

// TestMergeWithoutReasoningKeepsBytes: the records of shards of a run in
// which nothing reasoned, and their merge, have none of the answer
// phase's keys: no request_reasoning in the details, no answer sketches,
// no reasoning block (the single run's bytes are pinned by the goldens).
func TestMergeWithoutReasoningKeepsBytes(t *testing.T) {
	results, rows := sketchRun(300)
	p := mergeReasoningParams()
	for _, stats := range []string{StatsExact, StatsSketch} {
		q := p
		q.Stats = stats
		details := stats == StatsExact
		shards := shardRecords(t, results, rows, q, 3, details)
		for _, s := range shards {
			line, err := s.Record(JSONOptions{Details: details})
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"request_reasoning", `"ttfat"`, `"answer_tpot"`, `"answer_itl"`, "reasoning_requests"} {
				if bytes.Contains(line, []byte(key)) {
					t.Errorf("%s: a shard without reasoning has %s", stats, key)
				}
			}
		}
		got, err := Merge(shards)
		if err != nil {
			t.Fatal(err)
		}
		if got.Reasoning != nil || got.Merged.ReasoningNotMerged != "" {
			t.Errorf("%s: merge of a run without reasoning: %+v, %q", stats, got.Reasoning, got.Merged.ReasoningNotMerged)
		}
		line, err := got.Record(JSONOptions{Details: details})
		if err != nil {
			t.Fatal(err)
		}
		if keys := reasoningKeys(t, line); len(keys) != 0 || bytes.Contains(line, []byte("request_reasoning")) {
			t.Errorf("%s: merged record of a run without reasoning has %v", stats, keys)
		}
	}
}

// TestMergeReasoningNotMerged: a shard that reasoned but whose record
// carries neither its per-request reasoning nor its answer sketches (an
// older writer's) leaves the answer latencies unmerged, and the merge
// says so in its record and table instead of reporting the other
// shards' as the run's; the counts are still exact.
func TestMergeReasoningNotMerged(t *testing.T) {
	results, rows := reasoningShardRun(300, reasoningSplits[0].reasons)
	p := mergeReasoningParams()
	want := singleRun(t, results, rows, p)
	for _, stats := range []string{StatsExact, StatsSketch} {
		t.Run(stats, func(t *testing.T) {
			q := p
			q.Stats = stats
			details := stats == StatsExact
			shards := shardRecords(t, results, rows, q, 3, details) // indices 2, 1, 0
			old := *shards[1]
			if details {
				d := *old.Details
				d.Reasoning = nil
				old.Details = &d
			} else {
				sh := *old.Shard
				k := *sh.Sketches
				k.TTFAT, k.AnswerTPOT, k.AnswerITL = nil, nil, nil
				sh.Sketches = &k
				old.Shard = &sh
			}
			shards[1] = &old
			got, err := Merge(shards)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.Merged.ReasoningNotMerged, "shard 1/3 reasoned") {
				t.Errorf("ReasoningNotMerged = %q", got.Merged.ReasoningNotMerged)
			}
			r := got.Reasoning
			if r == nil {
				t.Fatal("no reasoning block")
			}
			if r.Requests != want.Reasoning.Requests || r.ReasoningTokens != want.Reasoning.ReasoningTokens || r.AnswerTokens != want.Reasoning.AnswerTokens {
				t.Errorf("counts %+v, want %+v", r, want.Reasoning)
			}
			if r.TTFAT != (Stats{}) || r.AnswerTPOT != (Stats{}) || r.AnswerITL != (Stats{}) {
				t.Errorf("latencies of some shards reported as the run's: %+v", r)
			}
			var b strings.Builder
			if err := got.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "Merged reasoning:") || !strings.Contains(b.String(), "not merged") {
				t.Errorf("the table does not say the reasoning latencies were not merged:\n%s", b.String())
			}
			line, err := got.Record(JSONOptions{Details: details})
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseRecord(line)
			if err != nil {
				t.Fatal(err)
			}
			if back.Merged.ReasoningNotMerged != got.Merged.ReasoningNotMerged {
				t.Errorf("read back %q, wrote %q", back.Merged.ReasoningNotMerged, got.Merged.ReasoningNotMerged)
			}
		})
	}
}

// TestSpooledDetailsReasoning: details kept on disk write request_reasoning
// as the in-memory details do, byte for byte, so a shard run with its
// details spooled (the CLI's default for --output-details) merges as one
// that kept them in memory.
func TestSpooledDetailsReasoning(t *testing.T) {
	results, rows := reasoningShardRun(200, reasoningSplits[1].reasons)
	p := mergeReasoningParams()
	p.Details = true
	mem := singleRun(t, results, rows, p)
	p.SpoolDetails = true
	sp := singleRun(t, results, rows, p)
	defer sp.SpooledDetails.Close()
	if sp.SpooledDetails == nil {
		t.Fatal("the details were not spooled")
	}
	for _, o := range []JSONOptions{{Details: true}, {Details: true, Strict: true}, {Details: true, StandardOnly: true}} {
		want, err := mem.Record(o)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := sp.WriteRecord(&got, o); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got.Bytes()) {
			t.Errorf("%+v: spooled record differs from the in-memory one:\n%s\n%s", o, want, got.Bytes())
		}
		if has := bytes.Contains(want, []byte(`"request_reasoning": [`)); has == o.StandardOnly {
			t.Errorf("%+v: request_reasoning written = %v", o, has)
		}
	}
}

// TestParseRequestReasoningLength: a record whose request_reasoning does
// not have one entry per request is refused by name.
func TestParseRequestReasoningLength(t *testing.T) {
	results, rows := reasoningShardRun(20, reasoningSplits[0].reasons)
	p := mergeReasoningParams()
	p.Details = true
	s := singleRun(t, results, rows, p)
	s.Details.Reasoning = s.Details.Reasoning[:5]
	line, err := s.Record(JSONOptions{Details: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRecord(line); err == nil || !strings.Contains(err.Error(), "request_reasoning has 5 entries for 20 requests") {
		t.Errorf("ParseRecord = %v, want the request_reasoning length named", err)
	}
}
