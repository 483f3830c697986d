package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/internal/llmtest"
	"github.com/servingprobe/servingprobe/prober"
)

// replayTranscript plays a recorded stream through the real prober in a
// synctest bubble (first event 100 ms after Sent, then one every 10 ms),
// so that every timestamp is exact.
func replayTranscript(t *testing.T, backend, path string) prober.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	be, err := prober.NewBackend(backend)
	if err != nil {
		t.Fatal(err)
	}
	script := llmtest.Script{Chunks: llmtest.SSE(100*time.Millisecond, 10*time.Millisecond, llmtest.SplitEvents(string(b))...)}
	var r prober.Result
	synctest.Test(t, func(t *testing.T) {
		p := &prober.Prober{
			Client:  &http.Client{Transport: &llmtest.Transport{Scripts: []llmtest.Script{script}}},
			Backend: be, Name: backend, Target: "t", Module: "m",
			Options: prober.RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true, IgnoreEOS: true, IncludeUsage: true},
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		r = p.Run(ctx, datasets.Prompt{Text: "What colour is the sky?", PromptLen: 7, OutputLen: 4}, time.Now())
	})
	return r
}

// surfaceView is what one surface reports of a request.
type surfaceView struct {
	TTFT, TPOT       float64 // seconds
	ITLSum           float64
	ITLCount         int
	In, Out          int
	ITL              []float64 // where the surface lists the samples
	HasITLListInView bool
}

// TestSurfacesAgree feeds the same recorded streams, of every backend
// (sglang /generate with an event whose count does not move among them),
// to the three surfaces, `servingprobe probe --json`, a bench record with
// --output-details, and the daemon's metrics, and checks that they report
// the same TTFT, ITL, TPOT and token counts: they compute them in one
// place (prober.Result.Samples and ITLGaps).
func TestSurfacesAgree(t *testing.T) {
	files, err := filepath.Glob("../../prober/testdata/*/*.sse")
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]int{}
	zeroTokenEvent := false
	for _, f := range files {
		backend := filepath.Base(filepath.Dir(f))
		if _, err := prober.LookupBackend(backend); err != nil {
			continue
		}
		if _, err := os.Stat(strings.TrimSuffix(f, ".sse") + ".meta.json"); err == nil {
			continue // an HTTP error or a non-stream answer: not a stream to compare
		}
		r := replayTranscript(t, backend, f)
		if r.Outcome != prober.OutcomeSuccess || len(r.Events) < 2 {
			continue
		}
		for _, e := range r.Events[1:] {
			zeroTokenEvent = zeroTokenEvent || e.Tokens == 0
		}
		name := backend + "/" + filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			views := map[string]surfaceView{
				"probe --json":    probeSurface(t, r),
				"bench JSONL":     benchSurface(t, r),
				"daemon /metrics": metricsSurface(t, r),
			}
			want := views["probe --json"]
			if want.ITLCount == 0 || want.Out == 0 {
				t.Fatalf("probe view is empty: %+v", want)
			}
			for surface, v := range views {
				if math.Abs(v.TTFT-want.TTFT) > 1e-12 || math.Abs(v.TPOT-want.TPOT) > 1e-12 ||
					math.Abs(v.ITLSum-want.ITLSum) > 1e-9 || v.ITLCount != want.ITLCount || v.In != want.In || v.Out != want.Out {
					t.Errorf("%s disagrees with probe --json:\n got %+v\nwant %+v", surface, v, want)
				}
				if v.HasITLListInView && want.HasITLListInView && !equalFloats(v.ITL, want.ITL) {
					t.Errorf("%s ITL samples %v, probe --json %v", surface, v.ITL, want.ITL)
				}
			}
		})
		checked[backend]++
	}
	for _, b := range []string{"vllm", "vllm-chat", "sglang", "trt", "truss"} {
		if checked[b] == 0 {
			t.Errorf("no successful stream of backend %s was compared", b)
		}
	}
	if !zeroTokenEvent {
		t.Error("no compared stream had an event with 0 tokens (sglang /generate text before its count moves)")
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}

func probeSurface(t *testing.T, r prober.Result) surfaceView {
	var buf bytes.Buffer
	if err := writeProbeJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var j struct {
		TTFT *float64  `json:"ttft_seconds"`
		TPOT *float64  `json:"tpot_seconds"`
		ITL  []float64 `json:"itl_seconds"`
		In   int       `json:"input_tokens"`
		Out  int       `json:"output_tokens"`
	}
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	v := surfaceView{ITL: j.ITL, ITLCount: len(j.ITL), In: j.In, Out: j.Out, HasITLListInView: true}
	if j.TTFT != nil {
		v.TTFT = *j.TTFT
	}
	if j.TPOT != nil {
		v.TPOT = *j.TPOT
	}
	for _, x := range j.ITL {
		v.ITLSum += x
	}
	return v
}

func benchSurface(t *testing.T, r prober.Result) surfaceView {
	acc := bench.NewAccumulator(bench.Params{Backend: r.Backend, Details: true, RequestRate: math.Inf(1)})
	acc.Add(0, r, datasets.Prompt{PromptLen: 7, OutputLen: 4})
	sum, err := acc.Summary(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := sum.Record(bench.JSONOptions{Strict: true, Details: true})
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		TTFTs      []float64   `json:"ttfts"`
		ITLs       [][]float64 `json:"itls"`
		InputLens  []int       `json:"input_lens"`
		OutputLens []int       `json:"output_lens"`
		MeanTPOTMS float64     `json:"mean_tpot_ms"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(rec), &j); err != nil {
		t.Fatalf("record: %v\n%s", err, rec)
	}
	v := surfaceView{TTFT: j.TTFTs[0], TPOT: j.MeanTPOTMS / 1000, ITL: j.ITLs[0], ITLCount: len(j.ITLs[0]),
		In: j.InputLens[0], Out: j.OutputLens[0], HasITLListInView: true}
	for _, x := range j.ITLs[0] {
		v.ITLSum += x
	}
	return v
}

func metricsSurface(t *testing.T, r prober.Result) surfaceView {
	reg := prometheus.NewRegistry()
	m := exporter.NewMetrics(reg)
	m.SetTargets([]exporter.TargetSeries{{Name: r.Target, Backend: r.Backend, Model: r.Model, Modules: []string{r.Module}}})
	m.Observer(exporter.ModeProbe).Observe(r)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *dto.Metric {
		for _, mf := range mfs {
			if mf.GetName() == name {
				for _, mt := range mf.GetMetric() {
					return mt
				}
			}
		}
		t.Fatalf("no %s in the registry", name)
		return nil
	}
	itl := get("servingprobe_inter_token_latency_seconds").GetHistogram()
	return surfaceView{
		TTFT:     get("servingprobe_time_to_first_token_seconds").GetHistogram().GetSampleSum(),
		TPOT:     get("servingprobe_time_per_output_token_seconds").GetHistogram().GetSampleSum(),
		ITLSum:   itl.GetSampleSum(),
		ITLCount: int(itl.GetSampleCount()),
		In:       int(get("servingprobe_prompt_tokens_total").GetCounter().GetValue()),
		Out:      int(get("servingprobe_generation_tokens_total").GetCounter().GetValue()),
	}
}
