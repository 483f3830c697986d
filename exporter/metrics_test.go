package exporter

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/servingprobe/servingprobe/prober"
)

var update = flag.Bool("update", false, "rewrite golden files")

// t0 is a fixed instant, so that timestamps in the golden file are stable.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// successResult is a 5-token streamed request: sent at t0+1ms after being
// scheduled at t0, first token 100 ms later, then events of 1, 2 and 1
// tokens 20, 40 and 20 ms apart, [DONE] 5 ms after the last event.
func successResult(target, module, model string) prober.Result {
	sent := t0.Add(time.Millisecond)
	ft := sent.Add(100 * time.Millisecond)
	return prober.Result{
		RequestID: "sp-0001", Target: target, Module: module, Model: model, Stream: true,
		Scheduled: t0, Sent: sent, FirstToken: ft,
		Events: []prober.Event{
			{At: ft, Tokens: 1},
			{At: ft.Add(20 * time.Millisecond), Tokens: 1},
			{At: ft.Add(60 * time.Millisecond), Tokens: 2},
			{At: ft.Add(80 * time.Millisecond), Tokens: 1},
		},
		End:         ft.Add(85 * time.Millisecond),
		InputTokens: 12, InputTokensSource: prober.TokenSourceUsage,
		OutputTokens: 5, OutputTokensSource: prober.TokenSourceUsage,
		HTTPStatus: 200, Outcome: prober.OutcomeSuccess,
	}
}

// TestCappedITL: an event claiming a huge token count costs at most
// maxITLSamplesPerEvent samples, in the histograms and the history alike.
func TestCappedITL(t *testing.T) {
	got := cappedITL(prober.ITLSamples{{PerToken: 0.5, Tokens: 2}, {PerToken: 1e-9, Tokens: 1 << 30}})
	want := []itlSample{{PerToken: 0.5, Tokens: 2}, {PerToken: 1e-9, Tokens: maxITLSamplesPerEvent}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cappedITL (-want +got):\n%s", diff)
	}
}

func newTestMetrics() (*prometheus.Registry, *Metrics) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetTargets([]TargetSeries{
		// chat is a two-turn conversation module too, so that the
		// per-turn series are part of the golden exposition.
		{Name: "vllm", Backend: "vllm-chat", Model: "qwen", Modules: []string{"chat"},
			Checks: map[string][]prober.CheckName{"chat": {prober.CheckJSONSchema}}, Turns: map[string]int{"chat": 2}},
		{Name: "auto", Backend: "sglang", Modules: []string{"gen"}},
	})
	m.ReloadSucceeded(t0)
	return reg, m
}

// TestGoldenExposition pins every metric name, help string, label set and
// bucket layout. Run with -update after an intended change and review the
// diff: any change here is a [CHANGE] for users and for the dashboards.
func TestGoldenExposition(t *testing.T) {
	reg, m := newTestMetrics()
	obs := m.Observer(ModeProbe)
	// Over TLS: the certificate chain's expiry becomes a gauge of the target.
	tlsOK := successResult("vllm", "chat", "whatever the server echoes")
	tlsOK.TLSCertExpiry = t0.Add(90 * 24 * time.Hour)
	obs.Observe(tlsOK)
	fail := prober.Result{Target: "vllm", Module: "chat", Scheduled: t0, Sent: t0, End: t0.Add(time.Second),
		Outcome: prober.OutcomeHTTP5xx, HTTPStatus: 503}
	obs.Observe(fail)
	// A server that states its own TTFT (vLLM's metrics object): the
	// split histograms exist for its series only.
	stated := successResult("auto", "gen", "detected-model")
	stated.Server.FirstToken = 60 * time.Millisecond
	obs.Observe(stated)
	m.ObserveSkip("vllm", "chat")
	m.ObserveLag("vllm", "chat", 2*time.Millisecond)
	m.BenchStarted("vllm", t0)
	m.BenchPoint("vllm", t0.Add(time.Second), 8, 64)
	m.BenchFinished("vllm", t0.Add(time.Minute), BenchSucceeded, BenchHeadline{RequestThroughput: 9.5, OutputThroughput: 1200, Completed: 570, Failed: 3,
		CapacityBy: "request_rate", Capacity: 12.5})
	m.BenchStarted("auto", t0)
	m.BenchFinished("auto", t0.Add(time.Minute), BenchSucceeded, BenchHeadline{RequestThroughput: 2, OutputThroughput: 300, Completed: 120,
		CapacityBy: "max_concurrency", Capacity: 24})
	// A later search on auto that a limit of ours bounded: a lower bound,
	// beside the concurrency capacity of the search before.
	m.BenchStarted("auto", t0)
	m.BenchFinished("auto", t0.Add(time.Minute), BenchSucceeded, BenchHeadline{RequestThroughput: 2, OutputThroughput: 300, Completed: 120,
		CapacityBy: "request_rate", Capacity: 50, CapacityBoundedBy: "max_request_rate"})
	m.BenchStarted("vllm", t0)
	m.BenchFinished("vllm", t0.Add(time.Minute), BenchSucceeded, BenchHeadline{RequestThroughput: 9.5, OutputThroughput: 1200, Completed: 570, Failed: 3,
		CapacityBy: "max_concurrency", Capacity: 16, CapacityBoundedBy: "max_concurrency"})
	// A scheduled capacity check's capacity and the headroom beside it.
	m.CapacityChecked("vllm", t0.Add(2*time.Minute), 11.8, false)
	m.SetHeadroom("vllm", 0.25, true)

	got, err := exposition(reg)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "metrics.golden.prom")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./exporter -run TestGoldenExposition -update)", err)
	}
	if err := testutil.GatherAndCompare(reg, bytes.NewReader(want)); err != nil {
		t.Errorf("exposition differs from %s:\n%v", golden, err)
	}
}

func TestLint(t *testing.T) {
	reg, m := newTestMetrics()
	m.Observer(ModeProbe).Observe(successResult("vllm", "chat", ""))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint %s: %s", p.Metric, p.Text)
	}
}

// TestSeriesPerTarget caps the series of one configured (target, module)
// in probe mode, counted as exposition lines (every classic bucket is a
// series), so that a change that multiplies them is noticed.
func TestSeriesPerTarget(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetTargets([]TargetSeries{{Name: "one", Backend: "vllm", Model: "x", Modules: []string{"m"}}})
	obs := m.Observer(ModeProbe)
	obs.Observe(successResult("one", "m", "x"))
	m.ObserveLag("one", "m", 0)

	// Metric children (CollectAndCount counts one per label set).
	wantChildren := 8 + len(prober.Outcomes) + 3 + 3 + 1 + 1 + 1 + 1 + len(BenchResults) // histograms, outcomes, tokens, probe gauges, skip, lag, info, bench_running, bench_runs
	if got := testutil.CollectAndCount(m.requests) + testutil.CollectAndCount(m.ttft) + testutil.CollectAndCount(m.ttfat) + testutil.CollectAndCount(m.itl) +
		testutil.CollectAndCount(m.tpot) + testutil.CollectAndCount(m.answerITL) + testutil.CollectAndCount(m.answerTPOT) + testutil.CollectAndCount(m.e2e) + testutil.CollectAndCount(m.queue) +
		testutil.CollectAndCount(m.promptTokens) + testutil.CollectAndCount(m.genTokens) + testutil.CollectAndCount(m.reasoningTokens) +
		testutil.CollectAndCount(m.probeSuccess) + testutil.CollectAndCount(m.lastSuccess) + testutil.CollectAndCount(m.lastProbe) +
		testutil.CollectAndCount(m.skipped) + testutil.CollectAndCount(m.lag) + testutil.CollectAndCount(m.targetInfo) +
		testutil.CollectAndCount(m.benchRunning) + testutil.CollectAndCount(m.benchRuns); got != wantChildren {
		t.Errorf("metric children for one target and module = %d, want %d", got, wantChildren)
	}

	text, err := exposition(reg)
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for line := range strings.SplitSeq(string(text), "\n") {
		if strings.Contains(line, `target="one"`) {
			series++
		}
	}
	// A classic histogram is one series per bucket plus +Inf, sum and count.
	// 8 request histograms (TTFT, TTFAT and E2E; ITL, TPOT and their answer
	// phase; queue) and lag;
	// one per outcome; 3 token counters (prompt, generation, reasoning);
	// 3 gauges; skip; info; 5 bench (running and one per result).
	hist := func(b []float64) int { return len(b) + 3 }
	maxSeries := 3*hist(requestLatencyBuckets) + 4*hist(tokenLatencyBuckets) + 2*hist(queueBuckets) + len(prober.Outcomes) + 3 + 3 + 1 + 1 + 1 + len(BenchResults)
	if series > maxSeries {
		t.Errorf("exposition has %d series for one target and module, cap is %d", series, maxSeries)
	}
	if series < maxSeries-5 {
		t.Errorf("exposition has %d series for one target and module, expected about %d: pre-creation broken?", series, maxSeries)
	}
}

func TestSetTargetsDeletesSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetTargets([]TargetSeries{
		{Name: "keep", Backend: "vllm", Model: "x", Modules: []string{"a", "b"}},
		{Name: "gone", Backend: "vllm", Model: "x", Modules: []string{"a"}},
	})
	obs := m.Observer(ModeProbe)
	for _, r := range []prober.Result{successResult("keep", "a", ""), successResult("keep", "b", ""), successResult("gone", "a", "")} {
		obs.Observe(r)
	}
	m.BenchStarted("gone", t0)
	count := func(target, module string) int {
		text, err := exposition(reg)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for line := range strings.SplitSeq(string(text), "\n") {
			if strings.Contains(line, `target="`+target+`"`) && (module == "" || strings.Contains(line, `module="`+module+`"`)) {
				n++
			}
		}
		return n
	}
	if count("gone", "") == 0 || count("keep", "b") == 0 {
		t.Fatal("series missing before the reload")
	}
	// Reload: target "gone" removed, module b of "keep" removed, model of keep changed.
	m.SetTargets([]TargetSeries{{Name: "keep", Backend: "vllm", Model: "y", Modules: []string{"a"}}})
	if n := count("gone", ""); n != 0 {
		t.Errorf("%d series of removed target left", n)
	}
	if n := count("keep", "b"); n != 0 {
		t.Errorf("%d series of removed module left", n)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("keep", "a", "y", "probe", "success")); got != 0 {
		t.Errorf("requests of the new model = %v, want a fresh 0", got)
	}
	// A late result of the removed target is dropped, not re-created.
	obs.Observe(successResult("gone", "a", ""))
	m.ObserveSkip("gone", "a")
	if n := count("gone", ""); n != 0 {
		t.Errorf("late result re-created %d series of a removed target", n)
	}
}

func TestAutoDetectedModel(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetTargets([]TargetSeries{{Name: "auto", Backend: "vllm", Modules: []string{"m"}}})
	obs := m.Observer(ModeProbe)
	// Before detection: a connect error is counted under model="".
	obs.Observe(prober.Result{Target: "auto", Module: "m", Outcome: prober.OutcomeConnectError})
	if got := testutil.ToFloat64(m.requests.WithLabelValues("auto", "m", "", "probe", "connect_error")); got != 1 {
		t.Fatalf("connect errors before detection = %v, want 1", got)
	}
	obs.Observe(successResult("auto", "m", "llama"))
	obs.Observe(prober.Result{Target: "auto", Module: "m", Outcome: prober.OutcomeTimeout}) // no model: sticks to llama
	if got := testutil.ToFloat64(m.requests.WithLabelValues("auto", "m", "llama", "probe", "timeout")); got != 1 {
		t.Errorf("timeouts after detection = %v, want 1 under the detected model", got)
	}
	// A name not shaped like a model id (too long, or an echoed header)
	// never becomes a label: the result counts under the model in use.
	for _, bad := range []string{strings.Repeat("é", 200), strings.Repeat("a", 129), "Authorization=Bearer sk-x", `m"}`, "a b"} {
		obs.Observe(successResult("auto", "m", bad))
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("auto", "m", "llama", "probe", "success")); got != 6 {
		t.Errorf("successes under llama after five badly named results = %v, want 6", got)
	}
	// A server that changes models moves the series; the count stays one model.
	next := strings.Repeat("q", 128)
	obs.Observe(successResult("auto", "m", next))
	n, err := testutil.GatherAndCount(reg, "servingprobe_requests_total")
	if err != nil {
		t.Fatal(err)
	}
	if n != len(prober.Outcomes) {
		t.Errorf("requests_total has %d series after two model changes, want %d (one model)", n, len(prober.Outcomes))
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("auto", "m", next, "probe", "success")); got != 1 {
		t.Errorf("success under the new model = %v, want 1", got)
	}
	// Reload with detection still asked for keeps the detected model.
	m.SetTargets([]TargetSeries{{Name: "auto", Backend: "vllm", Modules: []string{"m"}}})
	if got := testutil.ToFloat64(m.requests.WithLabelValues("auto", "m", next, "probe", "success")); got != 1 {
		t.Errorf("reload reset the detected model's series: success = %v, want 1", got)
	}
}

func TestObserverModes(t *testing.T) {
	_, m := newTestMetrics()
	m.Observer(ModeBench).Observe(successResult("vllm", "other-module", ""))
	if got := testutil.ToFloat64(m.requests.WithLabelValues("vllm", "other-module", "qwen", "bench", "success")); got != 1 {
		t.Errorf("bench success = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.probeSuccess); n != 0 {
		t.Errorf("a bench request set %d probe gauges, want 0", n)
	}
	if got := testutil.ToFloat64(m.genTokens.WithLabelValues("vllm", "other-module", "qwen", "bench")); got != 5 {
		t.Errorf("bench generation tokens = %v, want 5", got)
	}
	// ITL: 4 tokens after the first, one sample each.
	h := &histCount{}
	h.collect(t, m.itl, "vllm", "other-module", "qwen", "bench")
	if h.count != 4 {
		t.Errorf("ITL samples = %d, want 4 (one per token after the first)", h.count)
	}
	// Failures are counted but not timed.
	m.Observer(ModeProbe).Observe(prober.Result{Target: "vllm", Module: "chat", Stream: true, Sent: t0, FirstToken: t0.Add(time.Second),
		End: t0.Add(2 * time.Second), Outcome: prober.OutcomeStreamCut})
	h = &histCount{}
	h.collect(t, m.ttft, "vllm", "chat", "qwen", "probe")
	if h.count != 0 {
		t.Errorf("a stream_cut request was observed in TTFT")
	}
	if got := testutil.ToFloat64(m.probeSuccess.WithLabelValues("vllm", "chat", "qwen")); got != 0 {
		t.Errorf("probe_success after stream_cut = %v, want 0", got)
	}
	// An outcome outside the enum never becomes a label value.
	m.Observer(ModeProbe).Observe(prober.Result{Target: "vllm", Module: "chat", Outcome: "weird"})
	if got := testutil.ToFloat64(m.requests.WithLabelValues("vllm", "chat", "qwen", "probe", "parse_error")); got != 1 {
		t.Errorf("unknown outcome not mapped to parse_error: %v", got)
	}
}

type histCount struct{ count uint64 }

func (h *histCount) collect(t *testing.T, v *prometheus.HistogramVec, lv ...string) {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	v.WithLabelValues(lv...).(prometheus.Histogram).Collect(ch)
	mm := <-ch
	var pb = new(dtoMetric)
	if err := mm.Write(pb); err != nil {
		t.Fatal(err)
	}
	h.count = pb.GetHistogram().GetSampleCount()
}

type dtoMetric = dto.Metric

// exposition renders reg in the text format. (testutil.GatherAndFormat
// with TypeTextPlain writes nothing in this client_golang/common pairing.)
func exposition(g prometheus.Gatherer) ([]byte, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// TestBenchCapacityLowerBound: a search answer that a limit of ours
// bounded replaces the target's capacity with a lower bound, and a later
// bracketed answer replaces the lower bound, so that the capacity alerts
// never compare a limit of ours with the server's history.
func TestBenchCapacityLowerBound(t *testing.T) {
	_, m := newTestMetrics()
	for _, tc := range []struct {
		name                 string
		bounded              string
		wantCapacity, wantLB int
	}{
		{"bracketed", "", 1, 0},
		{"bounded by max_request_rate", "max_request_rate", 0, 1},
		{"bracketed again", "", 1, 0},
	} {
		m.BenchStarted("vllm", t0)
		m.BenchFinished("vllm", t0.Add(time.Minute), BenchSucceeded, BenchHeadline{CapacityBy: "request_rate", Capacity: 50, CapacityBoundedBy: tc.bounded})
		if got := testutil.CollectAndCount(m.benchCapacityRate); got != tc.wantCapacity {
			t.Errorf("%s: %d capacity series, want %d", tc.name, got, tc.wantCapacity)
		}
		if got := testutil.CollectAndCount(m.benchLowerRate); got != tc.wantLB {
			t.Errorf("%s: %d lower-bound series, want %d", tc.name, got, tc.wantLB)
		}
	}
}
