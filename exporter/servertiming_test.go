package exporter

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
)

// vllmStream is a vLLM chat stream whose last chunk carries the usage and
// vLLM's per-request metrics object (PerRequestMetrics in
// vllm/entrypoints/generate/base/protocol.py: time_to_first_token_ms,
// generation_time_ms, queue_time_ms, mean_itl_ms, tokens_per_second), the
// stated TTFT being statedTTFTms.
func vllmStream(statedTTFTms float64) []string {
	return []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"length"}]}`,
		fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2},"metrics":{"time_to_first_token_ms":%v,"generation_time_ms":3.5,"queue_time_ms":1.25,"mean_itl_ms":3.5,"tokens_per_second":571.4}}`, statedTTFTms),
	}
}

// TestServerTTFTHistograms: against a replayed vLLM stream that states
// its TTFT, the server-TTFT histogram holds the server's value and the
// outside-the-server histogram TTFT minus it; the history entry and
// /probe?debug=true state the same values. A stream that states nothing
// leaves both histograms without a series.
func TestServerTTFTHistograms(t *testing.T) {
	const stated = 12.5 // ms; the replay waits longer before its first token
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunks := vllmStream(stated)
		if r.URL.Query().Get("plain") != "" {
			chunks[3] = strings.Replace(chunks[3], `,"metrics":{`, `,"x":{`, 1)
		}
		time.Sleep(20 * time.Millisecond) // the first token comes after the stated TTFT
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	info, err := prober.LookupBackend("vllm-chat")
	if err != nil {
		t.Fatal(err)
	}
	run := func(url string) prober.Result {
		tgt := config.Target{Name: "t", URL: url, Backend: "vllm-chat", Model: "m"}
		p := prober.Prober{Client: srv.Client(), Backend: info.New(), Name: "vllm-chat", Options: prober.ModuleOptions(tgt, config.Module{}), Target: "t", Module: "mod"}
		r := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 2}, time.Time{})
		if r.Outcome != prober.OutcomeSuccess {
			t.Fatalf("probe: %s (%s)", r.Outcome, r.Err)
		}
		return r
	}

	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm-chat", Model: "m", Modules: []string{"mod"}}})
	r := run(srv.URL)
	if r.Server.FirstToken != 12500*time.Microsecond || r.Server.QueueDuration != 1250*time.Microsecond {
		t.Fatalf("server timings read = %+v, want vLLM's TTFT 12.5 ms and queue 1.25 ms", r.Server)
	}
	m.Observer(ModeProbe).Observe(r)
	sm := r.Samples()
	wantServer, wantOutside := 0.0125, sm.TTFT.Seconds()-0.0125
	hist := histogramsOf(t, reg)
	for name, want := range map[string]float64{"servingprobe_server_time_to_first_token_seconds": wantServer,
		"servingprobe_time_to_first_token_outside_server_seconds": wantOutside} {
		h, ok := hist[name]
		if !ok || h.count != 1 || math.Abs(h.sum-want) > 1e-9 {
			t.Errorf("%s = %+v (present %t), want one observation of %v", name, h, ok, want)
		}
	}
	if h := hist["servingprobe_time_to_first_token_seconds"]; math.Abs(h.sum-(hist["servingprobe_server_time_to_first_token_seconds"].sum+hist["servingprobe_time_to_first_token_outside_server_seconds"].sum)) > 1e-9 {
		t.Errorf("TTFT %v is not the server's plus the rest", h.sum)
	}

	e := entryOf(r, "m", ModeProbe, nil, &config.Redactor{})
	if e.ServerTTFTSeconds == nil || e.OutsideServerTTFTSeconds == nil ||
		*e.ServerTTFTSeconds != hist["servingprobe_server_time_to_first_token_seconds"].sum ||
		*e.OutsideServerTTFTSeconds != hist["servingprobe_time_to_first_token_outside_server_seconds"].sum {
		t.Errorf("history server_ttft %v, outside %v: not the histograms' values", e.ServerTTFTSeconds, e.OutsideServerTTFTSeconds)
	}
	txt := resultText(r)
	for _, want := range []string{fmt.Sprintf("server_ttft: %v s\n", wantServer), fmt.Sprintf("outside_server_ttft: %v s\n", *e.OutsideServerTTFTSeconds)} {
		if !strings.Contains(txt, want) {
			t.Errorf("/probe?debug=true lacks %q:\n%s", want, txt)
		}
	}

	// A stream without the object: nothing exported, nothing in the history.
	reg2 := prometheus.NewRegistry()
	m2 := NewMetrics(reg2)
	m2.SetTargets([]TargetSeries{{Name: "t", Backend: "vllm-chat", Model: "m", Modules: []string{"mod"}}})
	plain := run(srv.URL + "/?plain=1")
	m2.Observer(ModeProbe).Observe(plain)
	hist2 := histogramsOf(t, reg2)
	for _, name := range []string{"servingprobe_server_time_to_first_token_seconds", "servingprobe_time_to_first_token_outside_server_seconds"} {
		if h, ok := hist2[name]; ok {
			t.Errorf("%s exported (%+v) for a server that stated nothing", name, h)
		}
	}
	if e := entryOf(plain, "m", ModeProbe, nil, &config.Redactor{}); e.ServerTTFTSeconds != nil || e.OutsideServerTTFTSeconds != nil {
		t.Errorf("history states a server TTFT the server did not")
	}
}

type histSummary struct {
	count uint64
	sum   float64
}

func histogramsOf(t *testing.T, reg *prometheus.Registry) map[string]histSummary {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]histSummary{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			if h := mt.GetHistogram(); h != nil {
				s := out[mf.GetName()]
				s.count += h.GetSampleCount()
				s.sum += h.GetSampleSum()
				out[mf.GetName()] = s
			}
		}
	}
	return out
}

// TestSimulatorStatesItsTiming: with StateMetrics the simulator states,
// in vLLM's shape, the queue time it gave the request (exactly) and a
// TTFT from the request's arrival to its first token's due time, no
// later than that token's flush; the probe splits its TTFT with it.
// Without the option it states nothing, as vLLM by default.
func TestSimulatorStatesItsTiming(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := simulator.DefaultConfig()
		cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 5*time.Millisecond, 0, time.Millisecond, 0
		cfg.StateMetrics = on
		sim, err := simulator.New(cfg, log.NewNopLogger())
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(sim.Handler())
		tgt := config.Target{Name: "t", URL: srv.URL, Backend: "vllm-chat", Model: cfg.Model}
		info, _ := prober.LookupBackend("vllm-chat")
		p := prober.Prober{Client: srv.Client(), Backend: info.New(), Name: "vllm-chat", Options: prober.ModuleOptions(tgt, config.Module{}), Target: "t", Module: "mod"}
		r := p.Run(t.Context(), datasets.Prompt{Text: "hello there", OutputLen: 4}, time.Time{})
		srv.Close()
		if r.Outcome != prober.OutcomeSuccess {
			t.Fatalf("probe: %s (%s)", r.Outcome, r.Err)
		}
		truths := sim.Truths()
		if len(truths) != 1 {
			t.Fatalf("%d truths, want 1", len(truths))
		}
		tr := truths[0]
		sm := r.Samples()
		if !on {
			if r.Server.Stated() || prober.Defined(sm.ServerTTFT) {
				t.Errorf("StateMetrics off: server timings %+v stated", r.Server)
			}
			continue
		}
		var firstChunk time.Time
		for _, c := range tr.Chunks {
			if c.Kind == simulator.ChunkToken {
				firstChunk = c.At
				break
			}
		}
		if r.Server.QueueDuration != tr.Admitted.Sub(tr.Arrived) && !(tr.Admitted.Equal(tr.Arrived) && r.Server.QueueDuration == 0) {
			t.Errorf("stated queue %v, the simulator's %v", r.Server.QueueDuration, tr.Admitted.Sub(tr.Arrived))
		}
		if st := r.Server.FirstToken; st < cfg.TTFT || st > firstChunk.Sub(tr.Arrived) {
			t.Errorf("stated TTFT %v, want between the configured %v and the first token's flush %v", st, cfg.TTFT, firstChunk.Sub(tr.Arrived))
		}
		if sm.ServerTTFT != r.Server.FirstToken || sm.OutsideServerTTFT != sm.TTFT-sm.ServerTTFT {
			t.Errorf("split %v + %v of TTFT %v, want the stated %v and the rest", sm.ServerTTFT, sm.OutsideServerTTFT, sm.TTFT, r.Server.FirstToken)
		}
	}
}
