package servermetrics

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEngineFixtures reads each engine's fixture (written from its
// source; each file says which) and checks which kinds it maps to, the
// values read, the engine the report names and the families it skips.
// A fixture read at the start of a run from an empty one gives the
// deltas below.
func TestEngineFixtures(t *testing.T) {
	for _, tc := range []struct {
		file      string
		engine    string
		latencies map[Kind]string  // kind: metric read
		counters  map[Kind]float64 // kind: the run's delta
		gauges    map[Kind]float64 // kind: the value read
		unknown   []string
		hitRate   float64 // NaN: none
	}{
		{
			file: "trtllm.txt", engine: "trtllm",
			latencies: map[Kind]string{
				TTFT: "trtllm_time_to_first_token_seconds", Queue: "trtllm_request_queue_time_seconds",
				Prefill: "trtllm_request_prefill_time_seconds", Decode: "trtllm_request_decode_time_seconds",
				E2E: "trtllm_e2e_request_latency_seconds", PerToken: "trtllm_time_per_output_token_seconds",
			},
			counters: map[Kind]float64{PromptTokens: 400, GenerationTokens: 64, CachedTokens: 128},
			gauges:   map[Kind]float64{Running: 2, Waiting: 1, KVUsage: 0.125},
			unknown:  []string{"trtllm_kv_cache_hit_rate"},
			hitRate:  128.0 / 400,
		},
		{
			file: "dynamo.txt", engine: "dynamo",
			latencies: map[Kind]string{
				TTFT: "dynamo_frontend_time_to_first_token_seconds", E2E: "dynamo_frontend_request_duration_seconds",
				PerToken: "dynamo_frontend_inter_token_latency_seconds",
			},
			// Prompt and cached tokens from the per-request histograms' sums.
			counters: map[Kind]float64{PromptTokens: 1500, GenerationTokens: 160, CachedTokens: 1024},
			gauges:   map[Kind]float64{Running: 4, Waiting: 1},
			unknown: []string{
				"dynamo_frontend_disconnected_clients", "dynamo_frontend_model_context_length",
				"dynamo_frontend_output_sequence_tokens",
			},
			hitRate: 1024.0 / 1500,
		},
		{
			file: "llamacpp.txt", engine: "llamacpp",
			counters: map[Kind]float64{PromptTokens: 58, GenerationTokens: 640},
			gauges:   map[Kind]float64{Running: 1, Waiting: 0},
			unknown: []string{
				"llamacpp:n_busy_slots_per_decode", "llamacpp:n_decode_total",
				"llamacpp:n_tokens_max", "llamacpp:predicted_tokens_seconds", "llamacpp:prompt_seconds_total",
				"llamacpp:prompt_tokens_seconds", "llamacpp:tokens_predicted_seconds_total",
			},
			// No cached-token counter: no hit rate.
			hitRate: math.NaN(),
		},
		{
			file: "llmd.txt", engine: "vllm",
			latencies: map[Kind]string{
				TTFT: "vllm:time_to_first_token_seconds", Queue: "vllm:request_queue_time_seconds",
				E2E: "vllm:e2e_request_latency_seconds", PerToken: "vllm:inter_token_latency_seconds",
			},
			counters: map[Kind]float64{PromptTokens: 300, GenerationTokens: 48},
			gauges:   map[Kind]float64{Running: 2, Waiting: 1, KVUsage: 0.5},
			unknown:  []string{"vllm:request_inference_time_seconds"},
			hitRate:  math.NaN(),
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			end := mustParse(t, "testdata/"+tc.file)
			if diff := cmp.Diff(tc.unknown, end.Unknown); diff != "" {
				t.Errorf("Unknown (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.gauges, GaugeValues(end)); diff != "" {
				t.Errorf("GaugeValues (-want +got):\n%s", diff)
			}
			empty := &Snapshot{Counters: map[string]float64{}, Gauges: map[string]Gauge{}, Histograms: map[string]Histogram{}}
			r := Compute(empty, end, []Sample{{Values: GaugeValues(end)}})
			if r.Engine != tc.engine || r.Missing != "" {
				t.Errorf("engine %q (missing %q), want %q", r.Engine, r.Missing, tc.engine)
			}
			got := map[Kind]string{}
			for _, l := range r.Latencies {
				got[l.Kind] = l.Metric
				h := end.Histograms[l.Metric]
				if l.Count != h.Count || l.Mean != h.Sum/h.Count {
					t.Errorf("%s: count %v mean %v, want %v and %v", l.Metric, l.Count, l.Mean, h.Count, h.Sum/h.Count)
				}
			}
			if len(tc.latencies) == 0 {
				tc.latencies = map[Kind]string{}
			}
			if diff := cmp.Diff(tc.latencies, got); diff != "" {
				t.Errorf("latencies (-want +got):\n%s", diff)
			}
			counts := map[Kind]float64{}
			for _, c := range r.Counters {
				counts[c.Kind] = c.Delta
			}
			if diff := cmp.Diff(tc.counters, counts); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
			if math.IsNaN(tc.hitRate) != math.IsNaN(r.PrefixHitRate) || (!math.IsNaN(tc.hitRate) && math.Abs(r.PrefixHitRate-tc.hitRate) > 1e-12) {
				t.Errorf("prefix hit rate %v, want %v", r.PrefixHitRate, tc.hitRate)
			}
		})
	}
}

// TestNamesTable holds the table to its rules: every name has a kind
// Compute reads and an engine in Engines, sits under its engine's prefix,
// and appears once.
func TestNamesTable(t *testing.T) {
	seen := map[string]bool{}
	kinds := slices.Concat(LatencyKinds, CounterKinds, GaugeKinds)
	for _, n := range Names {
		if seen[n.Metric] {
			t.Errorf("%s listed twice", n.Metric)
		}
		seen[n.Metric] = true
		if !slices.Contains(kinds, n.Kind) {
			t.Errorf("%s: kind %q is not read", n.Metric, n.Kind)
		}
		if !slices.Contains(Engines, n.Engine) {
			t.Errorf("%s: engine %q not in Engines", n.Metric, n.Engine)
		}
		if !hasEnginePrefix(n.Metric) {
			t.Errorf("%s is under no engine prefix", n.Metric)
		}
	}
	for m := range histogramSum {
		if !seen[m] {
			t.Errorf("histogramSum names %s, which Names does not hold", m)
		}
	}
	for m := range excludesCached {
		if !seen[m] {
			t.Errorf("excludesCached names %s, which Names does not hold", m)
		}
	}
}
