package main

// The three-surface test: one recorded stream must give the
// same TTFT, ITL, TPOT and token counts through `servingprobe probe
// --json`, a bench run's JSONL (--output-details) and a daemon scrape.
//
// TestSurfacesExact is the proof: it replays each transcript once in a
// synctest bubble, so every timestamp is an exact virtual time, and feeds
// that one Result to the three surfaces' own code (writeProbeJSON, the
// bench Accumulator and Record the CLI uses, the exporter's observer), which
// must agree to the last bit. TestSurfacesLoopback proves the wiring: the
// real CLI commands and the daemon against a loopback server replaying the
// same transcripts, where only what is deterministic is compared exactly.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// The replay timing of prober/golden_test.go: headers at once, the first
// event 100 ms after the request, every further event 10 ms later.
const (
	surfFirst = 100 * time.Millisecond
	surfGap   = 10 * time.Millisecond
)

// surfPrompt is what the probe and the daemon's module send; the server
// ignores it and replays its transcript.
const surfPrompt = "What colour is the sky?"

// transcript is one recorded stream of prober/testdata.
type transcript struct {
	backend, name string
	data          string
}

func (tr transcript) id() string { return tr.backend + "/" + tr.name }

// successTranscripts returns every streamed transcript in prober/testdata
// whose golden outcome is success: those are the streams on which the
// surfaces report timings. Transcripts with a .meta.json (HTTP errors,
// non-streamed answers) are left out.
func successTranscripts(t *testing.T) []transcript {
	t.Helper()
	files, err := filepath.Glob("../../prober/testdata/*/*.sse")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	var out []transcript
	for _, f := range files {
		base := strings.TrimSuffix(f, ".sse")
		if _, err := os.Stat(base + ".meta.json"); err == nil {
			continue
		}
		g, err := os.ReadFile(base + ".golden.json")
		if err != nil {
			t.Fatal(err)
		}
		var golden struct {
			Outcome prober.Outcome `json:"outcome"`
		}
		if err := json.Unmarshal(g, &golden); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if golden.Outcome != prober.OutcomeSuccess {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, transcript{backend: filepath.Base(filepath.Dir(f)), name: filepath.Base(base), data: string(data)})
	}
	// Every backend must be covered, and sglang by a stream with an event
	// that carries text but no tokens (where the surfaces once disagreed).
	for _, b := range []string{"vllm", "vllm-chat", "sglang", "trt", "truss"} {
		if !slices.ContainsFunc(out, func(tr transcript) bool { return tr.backend == b }) {
			t.Errorf("no successful transcript of backend %s", b)
		}
	}
	return out
}

func (tr transcript) script() llmtest.Script {
	return llmtest.Script{Chunks: llmtest.SSE(surfFirst, surfGap, llmtest.SplitEvents(tr.data)...)}
}

var (
	surfTokOnce sync.Once
	surfTok     *tokenizer.Tokenizer
	surfTokErr  error
)

// qwen3 is the embedded default tokenizer: the daemon's module default and
// the same Qwen3 files the bench gets with --tokenizer.
func qwen3(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	surfTokOnce.Do(func() { surfTok, surfTokErr = tokenizer.Default() })
	if surfTokErr != nil {
		t.Fatal(surfTokErr)
	}
	return surfTok
}

// replayExact plays tr through the in-memory transport in a synctest
// bubble, with the bench's and the daemon's token counter, as
// prober/golden_test.go does.
func replayExact(t *testing.T, tr transcript) prober.Result {
	t.Helper()
	b, err := prober.NewBackend(tr.backend)
	if err != nil {
		t.Fatal(err)
	}
	tok := qwen3(t)
	var res prober.Result
	synctest.Test(t, func(t *testing.T) {
		p := &prober.Prober{
			Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{tr.script()}}},
			Backend: b, Name: tr.backend,
			Options: prober.RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true, IgnoreEOS: true, IncludeUsage: true},
			Counter: prober.TokenizerCounter{Tokenizer: tok},
			Target:  "t-" + tr.backend, Module: "mod",
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		res = p.Run(ctx, datasets.Prompt{Text: surfPrompt, OutputLen: 4}, time.Now())
	})
	if res.Outcome != prober.OutcomeSuccess {
		t.Fatalf("%s: replay outcome %s (%s), want success", tr.id(), res.Outcome, res.Err)
	}
	return res
}

// view is what one surface reports for one request. Seconds; TPOT is -1
// where it is not defined (fewer than two output tokens). ITLs is nil on
// the daemon, which only has the histogram's sum, count and buckets.
type view struct {
	TTFT, TPOT float64
	ITLs       []float64
	ITLCount   int
	ITLSum     float64
	In, Out    int
	// Source is the output count's source, where the surface shows it.
	Source string
}

// probeView reads `servingprobe probe --json` output.
func probeView(t *testing.T, out []byte) view {
	t.Helper()
	var p struct {
		TTFT       *float64  `json:"ttft_seconds"`
		TPOT       *float64  `json:"tpot_seconds"`
		ITLSeconds []float64 `json:"itl_seconds"`
		In         int       `json:"input_tokens"`
		Out        int       `json:"output_tokens"`
		Source     string    `json:"output_tokens_source"`
		Outcome    string    `json:"outcome"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("probe --json output does not parse: %v\n%s", err, out)
	}
	if p.Outcome != string(prober.OutcomeSuccess) || p.TTFT == nil {
		t.Fatalf("probe --json: outcome %q, ttft %v; want a success with a TTFT\n%s", p.Outcome, p.TTFT, out)
	}
	v := view{TTFT: *p.TTFT, TPOT: -1, ITLs: p.ITLSeconds, ITLCount: len(p.ITLSeconds), In: p.In, Out: p.Out, Source: p.Source}
	if p.TPOT != nil {
		v.TPOT = *p.TPOT
	}
	for _, x := range p.ITLSeconds {
		v.ITLSum += x
	}
	return v
}

// benchJSONLView reads the JSONL record of a one-request bench run with
// --output-details. TPOT is the run's mean_tpot_ms, which for one request
// is its TPOT; bench_serving leaves it at 0 when no request had two tokens.
func benchJSONLView(t *testing.T, line []byte) view {
	t.Helper()
	// bench_serving writes a burst's rate as a bare Infinity.
	line = bytes.ReplaceAll(line, []byte(": Infinity"), []byte(`: "Infinity"`))
	var r struct {
		Completed  int         `json:"completed"`
		InputLens  []int       `json:"input_lens"`
		OutputLens []int       `json:"output_lens"`
		TTFTs      []float64   `json:"ttfts"`
		ITLs       [][]float64 `json:"itls"`
		MeanTPOTMs float64     `json:"mean_tpot_ms"`
		TotalOut   int         `json:"total_output_tokens"`
		Errors     []string    `json:"errors"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("bench JSONL does not parse: %v\n%s", err, line)
	}
	if r.Completed != 1 || len(r.InputLens) != 1 || len(r.OutputLens) != 1 || len(r.TTFTs) != 1 || len(r.ITLs) != 1 {
		t.Fatalf("bench JSONL: completed %d, %d input_lens, %d output_lens, %d ttfts, %d itls; want one successful request (errors %q)",
			r.Completed, len(r.InputLens), len(r.OutputLens), len(r.TTFTs), len(r.ITLs), r.Errors)
	}
	if r.TotalOut != r.OutputLens[0] {
		t.Errorf("bench JSONL: total_output_tokens %d, output_lens[0] %d; one request, they must agree", r.TotalOut, r.OutputLens[0])
	}
	v := view{TTFT: r.TTFTs[0], TPOT: r.MeanTPOTMs / 1000, ITLs: r.ITLs[0], ITLCount: len(r.ITLs[0]), In: r.InputLens[0], Out: r.OutputLens[0]}
	if r.ITLs[0] == nil {
		v.ITLs = []float64{}
	}
	for _, x := range r.ITLs[0] {
		v.ITLSum += x
	}
	return v
}

// daemonSeries is one (target, mode="probe") series set of a scrape.
type daemonSeries struct {
	requests                map[string]float64 // by outcome
	ttft, itl, tpot, e2e    *dto.Histogram
	promptTokens, genTokens float64
	tokenSource             string
}

// daemonTargets reads the per-target series of a scrape.
func daemonTargets(t *testing.T, families map[string]*dto.MetricFamily) map[string]*daemonSeries {
	t.Helper()
	out := map[string]*daemonSeries{}
	get := func(m *dto.Metric) *daemonSeries {
		var target, mode string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "target":
				target = l.GetValue()
			case "mode":
				mode = l.GetValue()
			}
		}
		if mode != "" && mode != string(exporter.ModeProbe) {
			return nil
		}
		s := out[target]
		if s == nil {
			s = &daemonSeries{requests: map[string]float64{}}
			out[target] = s
		}
		return s
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			switch name {
			case "servingprobe_requests_total":
				if s := get(m); s != nil {
					s.requests[label(m, "outcome")] += m.GetCounter().GetValue()
				}
			case "servingprobe_time_to_first_token_seconds":
				if s := get(m); s != nil {
					s.ttft = m.GetHistogram()
				}
			case "servingprobe_inter_token_latency_seconds":
				if s := get(m); s != nil {
					s.itl = m.GetHistogram()
				}
			case "servingprobe_time_per_output_token_seconds":
				if s := get(m); s != nil {
					s.tpot = m.GetHistogram()
				}
			case "servingprobe_e2e_request_latency_seconds":
				if s := get(m); s != nil {
					s.e2e = m.GetHistogram()
				}
			case "servingprobe_prompt_tokens_total":
				if s := get(m); s != nil {
					s.promptTokens = m.GetCounter().GetValue()
				}
			case "servingprobe_generation_tokens_total":
				if s := get(m); s != nil {
					s.genTokens = m.GetCounter().GetValue()
				}
			case "servingprobe_target_info":
				if s := get(m); s != nil {
					s.tokenSource = label(m, "token_source")
				}
			}
		}
	}
	return out
}

// perRequest returns the daemon's view of one request of s, given that
// all its n successful requests were the same replayed stream, or an
// error if the series are not (yet) consistent with n such requests.
func (s *daemonSeries) perRequest() (view, int, error) {
	n := s.requests[string(prober.OutcomeSuccess)]
	for oc, c := range s.requests {
		if oc != string(prober.OutcomeSuccess) && c > 0 {
			return view{}, 0, fmt.Errorf("%v requests failed with outcome %s", c, oc)
		}
	}
	if n < 1 || s.ttft == nil || s.itl == nil || s.tpot == nil || s.e2e == nil {
		return view{}, 0, fmt.Errorf("no successful request yet")
	}
	// A scrape can fall between the counter and the histograms of one
	// request; the caller scrapes again.
	if float64(s.ttft.GetSampleCount()) != n || float64(s.e2e.GetSampleCount()) != n {
		return view{}, 0, fmt.Errorf("%v successes, but %d TTFT and %d E2E samples", n, s.ttft.GetSampleCount(), s.e2e.GetSampleCount())
	}
	itlN := float64(s.itl.GetSampleCount()) / n
	out := s.genTokens / n
	in := s.promptTokens / n
	if itlN != math.Trunc(itlN) || out != math.Trunc(out) || in != math.Trunc(in) {
		return view{}, 0, fmt.Errorf("%v identical requests gave %d ITL samples, %v output and %v input tokens: not a multiple", n, s.itl.GetSampleCount(), s.genTokens, s.promptTokens)
	}
	v := view{
		TTFT: s.ttft.GetSampleSum() / n, TPOT: -1,
		ITLCount: int(itlN), ITLSum: s.itl.GetSampleSum() / n,
		In: int(in), Out: int(out), Source: s.tokenSource,
	}
	switch c := float64(s.tpot.GetSampleCount()); c {
	case n:
		v.TPOT = s.tpot.GetSampleSum() / n
	case 0:
	default:
		return view{}, 0, fmt.Errorf("%v successes, but %v TPOT samples", n, c)
	}
	return v, int(n), nil
}

// checkBuckets checks that a histogram holding the samples of one request
// has exactly the bucket counts of the surface's list of samples: the
// daemon saw the same values, not just the same sum.
func checkBuckets(t *testing.T, what string, h *dto.Histogram, samples []float64) {
	t.Helper()
	for _, b := range h.GetBucket() {
		want := 0
		for _, x := range samples {
			if x <= b.GetUpperBound() {
				want++
			}
		}
		if got := b.GetCumulativeCount(); got != uint64(want) {
			t.Errorf("%s: bucket le=%g holds %d samples, the list has %d ≤ it (%v)", what, b.GetUpperBound(), got, want, samples)
		}
	}
}

// sameFloat reports whether a and b agree to float precision: two sums of
// the same values in another order may differ in the last bits.
func sameFloat(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// TestSurfacesExact feeds one exactly timed Result per transcript to the
// code of the three surfaces and requires the same TTFT, per-token ITL
// list, TPOT and token counts from all of them.
func TestSurfacesExact(t *testing.T) {
	tok := qwen3(t)
	for _, tr := range successTranscripts(t) {
		t.Run(tr.id(), func(t *testing.T) {
			res := replayExact(t, tr)

			// Surface 1: `servingprobe probe --json`.
			var pj bytes.Buffer
			if err := writeProbeJSON(&pj, res); err != nil {
				t.Fatal(err)
			}
			probe := probeView(t, pj.Bytes())

			// Surface 2: the bench JSONL record (surfaceBenchRecord).
			bv := benchJSONLView(t, surfaceBenchRecord(t, tr.backend, tok, res))

			// Surface 3: the daemon's metrics, on a fresh registry.
			reg := prometheus.NewRegistry()
			m := exporter.NewMetrics(reg)
			m.SetTargets([]exporter.TargetSeries{{Name: res.Target, Backend: tr.backend, Model: "m", Modules: []string{res.Module}}})
			m.Observer(exporter.ModeProbe).Observe(res)
			fams, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*dto.MetricFamily{}
			for _, mf := range fams {
				byName[mf.GetName()] = mf
			}
			ds := daemonTargets(t, byName)[res.Target]
			if ds == nil {
				t.Fatalf("no series of target %s", res.Target)
			}
			dv, n, err := ds.perRequest()
			if err != nil || n != 1 {
				t.Fatalf("daemon series: %v (%d requests), want one success", err, n)
			}

			// TTFT: one value, converted once: equal to the bit.
			if probe.TTFT != bv.TTFT || probe.TTFT != dv.TTFT {
				t.Errorf("TTFT: probe %v s, bench ttfts[0] %v s, daemon histogram %v s; want one value", probe.TTFT, bv.TTFT, dv.TTFT)
			}
			// Time to the first answer token: the probe's value is the one
			// observation of the daemon's histogram, and a stream that
			// reasoned first answers after its first token. The probe
			// shows it only for a stream that reasoned; for the others the
			// histogram holds their TTFT (docs/metrics.md).
			var pa struct {
				TTFAT      *float64   `json:"ttfat_seconds"`
				AnswerTPOT *float64   `json:"answer_tpot_seconds"`
				AnswerITL  *[]float64 `json:"answer_itl_seconds"`
			}
			if err := json.Unmarshal(pj.Bytes(), &pa); err != nil {
				t.Fatal(err)
			}
			var ttfatCount uint64
			var ttfatSum float64
			for _, mt := range byName["servingprobe_time_to_first_answer_token_seconds"].GetMetric() {
				ttfatCount += mt.GetHistogram().GetSampleCount()
				ttfatSum += mt.GetHistogram().GetSampleSum()
			}
			switch {
			case pa.TTFAT == nil && (ttfatCount != 1 || ttfatSum != probe.TTFT):
				t.Errorf("TTFAT of a stream without reasoning: daemon histogram %d observations summing to %v s, want its TTFT %v s", ttfatCount, ttfatSum, probe.TTFT)
			case pa.TTFAT != nil && (ttfatCount != 1 || ttfatSum != *pa.TTFAT):
				t.Errorf("TTFAT: probe %v s, daemon histogram %d observations summing to %v s; want one value", *pa.TTFAT, ttfatCount, ttfatSum)
			case pa.TTFAT != nil && strings.Contains(tr.id(), "reasoning") && !(*pa.TTFAT > probe.TTFT):
				t.Errorf("TTFAT %v s of a reasoning stream is not after its TTFT %v s", *pa.TTFAT, probe.TTFT)
			}
			// The answer phase: the daemon's answer histograms hold the
			// probe's answer_itl_seconds and answer_tpot_seconds, or, for
			// a stream without reasoning, its ITL list and TPOT.
			answerITLs, answerTPOT := probe.ITLs, probe.TPOT
			if pa.TTFAT != nil {
				answerITLs, answerTPOT = nil, -1
				if pa.AnswerITL != nil {
					answerITLs = *pa.AnswerITL
				}
				if pa.AnswerTPOT != nil {
					answerTPOT = *pa.AnswerTPOT
				}
			}
			var aITL *dto.Histogram
			var aTPOTCount uint64
			var aTPOTSum float64
			for _, mt := range byName["servingprobe_answer_inter_token_latency_seconds"].GetMetric() {
				aITL = mt.GetHistogram()
			}
			for _, mt := range byName["servingprobe_answer_time_per_output_token_seconds"].GetMetric() {
				aTPOTCount += mt.GetHistogram().GetSampleCount()
				aTPOTSum += mt.GetHistogram().GetSampleSum()
			}
			var aSum float64
			for _, v := range answerITLs {
				aSum += v
			}
			if aITL.GetSampleCount() != uint64(len(answerITLs)) || !sameFloat(aITL.GetSampleSum(), aSum) {
				t.Errorf("answer ITL: daemon %d samples summing to %v s, probe %d summing to %v s", aITL.GetSampleCount(), aITL.GetSampleSum(), len(answerITLs), aSum)
			}
			checkBuckets(t, "daemon answer ITL histogram", aITL, answerITLs)
			if (answerTPOT < 0) != (aTPOTCount == 0) || answerTPOT >= 0 && (aTPOTCount != 1 || aTPOTSum != answerTPOT) {
				t.Errorf("answer TPOT: probe %v s, daemon histogram %d observations summing to %v s", answerTPOT, aTPOTCount, aTPOTSum)
			}
			// Per-token ITL: the same list from the probe and the JSONL;
			// the daemon's histogram has its count, sum and buckets.
			if diff := cmp.Diff(probe.ITLs, bv.ITLs); diff != "" {
				t.Errorf("ITL list: probe itl_seconds vs bench itls[0] (-probe +bench):\n%s", diff)
			}
			if dv.ITLCount != probe.ITLCount || !sameFloat(dv.ITLSum, probe.ITLSum) {
				t.Errorf("ITL: daemon %d samples summing to %v s, probe %d summing to %v s", dv.ITLCount, dv.ITLSum, probe.ITLCount, probe.ITLSum)
			}
			checkBuckets(t, "daemon ITL histogram", ds.itl, probe.ITLs)
			// TPOT: the JSONL has it in ms (×1000, /1000 back).
			if probe.TPOT != dv.TPOT || !sameFloat(probe.TPOT, bv.TPOT) && !(probe.TPOT < 0 && bv.TPOT == 0) {
				t.Errorf("TPOT: probe %v s, bench mean_tpot_ms/1000 %v s, daemon %v s", probe.TPOT, bv.TPOT, dv.TPOT)
			}
			// Token counts.
			if probe.Out != bv.Out || probe.Out != dv.Out {
				t.Errorf("output tokens: probe %d, bench output_lens[0] %d, daemon %d", probe.Out, bv.Out, dv.Out)
			}
			if probe.In != bv.In || probe.In != dv.In {
				t.Errorf("input tokens: probe %d, bench input_lens[0] %d, daemon %d", probe.In, bv.In, dv.In)
			}
			// Where the output count came from: the probe's
			// output_tokens_source and the daemon's target_info
			// token_source (the JSONL has no per-request source).
			if probe.Source != dv.Source {
				t.Errorf("output token source: probe %q, daemon servingprobe_target_info token_source %q", probe.Source, dv.Source)
			}
			// The per-token samples of one request are its output tokens
			// minus those of the first event, which are its TTFT.
			if want := probe.Out - res.Samples().FirstTokens; probe.ITLCount != want {
				t.Errorf("%d per-token ITL samples for %d output tokens (%d in the first event), want %d", probe.ITLCount, probe.Out, res.Samples().FirstTokens, want)
			}
		})
	}
}

// loopbackCases are the transcripts run over real sockets through the
// real commands: every backend, a stream without a server count and one
// with, and sglang's 0-token event. The exact test covers the others;
// these prove that the commands and the daemon are wired to the same code.
var loopbackCases = []string{
	"vllm/success", "vllm/usage_only_final", "vllm/multi_token",
	"vllm-chat/success", "vllm-chat/usage_only_final",
	"sglang/success", "sglang/zero_token_events", "sglang/held_back_text",
	"trt/success",
	"truss/success", "truss/usage_only_final",
}

// replayServer serves tr over loopback HTTP: every generation request
// gets the transcript replayed with the golden timing, and the GETs the
// bench sends first (the ready check on /v1/models, or the base URL for
// trt) get a model list.
func replayServer(t *testing.T, tr transcript) string {
	t.Helper()
	replay := (&llmtest.Transport{Scripts: []llmtest.Script{tr.script()}}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			replay.ServeHTTP(w, r)
		case r.URL.Path == "/" || r.URL.Path == "/v1/models":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
		default: // /server_info and the like: not served
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSurfacesLoopback runs `servingprobe probe --json`, `servingprobe
// bench --output-details` and `servingprobe serve` against loopback
// servers replaying the transcripts. Timings over real sockets vary, so
// counts are compared exactly and timings against the script only: each
// TTFT is at least the scripted 100 ms, each ITL sample non-negative, and
// TTFT plus the per-token samples of a request reach at least the scripted
// time of its last token-bearing event. No upper bound on a wall-clock
// duration is asserted.
func TestSurfacesLoopback(t *testing.T) {
	all := successTranscripts(t)
	var cases []transcript
	for _, id := range loopbackCases {
		i := slices.IndexFunc(all, func(tr transcript) bool { return tr.id() == id })
		if i < 0 {
			t.Fatalf("loopback case %s is not a successful transcript", id)
		}
		cases = append(cases, all[i])
	}

	// The exact replay gives what every surface must count, and the
	// scripted span between the first and last token-bearing events.
	type expect struct {
		itlCount, out, in int
		inStated          bool // the server states the input count
		span              float64
		url               string
	}
	want := map[string]*expect{}
	var cfg strings.Builder
	cfg.WriteString("targets:\n")
	for _, tr := range cases {
		res := replayExact(t, tr)
		e := &expect{itlCount: len(res.AppendITLs(nil, false)), out: res.OutputTokens, in: res.InputTokens, url: replayServer(t, tr)}
		switch res.InputTokensSource {
		case prober.TokenSourceUsage, prober.TokenSourceMetaInfo:
			e.inStated = true
		}
		last := res.Events[0].At
		for _, ev := range res.Events {
			if ev.Tokens > 0 {
				last = ev.At
			}
		}
		e.span = last.Sub(res.Events[0].At).Seconds()
		want[tr.id()] = e
		fmt.Fprintf(&cfg, "  - name: %q\n    url: %s\n    backend: %s\n    model: m\n    modules: [fixed]\n    interval: 1s\n    timeout: 10s\n",
			daemonTarget(tr), e.url, tr.backend)
	}
	cfg.WriteString("modules:\n  fixed:\n    dataset: fixed\n    prompt: \"" + surfPrompt + "\"\n    output_len: 4\n")
	cfgFile := filepath.Join(t.TempDir(), "servingprobe.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startServe(t, "serve", "--config.file="+cfgFile, "--web.listen-address="+addr)

	// The probe and the bench of every case, in parallel: most of their
	// time is the bench's fixed one-second pause after warmup.
	var mu sync.Mutex
	probes := map[string]view{}
	t.Run("commands", func(t *testing.T) {
		for _, tr := range cases {
			e := want[tr.id()]
			t.Run(tr.id(), func(t *testing.T) {
				t.Parallel()
				code, stdout, stderr := runCLI(t, "probe", "--json", "--url", e.url, "--backend", tr.backend, "--model", "m",
					"--prompt", surfPrompt, "--max-tokens", "4")
				if code != 0 {
					t.Fatalf("probe exited %d\n%s\n%s", code, stdout, stderr)
				}
				pv := probeView(t, []byte(stdout))
				out := filepath.Join(t.TempDir(), "out.jsonl")
				code, stdout, stderr = runCLI(t, "bench", "--backend", tr.backend, "--base-url", e.url, "--model", "m",
					"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
					"--random-input-len", "8", "--random-output-len", "4", "--num-prompts", "1",
					"--output-file", out, "--output-details", "--disable-tqdm", "--ready-check-timeout-sec", "10")
				if code != 0 {
					t.Fatalf("bench exited %d\n%s\n%s", code, stdout, stderr)
				}
				line, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				bv := benchJSONLView(t, line)
				for _, s := range []struct {
					name string
					v    view
				}{{"probe", pv}, {"bench", bv}} {
					checkLoopback(t, s.name, s.v, e.itlCount, e.out, e.span)
					for i, x := range s.v.ITLs {
						if x < 0 {
							t.Errorf("%s: ITL sample %d is %v s, negative", s.name, i, x)
						}
					}
				}
				if e.inStated && (pv.In != e.in || bv.In != e.in) {
					t.Errorf("input tokens: probe %d, bench input_lens[0] %d, the server stated %d", pv.In, bv.In, e.in)
				}
				mu.Lock()
				probes[tr.id()] = pv
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}

	// The daemon: every target has probed at least once. All its requests
	// replay the same stream, so each series divided by the number of
	// successes is one request's value.
	c := client{t: t, base: "http://" + addr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := c.do("GET", "/metrics")
		var views map[string]view
		var notYet []string
		if code == http.StatusOK {
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
			if err != nil {
				t.Fatalf("/metrics does not parse: %v", err)
			}
			targets := daemonTargets(t, fams)
			views = map[string]view{}
			for _, tr := range cases {
				s := targets[daemonTarget(tr)]
				if s == nil {
					notYet = append(notYet, tr.id()+": no series")
					continue
				}
				v, _, err := s.perRequest()
				if err != nil {
					notYet = append(notYet, tr.id()+": "+err.Error())
					continue
				}
				views[tr.id()] = v
			}
		} else {
			notYet = append(notYet, fmt.Sprintf("/metrics status %d", code))
		}
		if len(notYet) == 0 {
			for _, tr := range cases {
				t.Run("daemon/"+tr.id(), func(t *testing.T) {
					e, dv, pv := want[tr.id()], views[tr.id()], probes[tr.id()]
					checkLoopback(t, "daemon", dv, e.itlCount, e.out, e.span)
					if e.inStated && dv.In != e.in {
						t.Errorf("daemon: %d input tokens per request, the server stated %d", dv.In, e.in)
					}
					// The probe and the daemon send the same prompt to the
					// same stream, so they must count it alike, and name
					// the same source for the output count.
					if dv.Source != pv.Source {
						t.Errorf("output token source: probe %q, daemon target_info token_source %q", pv.Source, dv.Source)
					}
					if dv.In != pv.In {
						t.Errorf("input tokens of the prompt %q: probe %d, daemon %d", surfPrompt, pv.In, dv.In)
					}
					if dv.TPOT < 0 != (pv.TPOT < 0) {
						t.Errorf("TPOT defined: daemon %v, probe %v", dv.TPOT >= 0, pv.TPOT >= 0)
					}
				})
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon series not ready after 30 s:\n%s", strings.Join(notYet, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// daemonTarget names the daemon's target for tr.
func daemonTarget(tr transcript) string { return strings.ReplaceAll(tr.id(), "/", "-") }

// checkLoopback checks one surface's view of a loopback request against
// the script: exact counts, timings bounded below only.
func checkLoopback(t *testing.T, surface string, v view, itlCount, out int, span float64) {
	t.Helper()
	if v.ITLCount != itlCount {
		t.Errorf("%s: %d per-token ITL samples, the stream has %d", surface, v.ITLCount, itlCount)
	}
	if v.Out != out {
		t.Errorf("%s: %d output tokens, the stream has %d", surface, v.Out, out)
	}
	if v.TTFT < surfFirst.Seconds() {
		t.Errorf("%s: TTFT %v s, below the scripted %v", surface, v.TTFT, surfFirst)
	}
	// The server writes the last token-bearing event at least 100 ms +
	// span after it got the request, and nothing arrives before it is
	// written, so TTFT + the ITL sum (the last token-bearing event − Sent)
	// is at least that. The ITL sum alone is not bounded by the span: a
	// first event read late (a busy machine) shortens it, as it did here
	// once by 0.8 ms.
	if got, min := v.TTFT+v.ITLSum, surfFirst.Seconds()+span; got < min {
		t.Errorf("%s: TTFT %v s + per-token ITL sum %v s = %v s, below the scripted %v s to the last token-bearing event", surface, v.TTFT, v.ITLSum, got, min)
	}
}

// surfaceBenchRecord is the bench JSONL record of a one-request run of res,
// with the Params the CLI derives from its flags and the record it
// appends. The dataset row is built as the datasets package builds one,
// its length counted by tok.
func surfaceBenchRecord(t *testing.T, backend string, tok *tokenizer.Tokenizer, res prober.Result) []byte {
	t.Helper()
	f, err := parseBenchFlags(t, "--backend", backend, "--base-url", "http://llm.test", "--model", "m",
		"--dataset-name", "random", "--num-prompts", "1", "--output-details")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := f.benchSpec(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	acc := bench.NewAccumulator(spec.RunParams())
	ids, err := tok.Encode(surfPrompt, false)
	if err != nil {
		t.Fatal(err)
	}
	acc.Add(0, res, datasets.Prompt{Text: surfPrompt, PromptLen: len(ids), OutputLen: 4})
	sum, err := acc.Summary(res.End.Sub(res.Sent))
	if err != nil {
		t.Fatal(err)
	}
	line, err := sum.Record(bench.JSONOptions{Strict: f.strictJSON, Details: f.outputDetails})
	if err != nil {
		t.Fatal(err)
	}
	return line
}
