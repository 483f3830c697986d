package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/servingprobe/servingprobe/bench"
)

// TestAnswerPhaseProbeBench: for every recorded stream that reasoned,
// `servingprobe probe --json` and the bench's JSONL record of that one
// request give the same answer phase to the bit: the time to the first
// answer token, the answer's TPOT, and the answer ITL (the record's mean,
// median and P99 are NumPy's over the probe's answer_itl_seconds).
func TestAnswerPhaseProbeBench(t *testing.T) {
	seen := 0
	for _, tr := range successTranscripts(t) {
		res := replayExact(t, tr)
		if res.ReasoningTokensSource == "" {
			continue
		}
		seen++
		t.Run(tr.id(), func(t *testing.T) {
			var pj bytes.Buffer
			if err := writeProbeJSON(&pj, res); err != nil {
				t.Fatal(err)
			}
			var probe struct {
				TTFAT      *float64   `json:"ttfat_seconds"`
				AnswerTPOT *float64   `json:"answer_tpot_seconds"`
				AnswerITL  *[]float64 `json:"answer_itl_seconds"`
			}
			if err := json.Unmarshal(pj.Bytes(), &probe); err != nil {
				t.Fatal(err)
			}
			if probe.TTFAT == nil || probe.AnswerITL == nil {
				t.Fatalf("probe --json of a reasoning stream lacks its answer phase: %s", pj.Bytes())
			}
			if want := res.AppendAnswerITLs(nil, false); len(*probe.AnswerITL) != len(want) {
				t.Fatalf("probe --json answer_itl_seconds %v, prober's answer samples %v", *probe.AnswerITL, want)
			}

			// No Infinity for encoding/json.
			line := bytes.ReplaceAll(surfaceBenchRecord(t, tr.backend, qwen3(t), res), []byte(": Infinity"), []byte(`: "Infinity"`))
			var rec struct {
				SP map[string]json.RawMessage `json:"servingprobe"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatal(err)
			}
			st := bench.ComputeStats(*probe.AnswerITL) // in ms
			for key, want := range map[string]*float64{
				"mean_ttfat_ms":        ms(probe.TTFAT),
				"mean_answer_tpot_ms":  ms(probe.AnswerTPOT),
				"mean_answer_itl_ms":   &st.Mean,
				"median_answer_itl_ms": &st.Median,
				"p99_answer_itl_ms":    &st.P99,
			} {
				var got *float64
				if raw, ok := rec.SP[key]; ok {
					if err := json.Unmarshal(raw, &got); err != nil {
						t.Fatalf("%s: %v", key, err)
					}
				}
				if want == nil {
					want = new(float64) // the bench's empty list is 0
				}
				if got == nil || *got != *want {
					t.Errorf("bench record %s = %v, probe --json gives %v", key, deref(got), *want)
				}
			}
		})
	}
	if seen < 4 {
		t.Errorf("only %d recorded streams reasoned; the test needs the vLLM, sglang, Responses and Anthropic ones", seen)
	}
}

func ms(s *float64) *float64 {
	if s == nil {
		return nil
	}
	v := *s * 1000
	return &v
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
