package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestOllamaAnswerChecks runs the daemon's probes (the probe builder and
// the observer, as serve wires them) against a real ollama serving a tiny
// random-weight model. ollama compiles a JSON schema into a grammar that
// constrains sampling, on its native format field and on its OpenAI
// route's response_format alike, so even random weights answer valid JSON
// and the json_schema check must pass; a regex that random text cannot
// meet must fail, and the failing probes' latency must still be recorded.
func TestOllamaAnswerChecks(t *testing.T) {
	o := llmtest.StartOllama(t)
	if err := o.Healthy(3 * time.Minute); err != nil {
		t.Fatalf("ollama did not answer a first generation: %v", err)
	}
	tok, err := tokenizer.Load("../../tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "json_schema", "json_schema": map[string]any{
		"name": "verdict",
		"schema": map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"ok": map[string]any{"type": "boolean"}},
			"required":             []any{"ok"},
			"additionalProperties": false,
		},
	}}
	modules := map[string]config.Module{
		"json": {Dataset: "fixed", Prompt: "Is the sky blue? Answer in JSON.", InputLen: 1, OutputLen: 48, RangeRatio: 1,
			ResponseFormat: schema, Checks: config.AnswerChecks{JSONSchema: true}},
		// Random weights never write this sentence.
		"golden": {Dataset: "fixed", Prompt: "Say exactly: the tide is high.", InputLen: 1, OutputLen: 8, RangeRatio: 1,
			Checks: config.AnswerChecks{Regex: `^the tide is high\.$`}},
	}
	const probes = 3
	for _, backend := range []string{"ollama-chat", "openai-chat"} {
		t.Run(backend, func(t *testing.T) {
			target := config.DefaultTarget
			target.Name, target.URL, target.Backend, target.Model = "ollama", o.URL, backend, llmtest.OllamaModel
			target.Modules = []string{"json", "golden"}
			target.Timeout = config.DefaultTarget.Timeout
			reg := prometheus.NewRegistry()
			m := exporter.NewMetrics(reg)
			ts := exporter.TargetSeries{Name: target.Name, Backend: backend, Model: target.Model, Modules: target.Modules,
				Checks: map[string][]prober.CheckName{}}
			for _, name := range target.Modules {
				ts.Checks[name] = prober.ModuleCheckNames(modules[name].Checks)
			}
			m.SetTargets([]exporter.TargetSeries{ts})
			obs := m.Observer(exporter.ModeProbe)
			build := prober.NewProbeBuilder(prober.ProbeBuilderOptions{
				Tokenizer: func(string) (datasets.Tokenizer, error) { return tok, nil },
			})
			for _, name := range target.Modules {
				probe, err := build(target, name, modules[name])
				if err != nil {
					t.Fatalf("build %s: %v", name, err)
				}
				for range probes {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					r := probe(ctx, log.NewNopLogger())
					cancel()
					if r.Outcome != prober.OutcomeSuccess {
						t.Fatalf("%s: outcome %s (%s)", name, r.Outcome, r.Err)
					}
					t.Logf("%s: answer %q, checks %+v", name, r.Answer, r.Checks)
					obs.Observe(r)
				}
			}
			got := answerCounts(t, reg)
			for _, tc := range []struct {
				module, check, result string
				want                  float64
			}{
				{"json", "json_schema", "pass", probes},
				{"json", "json_schema", "fail", 0},
				{"golden", "regex", "fail", probes},
				{"golden", "regex", "pass", 0},
			} {
				if v := got[[3]string{tc.module, tc.check, tc.result}]; v != tc.want {
					t.Errorf("answer_checks_total{module=%q,check=%q,result=%q} = %v, want %v", tc.module, tc.check, tc.result, v, tc.want)
				}
			}
			if n := answerLatencySamples(t, reg, "golden"); n != probes {
				t.Errorf("e2e latency samples of the failing module = %d, want %d: a wrong answer was still served", n, probes)
			}
		})
	}
}

func answerCounts(t *testing.T, reg *prometheus.Registry) map[[3]string]float64 {
	t.Helper()
	out := map[[3]string]float64{}
	for _, mf := range answerGather(t, reg, "servingprobe_answer_checks_total") {
		l := answerLabels(mf)
		out[[3]string{l["module"], l["check"], l["result"]}] = mf.GetCounter().GetValue()
	}
	return out
}

func answerLatencySamples(t *testing.T, reg *prometheus.Registry, module string) uint64 {
	t.Helper()
	var n uint64
	for _, mf := range answerGather(t, reg, "servingprobe_e2e_request_latency_seconds") {
		if answerLabels(mf)["module"] == module {
			n += mf.GetHistogram().GetSampleCount()
		}
	}
	return n
}

func answerGather(t *testing.T, reg *prometheus.Registry, name string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func answerLabels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
