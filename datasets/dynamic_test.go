package datasets_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

// writePlan writes a dynamic workload plan into a temporary file.
func writePlan(t *testing.T, plan string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDynamicTwoPhases holds a two-phase plan to sglang's dynamic dataset
// (benchmark/datasets/dynamic.py): a constant phase sends request i at
// i/rate while that is before its duration; the next phase starts where
// the previous one's duration ends; each request carries its phase's
// name, concurrency cap and extra_request_body (the phase's, replacing
// none), and its phase's lengths; a phase's requests take the pool of
// prompt_pool_size prompts in turn.
func TestDynamicTwoPhases(t *testing.T) {
	o := datasets.DefaultOptions()
	o.DynamicWorkloadPath = writePlan(t, `{"prompt_pool_size": 3, "phases": [
		{"name": "warm", "duration": 1, "request_rate": 4, "input_len": 16, "output_len": 4, "max_concurrency": 2,
		 "extra_request_body": {"priority": 1}},
		{"name": "burst", "duration": 0.5, "request_rate": 6, "input_len": 32, "output_len": 8}]}`)
	tok := qwen3(t)
	d, err := datasets.New("dynamic", o, tok)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Generate(1000, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	type req struct {
		At           time.Duration
		Phase        string
		Cap, In, Out int
		Body         map[string]any
	}
	var want []req
	for _, at := range []float64{0, 250, 500, 750} {
		want = append(want, req{ms(at), "warm", 2, 16, 4, map[string]any{"priority": 1.0}})
	}
	for _, ns := range []time.Duration{1000 * time.Millisecond, 1166666667, 1333333333} {
		want = append(want, req{ns, "burst", 0, 32, 8, nil})
	}
	var have []req
	for _, p := range got {
		have = append(have, req{p.Timestamp, p.Phase, p.PhaseMaxConcurrency, p.PromptLen, p.OutputLen, p.ExtraBody})
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if len(got) == 7 {
		if got[3].Text != got[0].Text || got[1].Text == got[0].Text || got[2].Text == got[1].Text {
			t.Error("the warm phase's 4 requests do not take its 3 pooled prompts in turn")
		}
		for _, p := range got {
			if n, err := tok.Count(p.Text); err != nil || n != p.PromptLen {
				t.Errorf("%s prompt %.30q: %d tokens (%v), want its length %d", p.Phase, p.Text, n, err, p.PromptLen)
			}
		}
	}
	// --num-prompts does not cut the plan short, as in sglang.
	if again, _ := d.Generate(2, rand.New(rand.NewPCG(1, 2))); len(again) != 7 {
		t.Errorf("Generate(2) made %d requests, want the plan's 7", len(again))
	}
}

// TestDynamicPoisson: a poisson phase sends one request at its start, then
// after exponential gaps while before its duration; the same seed makes
// the same schedule, and a shared-prefix source makes prompts.
func TestDynamicPoisson(t *testing.T) {
	o := datasets.DefaultOptions()
	o.DynamicWorkloadPath = writePlan(t, `{"arrival_pattern": "poisson", "source": "generated-shared-prefix", "phases": [
		{"name": "p", "duration": 20, "request_rate": 5, "input_len": 64, "output_len": 4}]}`)
	d, err := datasets.New("dynamic", o, qwen3(t))
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Generate(0, rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.Generate(0, rand.New(rand.NewPCG(7, 7)))
	if a[0].Timestamp != 0 || len(a) < 50 || len(a) > 150 {
		t.Fatalf("%d requests, the first at %v; want one at 0 and about 100", len(a), a[0].Timestamp)
	}
	for i, p := range a {
		if p.Timestamp >= 20*time.Second || (i > 0 && p.Timestamp < a[i-1].Timestamp) || p.Text == "" || p.OutputLen != 4 {
			t.Fatalf("request %d at %v (%d out), want in order before 20s, with text", i, p.Timestamp, p.OutputLen)
		}
		if b[i].Timestamp != p.Timestamp {
			t.Fatalf("request %d: %v then %v with the same seed", i, p.Timestamp, b[i].Timestamp)
		}
	}
}

// TestDynamicRefusals: sglang's refusals of a plan, each naming its
// field, and more: an unknown key, and a sharegpt source without a file.
func TestDynamicRefusals(t *testing.T) {
	const phase = `"name": "a", "duration": 1, "request_rate": 1, "input_len": 8, "output_len": 8`
	for _, tc := range []struct{ name, plan, want string }{
		{"not JSON", `{`, "invalid JSON"},
		{"no phases", `{"phases": []}`, "at least one phase"},
		{"phases not a list", `{"phases": {}}`, "invalid JSON"},
		{"pool size", `{"prompt_pool_size": 0, "phases": [{` + phase + `}]}`, "prompt_pool_size must be finite and positive"},
		{"no name", `{"phases": [{"name": " ", "duration": 1, "request_rate": 1, "input_len": 8, "output_len": 8}]}`, "phases[0].name must be a non-empty string"},
		{"duplicate", `{"phases": [{` + phase + `}, {` + phase + `}]}`, `phases[1].name: duplicate phase "a"`},
		{"duration", `{"phases": [{"name": "a", "duration": 0, "request_rate": 1, "input_len": 8, "output_len": 8}]}`, "phases[0].duration must be finite and positive"},
		{"rate", `{"phases": [{"name": "a", "duration": 1, "request_rate": -1, "input_len": 8, "output_len": 8}]}`, "phases[0].request_rate"},
		{"input len", `{"phases": [{"name": "a", "duration": 1, "request_rate": 1, "input_len": 8.5, "output_len": 8}]}`, "phases[0].input_len must be an integer"},
		{"output len", `{"phases": [{"name": "a", "duration": 1, "request_rate": 1, "input_len": 8}]}`, "phases[0].output_len must be finite and positive"},
		{"concurrency", `{"phases": [{` + phase + `, "max_concurrency": 0}]}`, "phases[0].max_concurrency"},
		{"range ratio", `{"phases": [{` + phase + `, "range_ratio": 1.5}]}`, "phases[0].range_ratio must be at most 1"},
		{"body", `{"phases": [{` + phase + `, "extra_request_body": [1]}]}`, "invalid JSON"},
		{"source", `{"phases": [{` + phase + `, "source": "mooncake"}]}`, "phases[0].source must be one of"},
		{"arrival", `{"arrival_pattern": "gamma", "phases": [{` + phase + `}]}`, "phases[0].arrival_pattern must be one of"},
		{"unknown key", `{"phases": [{` + phase + `, "max_concurency": 2}]}`, "unknown field"},
		{"too many", `{"phases": [{"name": "a", "duration": 1e9, "request_rate": 1e9, "input_len": 8, "output_len": 8}]}`, "more than"},
		{"pool too large", `{"prompt_pool_size": 1e20, "phases": [{` + phase + `}]}`, "prompt_pool_size must be at most 4096"},
		{"input too long", `{"phases": [{"name": "a", "duration": 1, "request_rate": 1, "input_len": 1e9, "output_len": 8}]}`, "phases[0].input_len must be at most 1048576 tokens"},
		{"output too long", `{"phases": [{"name": "a", "duration": 1, "request_rate": 1, "input_len": 8, "output_len": 2e6}]}`, "phases[0].output_len must be at most"},
		{"pool of long prompts", `{"prompt_pool_size": 4096, "phases": [{"name": "a", "duration": 1, "request_rate": 1, "input_len": 1048576, "output_len": 8}]}`, "prompt_pool_size × input_len"},
		{"sharegpt without a file", `{"source": "sharegpt", "phases": [{` + phase + `}]}`, "--dataset-path"},
	} {
		o := datasets.DefaultOptions()
		o.DynamicWorkloadPath = writePlan(t, tc.plan)
		if _, err := datasets.New("dynamic", o, qwen3(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	o := datasets.DefaultOptions()
	if _, err := datasets.New("dynamic", o, qwen3(t)); err == nil || !strings.Contains(err.Error(), "--dynamic-workload-path") {
		t.Errorf("no plan: error %v, want one naming --dynamic-workload-path", err)
	}
}
