package exporter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// nonStreamed is a successful request whose response was not streamed, as
// ollama answers "stream": false with its timings: one JSON object, so the
// only timing the client measures is E2E. Its fields are what Samples
// gives such a result: no first token (TTFT and TPOT undefined).
func nonStreamed() prober.Result {
	sent := time.Unix(1700000000, 0)
	return prober.Result{Target: "t", Module: "mod", Model: "m", Stream: false, Outcome: prober.OutcomeSuccess, HTTPStatus: 200,
		Sent: sent, End: sent.Add(250 * time.Millisecond), OutputTokens: 16, OutputTokensSource: prober.TokenSourceUsage,
		InputTokens: 9, InputTokensSource: prober.TokenSourceUsage, GeneratedText: "a whole answer",
		Server: prober.ServerTimings{TotalDuration: 240 * time.Millisecond, LoadDuration: 2 * time.Millisecond,
			PromptEvalCount: 9, PromptEvalDuration: 30 * time.Millisecond, EvalCount: 16, EvalDuration: 200 * time.Millisecond}}
}

// TestNonStreamedRecordsOnlyE2E: a stream: false module's request puts one
// observation into the E2E histogram and none into TTFT, TPOT or ITL, whose
// quantiles and alerts would otherwise read E2E as a time to first token
// and 0 as a time per token.
func TestNonStreamedRecordsOnlyE2E(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetTargets([]TargetSeries{{Name: "t", Backend: "ollama", Model: "m", Modules: []string{"mod"}}})
	m.Observer(ModeProbe).Observe(nonStreamed())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			if h := mt.GetHistogram(); h != nil {
				got[strings.TrimPrefix(mf.GetName(), "servingprobe_")] += h.GetSampleCount()
			}
		}
	}
	for name, want := range map[string]uint64{
		"time_to_first_token_seconds":          0,
		"time_per_output_token_seconds":        0,
		"inter_token_latency_seconds":          0,
		"time_to_first_answer_token_seconds":   0,
		"answer_time_per_output_token_seconds": 0,
		"answer_inter_token_latency_seconds":   0,
		"e2e_request_latency_seconds":          1,
		"client_queue_seconds":                 0,
	} {
		if c, ok := got[name]; !ok || c != want {
			t.Errorf("%s holds %d observations (present %t), want %d", name, c, ok, want)
		}
	}
}

// TestNonStreamedHistoryAndDebug: the history entry (/api/v1/results, the
// landing page) and /probe?debug=true's result state E2E alone, say the
// response was not streamed, and carry the server's own timings.
func TestNonStreamedHistoryAndDebug(t *testing.T) {
	r := nonStreamed()
	e := entryOf(r, "m", ModeProbe, nil, &config.Redactor{})
	if e.TTFTSeconds != nil || e.TPOTSeconds != nil || e.ITLMedianSeconds != nil || e.E2ESeconds == nil || *e.E2ESeconds != 0.25 || e.Streamed {
		t.Errorf("entry TTFT %v TPOT %v ITL %v E2E %v streamed %t, want only E2E 0.25 s, not streamed",
			e.TTFTSeconds, e.TPOTSeconds, e.ITLMedianSeconds, e.E2ESeconds, e.Streamed)
	}
	js, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"streamed":false`, `"e2e_seconds":0.25`, `"server_timings":{"total_duration":240000000,"load_duration":2000000,"prompt_eval_count":9,"prompt_eval_duration":30000000,"eval_count":16,"eval_duration":200000000}`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("/api/v1/results entry lacks %s: %s", want, js)
		}
	}
	if strings.Contains(string(js), "ttft_seconds") || strings.Contains(string(js), "tpot_seconds") {
		t.Errorf("/api/v1/results entry states a TTFT or TPOT that was not measured: %s", js)
	}
	txt := resultText(r)
	for _, want := range []string{
		"streamed: false\n",
		"ttft: not measured (the response was not streamed)\n",
		"tpot: not measured (the response was not streamed)\n",
		"e2e: 0.25 s\n",
		"server_timings: load 2.00 ms, prompt eval 30.00 ms (9 tokens), eval 200.00 ms (16 tokens, 12.50 ms/token), total 240.00 ms\n",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("/probe?debug=true result lacks %q:\n%s", want, txt)
		}
	}
}

// TestProbeGaugesOnlyWhatWasMeasured: /probe's timing gauges are present
// for what the probe measured and absent for the rest, never a 0 that
// reads as a measurement: a non-streamed response has E2E alone, a
// reasoning stream all three.
func TestProbeGaugesOnlyWhatWasMeasured(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    prober.Result
		want map[string]bool
	}{
		{"not streamed", nonStreamed(), map[string]bool{"ttft": false, "tpot": false, "e2e": true}},
		{"streamed", reasoningResult(), map[string]bool{"ttft": true, "tpot": true, "e2e": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			setProbeMetrics(newProbeMetrics(reg), tc.r)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, mf := range mfs {
				got[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
			}
			sm := tc.r.SampleSeconds()
			for key, name := range map[string]string{"ttft": "servingprobe_probe_time_to_first_token_seconds",
				"tpot": "servingprobe_probe_time_per_output_token_seconds", "e2e": "servingprobe_probe_e2e_request_latency_seconds"} {
				v, ok := got[name]
				if ok != tc.want[key] {
					t.Errorf("%s present %t, want %t", name, ok, tc.want[key])
					continue
				}
				if want := map[string]float64{"ttft": sm.TTFT, "tpot": sm.TPOT, "e2e": sm.E2E}[key]; ok && v != want {
					t.Errorf("%s = %v, the samples' %v", name, v, want)
				}
			}
		})
	}
}
