package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
)

// TestSurfacesReasoningTokens extends TestSurfacesExact to the reasoning
// count: on every recorded stream, replayed once with exact virtual times,
// `servingprobe probe --json`'s reasoning_tokens is the daemon's
// servingprobe_reasoning_tokens_total and the bench record's
// total_reasoning_tokens, its source is target_info's
// reasoning_token_source, and output minus reasoning is the answer count on
// every surface. A stream without reasoning adds 0 to a counter that exists,
// and leaves the source "none".
func TestSurfacesReasoningTokens(t *testing.T) {
	tok := qwen3(t)
	sources := map[string]int{}
	for _, tr := range successTranscripts(t) {
		t.Run(tr.id(), func(t *testing.T) {
			res := replayExact(t, tr)

			// Surface 1: `servingprobe probe --json`.
			var pj bytes.Buffer
			if err := writeProbeJSON(&pj, res); err != nil {
				t.Fatal(err)
			}
			var probe struct {
				Out       int    `json:"output_tokens"`
				Reasoning int    `json:"reasoning_tokens"`
				Source    string `json:"reasoning_tokens_source"`
				Answer    *int   `json:"answer_tokens"`
			}
			if err := json.Unmarshal(pj.Bytes(), &probe); err != nil {
				t.Fatal(err)
			}
			reasoned := probe.Source != ""
			if reasoned != (probe.Answer != nil) {
				t.Fatalf("probe --json: reasoning_tokens_source %q but answer_tokens %v: a request reasons or not", probe.Source, probe.Answer)
			}
			if !reasoned && probe.Reasoning != 0 {
				t.Fatalf("probe --json: %d reasoning tokens without a source", probe.Reasoning)
			}
			sources[probe.Source]++

			// Surface 2: the daemon's counters and target_info.
			reg := prometheus.NewRegistry()
			m := exporter.NewMetrics(reg)
			m.SetTargets([]exporter.TargetSeries{{Name: res.Target, Backend: tr.backend, Model: "m", Modules: []string{res.Module}}})
			m.Observer(exporter.ModeProbe).Observe(res)
			fams, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var reasoningSeries int
			var daemonReasoning, daemonGen float64
			daemonSources := []string{}
			for _, mf := range fams {
				for _, mt := range mf.GetMetric() {
					switch mf.GetName() {
					case "servingprobe_reasoning_tokens_total":
						reasoningSeries++
						daemonReasoning += mt.GetCounter().GetValue()
					case "servingprobe_generation_tokens_total":
						daemonGen += mt.GetCounter().GetValue()
					case "servingprobe_target_info":
						for _, l := range mt.GetLabel() {
							if l.GetName() == "reasoning_token_source" {
								daemonSources = append(daemonSources, l.GetValue())
							}
						}
					}
				}
			}
			if reasoningSeries != 1 {
				t.Errorf("servingprobe_reasoning_tokens_total has %d series, want 1 (pre-created, observed)", reasoningSeries)
			}
			if daemonReasoning != float64(probe.Reasoning) {
				t.Errorf("reasoning tokens: probe --json %d, daemon servingprobe_reasoning_tokens_total %v", probe.Reasoning, daemonReasoning)
			}
			wantSource := probe.Source
			if !reasoned {
				wantSource = "none"
			}
			if len(daemonSources) != 1 || daemonSources[0] != wantSource {
				t.Errorf("reasoning token source: probe --json %q, daemon target_info reasoning_token_source %q, want %q", probe.Source, daemonSources, wantSource)
			}
			wantAnswer := probe.Out
			if probe.Answer != nil {
				wantAnswer = *probe.Answer
			}
			if got := int(daemonGen - daemonReasoning); got != wantAnswer {
				t.Errorf("answer tokens: daemon generation − reasoning %v − %v = %d, probe --json %d", daemonGen, daemonReasoning, got, wantAnswer)
			}

			// Surface 3: the bench record of a one-request run, built as
			// TestSurfacesExact builds it.
			line := bytes.ReplaceAll(surfaceBenchRecord(t, tr.backend, tok, res), []byte(": Infinity"), []byte(`: "Infinity"`))
			var rec struct {
				SP struct {
					Requests  int `json:"reasoning_requests"`
					Counted   int `json:"reasoning_counted_requests"`
					Reasoning int `json:"total_reasoning_tokens"`
					Answer    int `json:"total_answer_tokens"`
				} `json:"servingprobe"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatalf("bench JSONL does not parse: %v\n%s", err, line)
			}
			if rec.SP.Reasoning != probe.Reasoning {
				t.Errorf("reasoning tokens: probe --json %d, bench total_reasoning_tokens %d", probe.Reasoning, rec.SP.Reasoning)
			}
			if reasoned && rec.SP.Answer != wantAnswer {
				t.Errorf("answer tokens: probe --json %d, bench total_answer_tokens %d", wantAnswer, rec.SP.Answer)
			}
			wantCounted := 0
			if probe.Source == string(prober.TokenSourceCounted) {
				wantCounted = 1
			}
			if want := map[bool]int{true: 1}[reasoned]; rec.SP.Requests != want || rec.SP.Counted != wantCounted {
				t.Errorf("bench reasoning_requests %d, reasoning_counted_requests %d; probe --json source %q wants %d and %d",
					rec.SP.Requests, rec.SP.Counted, probe.Source, want, wantCounted)
			}
		})
	}
	// The transcripts must exercise both sources and streams without
	// reasoning, or the test above would prove less than it says.
	for _, src := range []string{"", string(prober.TokenSourceUsage), string(prober.TokenSourceCounted)} {
		if sources[src] == 0 {
			t.Errorf("no successful transcript with reasoning source %q: %v", src, sources)
		}
	}
}
