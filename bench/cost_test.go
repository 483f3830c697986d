package bench

import (
	"bufio"
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/servermetrics"
)

// TestCostEnergy: cost per million tokens is the hour's price x duration
// / tokens x 1e6 (3.6 USD/h over 100 s = 0.1 USD; 0.1 / 50000 input
// tokens x 1e6 = 2.0, 0.1 / 20000 output tokens x 1e6 = 5.0), and the
// table and the JSONL show the same numbers; energy comes from the DCGM
// source and says which method.
func TestCostEnergy(t *testing.T) {
	s := &Summary{Duration: 100, TotalInputTokens: 50000, TotalOutputTokens: 20000, CacheCost: CacheCost{CostPerHour: 3.6},
		Server: []servermetrics.Report{
			{Source: "http://engine/metrics", PrefixHitRate: math.NaN()},
			{Source: "http://dcgm:9400/metrics", Missing: "the endpoint exposes no metric of vLLM or sglang", PrefixHitRate: math.NaN(),
				Energy: &servermetrics.Energy{Method: servermetrics.EnergyPowerEstimate, Joules: 4000, GPUs: 2}},
		}}
	c, ok := s.Cost()
	if !ok || math.Abs(c.PerMillionInputTokens-2) > 1e-12 || math.Abs(c.PerMillionOutputTokens-5) > 1e-12 {
		t.Fatalf("cost %+v, want 2 and 5 per million", c)
	}
	var buf bytes.Buffer
	tw := &tableWriter{w: bufio.NewWriter(&buf)}
	s.writeCostEnergy(tw)
	tw.w.Flush()
	for _, want := range []string{
		"Cost per 1M input tokens (USD):          2.0000",
		"Cost per 1M output tokens (USD):         5.0000",
		"Energy (J):                              4000.00 (estimate: DCGM_FI_DEV_POWER_USAGE integrated over the samples, 2 GPUs)",
		"Energy per output token (J):             0.2000",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table:\n%s\nwant %q", buf.String(), want)
		}
	}
	line, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"energy": {"source": "http://dcgm:9400/metrics", "joules": 4000.0, "joules_per_output_token": 0.2, "method": "power_estimate", "gpus": 2}`,
		`"cost": {"per_hour": 3.6, "per_million_input_tokens": 2.0, "per_million_output_tokens": 5.0}`,
	} {
		if !strings.Contains(string(line), want) {
			t.Errorf("record %s\nwant %s", line, want)
		}
	}
	// No tokens: no figure, said so, null in the JSONL. Two sources and no
	// DCGM one (a prefill and a decode engine, say): no energy at all,
	// neither a section nor a key, rather than a guess that one was meant
	// to be a GPU exporter.
	s.TotalOutputTokens, s.Server[1].Energy = 0, nil
	line, _ = s.Record(JSONOptions{})
	if want := `"per_million_output_tokens": null`; !strings.Contains(string(line), want) {
		t.Errorf("record %s\nwant %s", line, want)
	}
	if strings.Contains(string(line), `"energy"`) {
		t.Errorf("record %s has an energy key without a DCGM source", line)
	}
	buf.Reset()
	s.writeCostEnergy(tw)
	tw.w.Flush()
	if strings.Contains(buf.String(), "Energy") {
		t.Errorf("table without a DCGM source:\n%s\nhas an Energy section", buf.String())
	}
}
