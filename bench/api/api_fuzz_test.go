package api

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/config"
)

// fuzzBenchConfig is the config FuzzBenchRequest validates against: one
// target, two modules, small limits.
func fuzzBenchConfig(t testing.TB) *config.Config {
	c, err := config.Parse([]byte(`
targets:
  - name: sim
    url: http://127.0.0.1:1
    backend: vllm-chat
    model: m
    modules: [short, long]
modules:
  short: {dataset: fixed, prompt: "hello", output_len: 4}
  long: {dataset: random, input_len: 512, output_len: 128}
bench:
  max_prompts: 500
  max_request_rate: 20
  max_concurrency: 16
  max_duration: 10m
  max_body_bytes: 2048
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// FuzzBenchRequest feeds arbitrary bodies to the bench API's decoder and
// validator: they must answer with a spec or a 400/413/422, never panic,
// and a spec they accept must be inside every configured limit, so that
// no body can start an unbounded run. Seeds: testdata/fuzz/FuzzBenchRequest.
func FuzzBenchRequest(f *testing.F) {
	for _, s := range []string{
		`{"target":"sim"}`,
		`{"target":"sim","module":"long","num_prompts":500,"request_rate":"inf","max_concurrency":16,"max_duration":"10m"}`,
		`{"target":"sim","request_rate":1e-300,"burstiness":1e6,"random_range_ratio":0,"seed":-9223372036854775808}`,
	} {
		f.Add([]byte(s))
	}
	cfg := fuzzBenchConfig(f)
	lim := cfg.Bench
	f.Fuzz(func(t *testing.T, body []byte) {
		req, aerr := decodeRequest(bytes.NewReader(body), cfg)
		if aerr != nil {
			if aerr.status != 400 && aerr.status != 413 && aerr.status != 422 || aerr.msg == "" {
				t.Fatalf("decode error status %d (%q)", aerr.status, aerr.msg)
			}
			return
		}
		spec := req.Spec
		switch {
		case spec.NumPrompts < 1 || spec.NumPrompts > lim.MaxPrompts:
			t.Fatalf("accepted num_prompts %d", spec.NumPrompts)
		case math.IsNaN(spec.RequestRate) || spec.RequestRate <= 0 || spec.RequestRate > lim.MaxRequestRate:
			t.Fatalf("accepted request_rate %v", spec.RequestRate)
		case spec.MaxConcurrency < 1 || spec.MaxConcurrency > lim.MaxConcurrency:
			t.Fatalf("accepted max_concurrency %d", spec.MaxConcurrency)
		case spec.MaxDuration <= 0 || spec.MaxDuration > time.Duration(lim.MaxDuration):
			t.Fatalf("accepted max_duration %s", spec.MaxDuration)
		case spec.RandomInputLen < 1 || spec.RandomOutputLen < 1 || spec.RandomInputLen > maxTokens || spec.RandomOutputLen > maxTokens:
			t.Fatalf("accepted lengths %d/%d", spec.RandomInputLen, spec.RandomOutputLen)
		case !(spec.RandomRangeRatio >= 0 && spec.RandomRangeRatio <= 1):
			t.Fatalf("accepted range ratio %v", spec.RandomRangeRatio)
		case !(spec.Burstiness > 0) || math.IsInf(spec.Burstiness, 0):
			t.Fatalf("accepted burstiness %v", spec.Burstiness)
		case spec.WarmupRequests < 0 || spec.WarmupRequests > maxWarmup:
			t.Fatalf("accepted warmup %d", spec.WarmupRequests)
		}
		// What is accepted is stored in the results file: it must encode.
		if _, err := json.Marshal(View{ID: "0", Request: req.Body}); err != nil {
			t.Fatalf("accepted request does not encode: %v", err)
		}
	})
}
