package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var base = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return base.Add(time.Duration(ms * float64(time.Millisecond))) }

// ev is an output event at ms carrying tokens.
type ev struct {
	ms     float64
	tokens int
}

// req builds a streamed request's Result from offsets in milliseconds.
func req(sched, sent, end float64, out int, outcome prober.Outcome, text, errText string, events ...ev) prober.Result {
	r := prober.Result{
		Backend: "vllm", Stream: true, Scheduled: at(sched), Sent: at(sent), End: at(end),
		OutputTokens: out, Outcome: outcome, GeneratedText: text, Err: errText,
	}
	for _, e := range events {
		r.Events = append(r.Events, prober.Event{At: at(e.ms), Tokens: e.tokens})
	}
	if len(events) > 0 {
		r.FirstToken = r.Events[0].At
	}
	return r
}

// fixture is a hand-built run; the expected figures in TestSummaryFigures
// are worked out from it by hand.
func fixture() ([]prober.Result, []datasets.Prompt) {
	ok := prober.OutcomeSuccess
	results := []prober.Result{
		req(0, 0, 210, 6, ok, "Hello, world", "", ev{100, 1}, ev{120, 1}, ev{140, 1}, ev{200, 3}),
		req(50, 80, 1500, 5, ok, "a b c d e", "", ev{300, 2}, ev{350, 1}, ev{1400, 2}),
		req(100, 100, 150, 0, prober.OutcomeHTTP5xx, "", "503 Service Unavailable"),
		req(150, 250, 320, 1, ok, "one", "", ev{310, 1}),
		req(200, 210, 2000, 0, prober.OutcomeTimeout, "partial", "context deadline exceeded", ev{400, 1}, ev{500, 1}),
		req(250, 1300, 1420, 4, ok, "h\u00e9llo \U0001F600\n", "", ev{1350, 1}, ev{1370, 1}, ev{1390, 1}, ev{1410, 1}),
	}
	rows := make([]datasets.Prompt, len(results))
	for i := range rows {
		rows[i] = datasets.Prompt{PromptLen: 10 * (i + 1), OutputLen: 128}
	}
	return results, rows
}

func wordCount(s string) int { return len(strings.Fields(s)) }

func fixtureParams() Params {
	return Params{
		Backend: "vllm", Dataset: "random", RequestRate: 50, MaxConcurrency: 2,
		Options:     datasets.Options{RandomInputLen: 1024, RandomOutputLen: 128},
		NumPrompts:  6,
		ServerInfo:  json.RawMessage(`{"version":"0.9.1","n":1e3}`),
		Duration:    2500 * time.Millisecond,
		CountTokens: wordCount,
	}
}

func TestSummaryFigures(t *testing.T) {
	t.Parallel()
	results, rows := fixture()
	approx := cmpopts.EquateApprox(0, 1e-9)
	for _, tc := range []struct {
		name   string
		params func(*Params)
		check  func(t *testing.T, s Summary)
	}{
		{"totals and throughputs", nil, func(t *testing.T, s Summary) {
			got := []float64{
				float64(s.Completed), float64(s.TotalInputTokens), float64(s.TotalInputTextTokens),
				float64(s.TotalOutputTokens), float64(s.TotalOutputTokensRetokenized),
				s.RequestThroughput, s.InputThroughput, s.OutputThroughput, s.TotalThroughput,
				s.Concurrency, float64(s.Requests), float64(s.Failed),
			}
			want := []float64{4, 130, 130, 16, 10, 1.6, 52, 6.4, 58.4, 1.82 / 2.5, 6, 2}
			if diff := cmp.Diff(want, got, approx); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[prober.Outcome]int{prober.OutcomeHTTP5xx: 1, prober.OutcomeTimeout: 1}, s.Outcomes); diff != "" {
				t.Errorf("Outcomes (-want +got):\n%s", diff)
			}
		}},
		{"latency statistics", nil, func(t *testing.T, s Summary) {
			// TTFT 100, 220, 60, 50 ms; E2E 210, 1420, 70, 120 ms.
			if diff := cmp.Diff([]float64{107.5, 80, 220}, []float64{s.TTFT.Mean, s.TTFT.Median, s.TTFT.Max}, approx); diff != "" {
				t.Errorf("TTFT (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]float64{455, 165, 1420}, []float64{s.E2ELatency.Mean, s.E2ELatency.Median, s.E2ELatency.Max}, approx); diff != "" {
				t.Errorf("E2E (-want +got):\n%s", diff)
			}
			// TPOT: (210-100)/5, (1420-220)/4, (120-50)/3; request 3 has one token.
			if diff := cmp.Diff([]float64{(22 + 300 + 70.0/3) / 3, 70.0 / 3, 300}, []float64{s.TPOT.Mean, s.TPOT.Median, s.TPOT.Max}, approx); diff != "" {
				t.Errorf("TPOT (-want +got):\n%s", diff)
			}
		}},
		{"per-token ITL", nil, func(t *testing.T, s Summary) {
			// 20 x5 (the 3-token chunk split), 50, 525 x2, 20 x3.
			itl := []float64{.02, .02, .02, .02, .02, .05, .525, .525, .02, .02, .02}
			if diff := cmp.Diff(ComputeStats(itl), s.ITL, approx); diff != "" {
				t.Errorf("ITL (-want +got):\n%s", diff)
			}
			if s.MaxOutputTokensPerS != 11 {
				t.Errorf("MaxOutputTokensPerS = %v, want 11 (tokens in second 0)", s.MaxOutputTokensPerS)
			}
		}},
		{"chunk ITL in compat", func(p *Params) { p.Compat.ChunkITL = true }, func(t *testing.T, s Summary) {
			itl := []float64{.02, .02, .06, .05, 1.05, .02, .02, .02}
			if diff := cmp.Diff(ComputeStats(itl), s.ITL, approx); diff != "" {
				t.Errorf("ITL (-want +got):\n%s", diff)
			}
			if s.MaxOutputTokensPerS != 7 {
				t.Errorf("MaxOutputTokensPerS = %v, want 7 (chunks in second 0)", s.MaxOutputTokensPerS)
			}
		}},
		{"chunk ITL compat keeps sglang native per token", func(p *Params) { p.Compat.ChunkITL = true; p.Backend, p.SplitChunkGaps = "sglang", true }, func(t *testing.T, s Summary) {
			if s.ITL.Max != 525 {
				t.Errorf("ITL max = %v, want 525 (per token)", s.ITL.Max)
			}
		}},
		{"exact peak concurrency", nil, func(t *testing.T, s Summary) {
			if s.MaxConcurrentRequests != 2 {
				t.Errorf("MaxConcurrentRequests = %d, want 2", s.MaxConcurrentRequests)
			}
		}},
		{"bucket peak concurrency in compat", func(p *Params) { p.Compat.BucketConcurrency = true }, func(t *testing.T, s Summary) {
			// Requests 0, 1 and 3 all touch second 0, never at once.
			if s.MaxConcurrentRequests != 3 {
				t.Errorf("MaxConcurrentRequests = %d, want 3", s.MaxConcurrentRequests)
			}
		}},
		{"client queue and rates", nil, func(t *testing.T, s Summary) {
			// Queue 0, 30, 0, 100, 10, 1050 ms over all six requests.
			if diff := cmp.Diff(ComputeStats([]float64{0, .03, 0, .1, .01, 1.05}), s.ClientQueue, approx); diff != "" {
				t.Errorf("ClientQueue (-want +got):\n%s", diff)
			}
			// Successes: E2E+queue 210, 1450, 170, 1170 ms.
			if diff := cmp.Diff(ComputeStats([]float64{.21, 1.45, .17, 1.17}), s.E2EIncludingQueue, approx); diff != "" {
				t.Errorf("E2EIncludingQueue (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]float64{20, 5 / 1.3}, []float64{float64(s.ScheduledRequestRate), float64(s.ActualRequestRate)}, approx); diff != "" {
				t.Errorf("rates (-want +got):\n%s", diff)
			}
		}},
		{"goodput", func(p *Params) { p.Goodput = Goodput{"ttft": 150, "e2el": 1000} }, func(t *testing.T, s Summary) {
			if s.GoodRequests != 3 || math.Abs(s.RequestGoodput-1.2) > 1e-12 {
				t.Errorf("goodput = %d requests, %v req/s, want 3 and 1.2", s.GoodRequests, s.RequestGoodput)
			}
		}},
		{"goodput on tpot counts single-token requests as 0", func(p *Params) { p.Goodput = Goodput{"tpot": 25} }, func(t *testing.T, s Summary) {
			// TPOT 22, 300, none (0), 23.3 ms.
			if s.GoodRequests != 3 {
				t.Errorf("GoodRequests = %d, want 3", s.GoodRequests)
			}
		}},
		{"vLLM percentiles", func(p *Params) {
			p.PercentileMetrics = []string{MetricTTFT, MetricClientQueueTime}
			p.MetricPercentiles = []float64{50, 99.9}
		}, func(t *testing.T, s Summary) {
			want := []MetricStats{
				{Metric: "ttft", Mean: 107.5, Median: 80, Std: s.TTFT.Std, Percentiles: []PercentileValue{{50, 80}, {99.9, 219.64}}},
				{Metric: "client_queue_time", Mean: s.ClientQueue.Mean, Median: 20, Std: s.ClientQueue.Std, Percentiles: []PercentileValue{{50, 20}, {99.9, 1045.25}}},
			}
			if diff := cmp.Diff(want, s.Percentiles, approx); diff != "" {
				t.Errorf("Percentiles (-want +got):\n%s", diff)
			}
		}},
		{"zero duration", func(p *Params) { p.Duration = 0 }, func(t *testing.T, s Summary) {
			if s.RequestThroughput != 0 || s.Concurrency != 0 {
				t.Errorf("throughput %v, concurrency %v with zero duration, want 0", s.RequestThroughput, s.Concurrency)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fixtureParams()
			if tc.params != nil {
				tc.params(&p)
			}
			s, err := Summarize(results, rows, p)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

// Feeding results in completion order gives exactly the summary of
// dispatch order: the accumulator restores the order before summing.
func TestAccumulatorOrderIndependent(t *testing.T) {
	t.Parallel()
	results, rows := fixture()
	p := fixtureParams()
	p.Details = true
	want, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		perm := r.Perm(len(results))
		a := NewAccumulator(p)
		for _, i := range perm {
			a.Add(i, results[i], rows[i])
		}
		got, err := a.Summary(p.Duration)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("summary after adding in order %v (-dispatch order +got):\n%s", perm, diff)
		}
	}
}

func TestAllFailed(t *testing.T) {
	t.Parallel()
	results := []prober.Result{
		req(0, 0, 10, 0, prober.OutcomeConnectError, "", "dial tcp: connection refused"),
		req(0, 0, 10, 0, prober.OutcomeConnectError, "", "dial tcp: connection refused"),
	}
	rows := make([]datasets.Prompt, 2)
	p := fixtureParams()
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatalf("Summarize() error = %v, want a summary of zeros", err)
	}
	if s.Completed != 0 || s.E2ELatency != (Stats{}) || s.Failed != 2 || s.MaxConcurrentRequests != 0 {
		t.Errorf("Summarize() = completed %d, E2E %+v, failed %d, peak %d; want 0, zeros, 2, 0",
			s.Completed, s.E2ELatency, s.Failed, s.MaxConcurrentRequests)
	}
	p.Compat.AllFailedError = true
	if _, err := Summarize(results, rows, p); !errors.Is(err, ErrAllFailed) {
		t.Errorf("Summarize() with %s: error = %v, want %v", CompatAllFailedError, err, ErrAllFailed)
	}
}

func TestSummarizeNeedsRows(t *testing.T) {
	t.Parallel()
	results, rows := fixture()
	if _, err := Summarize(results, rows[:2], fixtureParams()); err == nil {
		t.Errorf("Summarize() with too few rows: error = nil, want an error")
	}
}

func goldenCompare(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./bench -update)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (-want +got):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	results, rows := fixture()
	accept := 1.75
	for _, tc := range []struct {
		name   string
		params func(*Params)
		opts   JSONOptions
	}{
		{name: "vllm-random", opts: JSONOptions{}},
		{name: "vllm-random-strict-details", params: func(p *Params) {
			p.Details = true
			p.Tag = "nightly \"A\""
			p.Goodput = Goodput{"ttft": 150, "e2el": 1000}
			p.PercentileMetrics = []string{MetricTTFT, MetricE2EL, MetricClientQueueTime}
			p.MetricPercentiles = []float64{50, 99.9}
		}, opts: JSONOptions{Strict: true, Details: true}},
		{name: "sglang-burst-compat", params: func(p *Params) {
			p.Backend = "sglang-oai"
			p.RequestRate = math.Inf(1)
			p.MaxConcurrency = 0
			p.Dataset = "sharegpt"
			p.SharegptOutputLen = 256
			p.AcceptLength = &accept
			p.Compat, _ = ParseCompat("chunk-itl,bucket-concurrency")
		}, opts: JSONOptions{StandardOnly: true}},
		{name: "trace-image", params: func(p *Params) {
			p.Dataset = "image"
			p.UseTraceTimestamps = true
			p.ServerInfo = nil
		}},
		{name: "embedding-all-failed", params: func(p *Params) {
			p.Backend, p.Embedding = "vllm-embedding", true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fixtureParams()
			if tc.params != nil {
				tc.params(&p)
			}
			res, rws := results, rows
			if strings.HasSuffix(tc.name, "all-failed") {
				res, rws = results[2:3], rows[2:3]
			}
			s, err := Summarize(res, rws, p)
			if err != nil {
				t.Fatal(err)
			}
			var table bytes.Buffer
			if err := s.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			goldenCompare(t, tc.name+".table.golden", table.Bytes())
			line, err := s.Record(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			goldenCompare(t, tc.name+".jsonl.golden", line)
			if p.Details {
				// The details kept on disk write the same bytes.
				p.SpoolDetails = true
				sp, err := Summarize(res, rws, p)
				if err != nil {
					t.Fatal(err)
				}
				defer sp.SpooledDetails.Close()
				if sp.Details != nil || sp.SpooledDetails == nil {
					t.Fatal("SpoolDetails kept the details in memory")
				}
				got, err := sp.Record(tc.opts)
				if err != nil || !bytes.Equal(got, line) {
					t.Errorf("spooled record (%v):\n%s\nin memory:\n%s", err, got, line)
				}
			}
			// The record read back prints the same table (a report drawn
			// from a JSONL file shows the console's numbers); a standard-only
			// record has no servingprobe block, so only bench_serving's part
			// is compared.
			back, err := ParseRecord(line)
			if err != nil {
				t.Fatalf("ParseRecord: %v", err)
			}
			// A record does not say whether its backend returns
			// embeddings; its reader knows the backend's traits.
			back.Embedding = p.Embedding
			var again bytes.Buffer
			if err := back.WriteTable(&again); err != nil {
				t.Fatal(err)
			}
			want, got := table.String(), again.String()
			if tc.opts.StandardOnly {
				// bench_serving prints Max ITL but does not write it.
				maxITL := regexp.MustCompile(`(?m)^Max ITL \(ms\):.*\n`)
				cut := func(s string) string {
					before, _, _ := strings.Cut(s, " servingprobe ")
					return maxITL.ReplaceAllString(before, "")
				}
				want, got = cut(want), cut(got)
			}
			if want != got {
				t.Errorf("table from the parsed record differs:\n%s", cmp.Diff(want, got))
			}
			if tc.opts.Strict {
				var m map[string]any
				if err := json.Unmarshal(line, &m); err != nil {
					t.Errorf("strict record is not valid JSON: %v", err)
				}
			}
		})
	}
}

// The default record writes an infinite rate as bench_serving does, which
// encoding/json rejects; the strict one parses.
func TestRecordInfinity(t *testing.T) {
	t.Parallel()
	results, rows := fixture()
	p := fixtureParams()
	p.RequestRate = math.Inf(1)
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	loose, _ := s.Record(JSONOptions{})
	if !bytes.Contains(loose, []byte(`"request_rate": Infinity,`)) {
		t.Errorf("record lacks the bare Infinity: %s", loose)
	}
	strict, _ := s.Record(JSONOptions{Strict: true})
	var m map[string]any
	if err := json.Unmarshal(strict, &m); err != nil {
		t.Fatalf("strict record: %v", err)
	}
	if m["request_rate"] != "inf" {
		t.Errorf("strict request_rate = %v, want \"inf\"", m["request_rate"])
	}
}

// The Summary round-trips through encoding/json for the HTTP API, infinite
// rates included.
func TestSummaryJSONRoundTrip(t *testing.T) {
	t.Parallel()
	results, rows := fixture()
	p := fixtureParams()
	p.RequestRate = math.Inf(1)
	p.Details = true
	p.Goodput = Goodput{"ttft": 100}
	p.PercentileMetrics = []string{MetricITL}
	p.MetricPercentiles = []float64{99}
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("json.Marshal(Summary) error = %v", err)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("json.Unmarshal(Summary) error = %v", err)
	}
	if diff := cmp.Diff(s, back, cmpopts.EquateEmpty(), cmp.Transformer("raw", func(r json.RawMessage) string {
		var v any
		_ = json.Unmarshal(r, &v)
		out, _ := json.Marshal(v)
		return string(out)
	})); diff != "" {
		t.Errorf("Summary JSON round trip (-want +got):\n%s", diff)
	}
	// The table printed from the decoded summary (bench --remote) is the same.
	var t1, t2 bytes.Buffer
	_ = s.WriteTable(&t1)
	_ = back.WriteTable(&t2)
	if t1.String() != t2.String() {
		t.Errorf("table from decoded summary differs:\n%s", cmp.Diff(t1.String(), t2.String()))
	}
}

func TestAppendJSONL(t *testing.T) {
	t.Parallel()
	results, rows := fixture()
	s, err := Summarize(results, rows, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(path, []byte("previous\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.AppendJSONL(path, JSONOptions{Strict: true}); err != nil {
			t.Fatalf("AppendJSONL() error = %v", err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "previous" || lines[1] != lines[2] {
		t.Fatalf("file after two appends has %d lines, want the previous one and two equal records", len(lines))
	}
	if err := s.AppendJSONL(filepath.Join(t.TempDir(), "missing", "out.jsonl"), JSONOptions{}); err == nil {
		t.Errorf("AppendJSONL() into a missing directory: error = nil, want an error")
	}
}

func TestDefaultOutputFile(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 4, 23, 0, 0, 0, time.Local)
	for _, tc := range []struct {
		p    Params
		want string
	}{
		{Params{Backend: "vllm", Dataset: "random", NumPrompts: 200, Options: datasets.Options{RandomInputLen: 1024, RandomOutputLen: 128}}, "vllm_0704_200_1024_128.jsonl"},
		{Params{Backend: "sglang", Dataset: "random-ids", NumPrompts: 5, Options: datasets.Options{RandomInputLen: 1, RandomOutputLen: 2}}, "sglang_0704_5_1_2.jsonl"},
		{Params{Backend: "sglang", Dataset: "image", NumPrompts: 5, Options: datasets.Options{RandomInputLen: 1, RandomOutputLen: 2, ImageCount: 3, ImageResolution: "720p"}}, "sglang_0704_5_1_2_3imgs_720p.jsonl"},
		{Params{Backend: "sglang-oai-chat", Dataset: "sharegpt", NumPrompts: 1000}, "sglang-oai-chat_0704_1000_sharegpt.jsonl"},
	} {
		if got := DefaultOutputFile(tc.p, now); got != tc.want {
			t.Errorf("DefaultOutputFile(%s, %s) = %q, want %q", tc.p.Backend, tc.p.Dataset, got, tc.want)
		}
	}
}

func TestEmptyOutputCompat(t *testing.T) {
	t.Parallel()
	// One real success and one 200 that produced nothing: servingprobe
	// counts the second as empty_output; sglang as a success with TTFT 0.
	results := []prober.Result{
		req(0, 0, 100, 2, prober.OutcomeSuccess, "ab", "", ev{40, 1}, ev{100, 1}),
		req(0, 0, 60, 8, prober.OutcomeEmptyOutput, "", "no output"),
	}
	rows := []datasets.Prompt{{PromptLen: 10, OutputLen: 8}, {PromptLen: 10, OutputLen: 8}}
	p := fixtureParams()
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Completed != 1 || s.Failed != 1 || s.TotalInputTokens != 10 {
		t.Errorf("default: completed %d, failed %d, input %d; want 1, 1, 10", s.Completed, s.Failed, s.TotalInputTokens)
	}
	p.Compat.EmptySuccess = true
	s, err = Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Completed != 2 || s.Failed != 0 || s.TotalInputTokens != 20 || s.TotalOutputTokens != 10 {
		t.Errorf("%s: completed %d, failed %d, input %d, output %d; want 2, 0, 20, 10",
			CompatEmptySuccess, s.Completed, s.Failed, s.TotalInputTokens, s.TotalOutputTokens)
	}
	// Mean TTFT over (40 ms, 0): sglang's TTFT of an empty success is 0.
	if got := s.TTFT.Mean; got != 20 {
		t.Errorf("%s: mean TTFT = %v ms, want 20", CompatEmptySuccess, got)
	}
}

// TestStoppedEarly: a run that stopped before sending every prompt says
// how many were never sent and why, in the table and the record.
func TestStoppedEarly(t *testing.T) {
	t.Parallel()
	results := []prober.Result{
		req(0, 0, 10, 0, prober.OutcomeCanceled, "", "context canceled"),
		req(0, 0, 10, 0, prober.OutcomeCanceled, "", "context canceled"),
	}
	p := fixtureParams()
	p.Planned, p.Stopped = 5, StoppedMaxDuration
	s, err := Summarize(results, make([]datasets.Prompt, 2), p)
	if err != nil {
		t.Fatal(err)
	}
	if s.NotSent != 3 || s.Stopped != StoppedMaxDuration || s.Outcomes[prober.OutcomeCanceled] != 2 {
		t.Errorf("NotSent %d, Stopped %q, canceled %d; want 3, %q, 2", s.NotSent, s.Stopped, s.Outcomes[prober.OutcomeCanceled], StoppedMaxDuration)
	}
	var b strings.Builder
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Prompts not sent:                        3", "Stopped early:                           max duration"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestClocks: results are counted by the clock that stamped them, in the
// table's Timestamps row and the record's servingprobe.clocks, and read
// back; results that read no response are not counted.
func TestClocks(t *testing.T) {
	results, rows := fixture()
	for i, c := range []prober.Clock{prober.ClockKernel, prober.ClockKernel, "", prober.ClockUser, prober.ClockMixed, prober.ClockKernel} {
		results[i].Clock = c
	}
	s, err := Summarize(results, rows, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	want := map[prober.Clock]int{prober.ClockKernel: 3, prober.ClockUser: 1, prober.ClockMixed: 1}
	if diff := cmp.Diff(want, s.Clocks); diff != "" {
		t.Errorf("clocks (-want +got):\n%s", diff)
	}
	var table strings.Builder
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "Timestamps:") || !strings.Contains(table.String(), "kernel 3, user 1, mixed 1") {
		t.Errorf("table has no Timestamps row with the counts:\n%s", table.String())
	}
	rec, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), `"clocks": {"kernel": 3, "user": 1, "mixed": 1}`) {
		t.Errorf("record has no servingprobe.clocks: %s", rec)
	}
	back, err := ParseRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back.Clocks); diff != "" {
		t.Errorf("clocks read back (-want +got):\n%s", diff)
	}
}

// TestSummaryTwice: a second Summary, which finds the inter-token samples
// already sorted in place, reports what the first did; adding after it is
// a programming error, caught.
func TestSummaryTwice(t *testing.T) {
	results, rows := fixture()
	a := NewAccumulator(fixtureParams())
	for i, r := range results {
		a.Add(i, r, rows[i])
	}
	first, err := a.Summary(3 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if first.ITLSamples == 0 {
		t.Fatal("the fixture has no inter-token samples")
	}
	second, err := a.Summary(3 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second summary differs (-first +second):\n%s", diff)
	}
	defer func() {
		if recover() == nil {
			t.Error("Add after Summary did not panic")
		}
	}()
	a.Add(len(results), results[0], rows[0])
}

// TestNotStreamed: a response that was not streamed has no measured TTFT
// or TPOT (prober's Samples say -1), but the bench table and JSONL keep
// bench_serving's --disable-stream convention: the whole response is the
// first chunk, so TTFT is the latency and TPOT follows from it. Its
// numbers and record are those of the same response streamed in one
// chunk, and only the table's servingprobe block says it was not
// streamed.
func TestNotStreamed(t *testing.T) {
	t.Parallel()
	streamed := req(0, 0, 400, 4, prober.OutcomeSuccess, "a b c d", "", ev{400, 4})
	r := streamed
	r.Stream = false
	if sm := r.Samples(); sm.TTFT != -1 || sm.TPOTSeconds != -1 || sm.E2E != 400*time.Millisecond {
		t.Fatalf("Samples() TTFT %v, TPOT %v, E2E %v; want -1, -1, 400ms", sm.TTFT, sm.TPOTSeconds, sm.E2E)
	}
	rows := []datasets.Prompt{{PromptLen: 10, OutputLen: 4}}
	p := fixtureParams()
	s, err := Summarize([]prober.Result{r}, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	if s.TTFT.Mean != 400 || s.TTFT != s.E2ELatency || s.TPOT.Mean != 0 || s.TPOTSamples != 1 || s.NotStreamed != 1 {
		t.Errorf("TTFT %+v, E2E %+v, TPOT mean %v over %d, not streamed %d; want TTFT = E2E = 400 ms, TPOT 0 over 1, 1",
			s.TTFT, s.E2ELatency, s.TPOT.Mean, s.TPOTSamples, s.NotStreamed)
	}
	want, err := Summarize([]prober.Result{streamed}, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	if want.NotStreamed != 0 {
		t.Fatalf("a streamed response counted as not streamed")
	}
	want.NotStreamed = s.NotStreamed
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("summary differs from the same response streamed in one chunk (-streamed +not):\n%s", diff)
	}
	// The record, servingprobe's keys included, does not say it either.
	got, errGot := s.Record(JSONOptions{})
	wantLine, errWant := want.Record(JSONOptions{})
	if err := errors.Join(errGot, errWant); err != nil || !bytes.Equal(got, wantLine) {
		t.Errorf("record (%v) differs from the streamed one:\n%s\nwant\n%s", err, got, wantLine)
	}
	var table strings.Builder
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	standard, extras, _ := strings.Cut(table.String(), " servingprobe ")
	if strings.Contains(standard, "streamed") || !strings.Contains(extras, "\nNot streamed:                            1 requests; TTFT and TPOT from the whole response\n") {
		t.Errorf("table does not say, in servingprobe's block only, that the request was not streamed:\n%s", table.String())
	}
}
