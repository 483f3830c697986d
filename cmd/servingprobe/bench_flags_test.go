package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench/runner"
)

// cliOnlyFlags set nothing of the Spec: where the server is (--host and
// --port make its base URL), what to do with the result, how to reach a
// daemon. Adding a bench flag means giving it a key or listing it here.
var cliOnlyFlags = []string{
	"host", "port", "output-file", "output-details", "print-requests", "disable-tqdm", "plot-throughput",
	"report", "strict-json", "baseline", "fail-on", "ab-base-url", "ab-output-file",
	"shard-count", "mooncake-workload",
	// vLLM's output and request flags (bench_vllm.go).
	"save-result", "save-detailed", "append-result", "result-dir", "result-filename", "metadata", "label", "endpoint",
	"logprobs", "tokenizer-mode", "random-batch-size", "output-len", "ignore-eos",
}

// cliOnlyKeys are keys of Spec fields that a flag sets but a bench
// window's body never carries (a daemon's target has its own tls_config).
var cliOnlyKeys = []string{"insecure"}

// apiOnlyKeys are Spec keys that no bench flag sets: none today.
var apiOnlyKeys []string

// TestBenchFlagKeys holds the bench flags and the Spec's JSON keys to one
// another through the one table between them (flagKeys): every flag sets
// a key or is listed as the CLI's own, every key it names is the Spec's,
// and every key of the Spec is set by a flag or listed as the API's own,
// so that a flag added or a key renamed cannot leave the other behind.
func TestBenchFlagKeys(t *testing.T) {
	app := kingpin.New("servingprobe", "")
	cmd := app.Command("bench", "")
	f := addBenchFlags(cmd)
	keys := runner.SpecKeys()

	for _, fl := range cmd.Model().Flags {
		name := fl.Name
		key, ok := f.keys.key[name]
		switch {
		case strings.HasPrefix(name, "remote"):
			if ok {
				t.Errorf("--%s (how to reach a daemon) sets key %q", name, key)
			}
		case slices.Contains(cliOnlyFlags, name):
			if ok {
				t.Errorf("--%s is listed as the CLI's own but sets key %q", name, key)
			}
		case !ok:
			t.Errorf("--%s sets no Spec key and is not listed in cliOnlyFlags", name)
		case !slices.Contains(keys, key) && !slices.Contains(cliOnlyKeys, key):
			t.Errorf("--%s sets %q, which is no key of the Spec's JSON (runner.SpecKeys)", name, key)
		}
	}
	for _, k := range keys {
		_, set := f.keys.flag[k]
		if listed := slices.Contains(apiOnlyKeys, k); set == listed {
			t.Errorf("key %q: set by a flag %v, listed in apiOnlyKeys %v", k, set, listed)
		}
	}
	for name := range f.keys.key {
		if cmd.GetFlag(name) == nil {
			t.Errorf("the table names --%s, which is no bench flag", name)
		}
	}
}

// TestBenchFlagNames: a key set by several flags is named by its first
// (the bench_serving name), and the Spec's problems are named by flag.
func TestBenchFlagNames(t *testing.T) {
	f, err := parseBenchFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, want string }{
		{"num_prompts", "--num-prompts"},
		{"image_count", "--image-count"},                             // not --random-image-num-images
		{"lora_name", "--lora-name"},                                 // not --lora-modules
		{"lora_request_distribution", "--lora-request-distribution"}, // not --lora-assignment
		{"profile.enabled", "--profile"},
		{"profile.prefill_url", "--profile-prefill-url"},
		{"profile.pd_separated", "--pd-separated"},
		{"sweep.auto", "--sweep"},
		{"sweep.request_rates", "--sweep-request-rates"},
		{"sweep.slo_max", "--slo-max"},
		{"sweep.cooldown", "--sweep-cooldown"},
		{"max_duration", "--max-duration"},
		{"no_such_key", "no_such_key"},
	} {
		if got := f.keys.flagName(tc.key); got != tc.want {
			t.Errorf("flagName(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}

	f, err = parseBenchFlags(t, "--num-prompts", "0", "--random-range-ratio", "1.5",
		"--slo", "ttft:p99<=1s", "--slo-precision", "2", "--profile-prefill-url", "http://p")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.benchSpec(noEnv)
	if err == nil {
		t.Fatal("benchSpec() = nil, want the problems")
	}
	for _, w := range []string{"--num-prompts: must be at least 1, got 0", "--random-range-ratio: must be between 0 and 1, got 1.5",
		"--slo-precision: must be in (0, 1), got 2", "--pd-separated: must be set"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("benchSpec() error lacks %q:\n%v", w, err)
		}
	}
}
