package bench

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// reasoningRun is two successes: one that reasoned for 200 ms (two
// reasoning tokens, counted) before answering in three tokens, 10 ms and
// 30 ms apart, one that answered at once in two tokens 30 ms apart.
func reasoningRun() ([]prober.Result, []datasets.Prompt) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	thought := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: ms(0), Sent: ms(0),
		FirstToken: ms(100), FirstAnswer: ms(300), End: ms(340),
		Events: []prober.Event{{At: ms(100), Tokens: 1, Reasoning: true}, {At: ms(200), Tokens: 1, Reasoning: true},
			{At: ms(300), Tokens: 1}, {At: ms(310), Tokens: 1}, {At: ms(340), Tokens: 1}},
		OutputTokens: 5, OutputTokensSource: prober.TokenSourceUsage, ReasoningTokens: 2, ReasoningTokensSource: prober.TokenSourceCounted}
	plain := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: ms(0), Sent: ms(0),
		FirstToken: ms(100), End: ms(130),
		Events:       []prober.Event{{At: ms(100), Tokens: 1}, {At: ms(130), Tokens: 1}},
		OutputTokens: 2, OutputTokensSource: prober.TokenSourceUsage}
	rows := []datasets.Prompt{{PromptLen: 4, OutputLen: 5}, {PromptLen: 4, OutputLen: 5}}
	return []prober.Result{thought, plain}, rows
}

// answerITL are reasoningRun's answer gaps in seconds, by hand: the thought
// request's two after its first answer token (not the 100 ms gaps of its
// reasoning, nor the gap into the answer), then the plain request's one.
var answerITL = []float64{0.010, 0.030, 0.030}

// TestReasoningBlock: a run that reasoned gets the answer phase in the
// servingprobe block and record, and reads back from its record; a run
// that did not has neither (its bytes are pinned by the golden tests).
func TestReasoningBlock(t *testing.T) {
	results, rows := reasoningRun()
	s, err := Summarize(results, rows, Params{Backend: "vllm-chat", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := &ReasoningSummary{Requests: 1, CountedRequests: 1, ReasoningTokens: 2, AnswerTokens: 5,
		TTFAT:      Stats{Mean: 200, Median: 200, Std: 100, P90: 280, P95: 290, P99: 298},
		AnswerTPOT: Stats{Mean: 25, Median: 25, Std: 5, P90: 29, P95: 29.5, P99: 29.9},
		AnswerITL:  ComputeStats(answerITL)}
	approx := cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })
	if diff := cmp.Diff(want, s.Reasoning, approx, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Max" }, cmp.Ignore())); diff != "" {
		t.Errorf("Summary.Reasoning (-want +got):\n%s", diff)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Requests with reasoning:", "Reasoning tokens:", "Mean TTFAT (ms):", "P99 answer TPOT (ms):",
		"Mean answer ITL (ms):                    23.33", "P99 answer ITL (ms):                     30.00"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
	rec, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"reasoning_requests": 1`, `"total_reasoning_tokens": 2`, `"mean_ttfat_ms": 200.0`, `"p99_answer_tpot_ms"`,
		`"median_answer_itl_ms": 30.0`, `"p99_answer_itl_ms": 30.0`} {
		if !bytes.Contains(rec, []byte(key)) {
			t.Errorf("record lacks %s: %s", key, rec)
		}
	}
	if std, _ := s.Record(JSONOptions{StandardOnly: true}); bytes.Contains(std, []byte("ttfat")) {
		t.Errorf("the standard record has servingprobe's keys: %s", std)
	}
	back, err := ParseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	wantBack := *want
	wantBack.TTFAT = Stats{Mean: 200, Median: 200, P99: 298}
	wantBack.AnswerTPOT = Stats{Mean: 25, Median: 25, P99: 29.9}
	wantBack.AnswerITL = Stats{Mean: want.AnswerITL.Mean, Median: 30, P99: 30}
	if diff := cmp.Diff(&wantBack, back.Reasoning, approx); diff != "" {
		t.Errorf("ParseRecord's Reasoning (-want +got):\n%s", diff)
	}

	plain, err := Summarize(results[1:], rows[1:], Params{Backend: "vllm-chat", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Reasoning != nil {
		t.Errorf("a run without reasoning has Reasoning %+v", plain.Reasoning)
	}
}

// TestAnswerITLRandom: over thousands of requests, some reasoning (a
// random part of their events), some failed, some plain, the run's answer
// ITL is exactly NumPy's statistics of prober's answer samples of the
// successes in dispatch order, and the sketch's is within its error; a run
// in which nothing reasoned has the ITL as its answer ITL.
func TestAnswerITLRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	results := randomResults(rng, 3000)
	rows := make([]datasets.Prompt, len(results))
	var want, wantAll []float64
	for i := range results {
		r := &results[i]
		switch i % 5 {
		case 0, 1:
			r.ReasoningTokensSource = prober.TokenSourceCounted
			for j := range rng.IntN(len(r.Events) + 1) {
				r.Events[j].Reasoning = true
			}
		case 2:
			r.Outcome = prober.OutcomeTimeout
			continue
		}
		want = r.AppendAnswerITLs(want, false)
		wantAll = r.AppendITLs(wantAll, false)
	}
	pct := []float64{50, 90, 99.9}
	for _, stats := range []string{StatsExact, StatsSketch} {
		s, err := Summarize(results, rows, Params{Backend: "vllm-chat", Stats: stats, Duration: time.Second,
			PercentileMetrics: []string{MetricITL}, MetricPercentiles: pct})
		if err != nil {
			t.Fatal(err)
		}
		wantStats := ComputeStats(want)
		sorted := slices.Sorted(slices.Values(want))
		if stats == StatsExact {
			if diff := cmp.Diff(wantStats, s.Reasoning.AnswerITL); diff != "" {
				t.Errorf("exact answer ITL (-want +got):\n%s", diff)
			}
			for k, p := range s.Reasoning.AnswerITLPercentiles {
				if w := percentile(sorted, pct[k]) * 1000; p.P != pct[k] || p.Value != w {
					t.Errorf("exact answer ITL percentile %d = %+v, want P%g %v", k, p, pct[k], w)
				}
			}
			if len(want) == len(wantAll) {
				t.Fatal("the run needs gaps before some answers")
			}
			continue
		}
		within := func(name string, got, w float64) {
			if math.Abs(got-w) > SketchRelativeError*w+1e-9 {
				t.Errorf("sketch answer ITL %s = %v, want %v within %g%%", name, got, w, SketchRelativeError*100)
			}
		}
		within("mean", s.Reasoning.AnswerITL.Mean, wantStats.Mean)
		within("median", s.Reasoning.AnswerITL.Median, wantStats.Median)
		within("p99", s.Reasoning.AnswerITL.P99, wantStats.P99)
		if got := s.Reasoning.AnswerITLPercentiles; len(got) != len(pct) {
			t.Fatalf("sketch answer ITL percentiles %+v, want %v", got, pct)
		}
		for k, p := range s.Reasoning.AnswerITLPercentiles {
			// A sketch reports the value of rank q·(n−1), rounded.
			w := sorted[int(math.Round(pct[k]/100*float64(len(sorted)-1)))] * 1000
			within(fmt.Sprintf("P%g", pct[k]), p.Value, w)
		}
	}

	// Nothing reasoned but one request with a stated count and no
	// reasoning events: its whole stream is the answer, so the answer ITL
	// is the ITL.
	plain := slices.Clone(results)
	for i := range plain {
		plain[i].ReasoningTokensSource = ""
		for j := range plain[i].Events {
			plain[i].Events[j].Reasoning = false
		}
	}
	plain[0].ReasoningTokens, plain[0].ReasoningTokensSource = 7, prober.TokenSourceUsage
	for _, stats := range []string{StatsExact, StatsSketch} {
		s, err := Summarize(plain, rows, Params{Backend: "vllm-chat", Stats: stats, Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.ITL, s.Reasoning.AnswerITL); diff != "" {
			t.Errorf("%s: answer ITL of a run whose answers were whole streams (-ITL +answer ITL):\n%s", stats, diff)
		}
	}
}

// TestAnswerITLTableRecord: the table's answer rows and those of the
// table read back from the JSONL record are the same bytes, at the P99
// and at a run's --metric-percentiles, under exact statistics (whose rows
// are the hand-computed ones) and under the sketch.
func TestAnswerITLTableRecord(t *testing.T) {
	results, rows := reasoningRun()
	answerRows := func(s *Summary) string {
		var b bytes.Buffer
		if err := s.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		var out []string
		for line := range strings.Lines(b.String()) {
			if strings.Contains(line, "answer ITL") {
				out = append(out, line)
			}
		}
		return strings.Join(out, "")
	}
	for _, tc := range []struct {
		name    string
		metrics []string
		pct     []float64
		want    string
	}{
		{"P99", nil, nil, "Mean answer ITL (ms):                    23.33     \n" +
			"Median answer ITL (ms):                  30.00     \n" +
			"P99 answer ITL (ms):                     30.00     \n"},
		{"metric percentiles", []string{MetricTTFT, MetricITL}, []float64{25, 50}, "Mean answer ITL (ms):                    23.33     \n" +
			"Median answer ITL (ms):                  30.00     \n" +
			"P25 answer ITL (ms):                     20.00     \n" +
			"P50 answer ITL (ms):                     30.00     \n"},
		{"metric percentiles without the ITL", []string{MetricTTFT}, []float64{25}, "Mean answer ITL (ms):                    23.33     \n" +
			"Median answer ITL (ms):                  30.00     \n" +
			"P99 answer ITL (ms):                     30.00     \n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stats := range []string{StatsExact, StatsSketch} {
				s, err := Summarize(results, rows, Params{Backend: "vllm-chat", Stats: stats, Duration: time.Second,
					PercentileMetrics: tc.metrics, MetricPercentiles: tc.pct})
				if err != nil {
					t.Fatal(err)
				}
				got := answerRows(&s)
				if got != tc.want && stats == StatsExact {
					t.Errorf("%s table's answer ITL rows:\n%s\nwant:\n%s", stats, got, tc.want)
				}
				rec, err := s.Record(JSONOptions{})
				if err != nil {
					t.Fatal(err)
				}
				back, err := ParseRecord(rec)
				if err != nil {
					t.Fatal(err)
				}
				if fromRecord := answerRows(back); fromRecord != got {
					t.Errorf("%s: the record reads back as\n%s\nthe table has\n%s", stats, fromRecord, got)
				}
			}
		})
	}
}

// BenchmarkSummarizeReasoning is BenchmarkSummarize's run with the first
// half of every request's events reasoning, in each statistics mode: the
// answer ITL costs exact statistics one copy of the answer's samples (4
// bytes each, as the ITL store) and the sketch one more sketch.
func BenchmarkSummarizeReasoning(b *testing.B) {
	for _, reasoning := range []bool{false, true} {
		results, rows := benchResults(10000)
		if reasoning {
			for i := range results {
				results[i].ReasoningTokensSource = prober.TokenSourceCounted
				for k := range len(results[i].Events) / 2 {
					results[i].Events[k].Reasoning = true
				}
			}
		}
		for _, stats := range []string{StatsExact, StatsSketch} {
			b.Run(fmt.Sprintf("reasoning=%t/%s", reasoning, stats), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Summarize(results, rows, Params{Backend: "vllm", Stats: stats, Duration: time.Minute}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
