package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
)

func TestLoadExample(t *testing.T) {
	// The published example must stay loadable; good.yml is its copy.
	for _, path := range []string{"../examples/servingprobe.yml", "testdata/good.yml"} {
		c, err := Load(path)
		if err != nil {
			t.Fatalf("Load(%q) = %v", path, err)
		}
		if got := len(c.Targets); got != 2 {
			t.Fatalf("Load(%q): %d targets, want 2", path, got)
		}
	}
	a, _ := os.ReadFile("../examples/servingprobe.yml")
	b, _ := os.ReadFile("testdata/good.yml")
	if string(a) != string(b) {
		t.Error("testdata/good.yml differs from examples/servingprobe.yml; copy the example over it")
	}
}

func TestLoadAppliesDefaults(t *testing.T) {
	c, err := Load("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	sg, ok := c.Target("sglang-canary")
	if !ok {
		t.Fatal("target sglang-canary missing")
	}
	if got, want := time.Duration(sg.Interval), 30*time.Second; got != want {
		t.Errorf("interval = %v, want %v", got, want)
	}
	// timeout is unset: it falls back to the interval.
	if got, want := sg.EffectiveTimeout(), 30*time.Second; got != want {
		t.Errorf("EffectiveTimeout() = %v, want %v", got, want)
	}
	if sg.MaxResponseBytes != DefaultTarget.MaxResponseBytes || sg.MaxEventBytes != DefaultTarget.MaxEventBytes {
		t.Errorf("size caps = %d/%d, want defaults", sg.MaxResponseBytes, sg.MaxEventBytes)
	}
	// A present http_client_config must not switch HTTP/2 on behind the user's back.
	if sg.HTTPClientConfig.EnableHTTP2 {
		t.Error("enable_http2 defaulted to true; want HTTP/1.1 unless asked")
	}
	if !sg.HTTPClientConfig.FollowRedirects {
		t.Error("follow_redirects defaulted to false")
	}
	m := c.Modules["short_chat"]
	want := DefaultModule
	want.Dataset = "fixed"
	want.Prompt = "Write one sentence about the sea."
	want.OutputLen = 32
	zero := 0.0
	want.Temperature = &zero
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("modules[short_chat] mismatch (-want +got):\n%s", diff)
	}
	if c.Bench.MaxConcurrentRuns != DefaultBench.MaxConcurrentRuns {
		t.Errorf("bench.max_concurrent_runs = %d, want default %d", c.Bench.MaxConcurrentRuns, DefaultBench.MaxConcurrentRuns)
	}
	if got, want := c.Bench.MaxDuration, model.Duration(15*time.Minute); got != want {
		t.Errorf("bench.max_duration = %v, want %v", got, want)
	}
	// Relative credential files resolve against the config's directory.
	v, _ := c.Target("vllm-prod")
	if got := v.HTTPClientConfig.Authorization.CredentialsFile; got != "/etc/servingprobe/vllm-token" {
		t.Errorf("credentials_file = %q", got)
	}
	if c.Checksum == "" {
		t.Error("Checksum not set")
	}
}

func TestLoadBad(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // every line of the error, in order
	}{
		{"bad-unknown-field.yml", []string{
			`config file "testdata/bad-unknown-field.yml": line 6: unknown key "intervall" in a target (allowed: backend, http_client_config, interval, max_event_bytes, max_in_flight, max_response_bytes, model, modules, name, no_server_metrics, no_traceparent, server_metrics, timeout, url)`,
			`line 10: unknown key "max_tokens" in a module (allowed: apply_chat_template, dataset, dataset_path, extra_body, headers, ignore_eos, include_usage, input_len, lora, output_len, prompt, range_ratio, seed, stream, temperature, tokenizer, top_p)`,
		}},
		{"bad-typo-hides-url.yml", []string{
			// The misspelt key does not hide the invalid URL below it.
			`config file "testdata/bad-typo-hides-url.yml": line 5: unknown key "intervall" in a target (allowed: backend, http_client_config, interval, max_event_bytes, max_in_flight, max_response_bytes, model, modules, name, no_server_metrics, no_traceparent, server_metrics, timeout, url)`,
			// prometheus/common's own decoder hides the type's name.
			`line 11: unknown key "usr"`,
			`targets[1].url: scheme must be http or https, got "ftp"`,
		}},
		{"bad-syntax.yml", []string{
			`config file "testdata/bad-syntax.yml": YAML syntax error near line 3: did not find expected '-' indicator`,
			`     3 |     url: http://127.0.0.1:8000`,
			`     4 |    backend: vllm`,
		}},
		{"bad-type.yml", []string{
			// model.Duration's own parser stops the decode, so this one
			// error comes alone; its line is found by the value.
			`config file "testdata/bad-type.yml": line 6: not a valid duration string: "soon"`,
		}},
		{"bad-int.yml", []string{
			`config file "testdata/bad-int.yml": line 6: "many" must be a whole number`,
			`line 9: "many" must be a whole number`,
		}},
		{"bad-many.yml", []string{
			`config file "testdata/bad-many.yml": targets[1].name: duplicate target name "a" (also targets[0])`,
			`targets[1].url: scheme must be http or https, got "ftp"`,
			`targets[1].modules[1]: unknown module "x"`,
			`targets[1].max_in_flight: must be at least 1`,
			`modules["m"].dataset_path: must be set for dataset sharegpt`,
			`modules["m"].range_ratio: must be between 0 and 1`,
			`modules["m"].top_p: must be in (0, 1]`,
			`modules["m"].headers["Authorization"]: credentials belong in the target's http_client_config, where they are kept secret`,
			`bench.max_request_rate: must be positive`,
		}},
		{"bad-server-metrics-type.yml", []string{
			// A scalar where a list belongs (yaml shortens the value).
			`config file "testdata/bad-server-metrics-type.yml": line 6: "http://..." must be a list of URLs`,
		}},
		{"bad-server-metrics.yml", []string{
			`config file "testdata/bad-server-metrics.yml": targets[0].no_server_metrics: excludes server_metrics: set one or the other`,
			`targets[0].server_metrics[0]: scheme must be http or https, got "ftp"`,
			// The duplicate is named with its password hidden.
			`targets[0].server_metrics[2]: duplicate of an earlier entry`,
			`targets[0].server_metrics[3]: invalid URL "<unparseable URL>"`,
			`targets[0].server_metrics[4]: must not be empty`,
			`targets[0].server_metrics[5]: scheme must be http or https, got ""`,
		}},
		{"bad-url-credentials.yml", []string{
			`config file "testdata/bad-url-credentials.yml": targets[0].url: must not contain credentials; use http_client_config.basic_auth`,
		}},
		{"bad-url-query.yml", []string{
			// Neither message quotes the key.
			`config file "testdata/bad-url-query.yml": targets[0].url: must not contain a query or fragment; put an API key in http_client_config (authorization or http_headers)`,
			`targets[1].url: invalid URL "<unparseable URL>"`,
		}},
		{"bad-no-targets.yml", []string{
			`config file "testdata/bad-no-targets.yml": targets: at least one target is required`,
		}},
		{"bad-adhoc.yml", []string{
			`config file "testdata/bad-adhoc.yml": probe_api.adhoc_url_allowlist: must list at least one pattern when allow_adhoc_targets is true`,
		}},
		{"bad-retention.yml", []string{
			`config file "testdata/bad-retention.yml": bench.results_retention_count: must be 0 (no bound) or positive, got -1`,
			`bench.results_retention_bytes: must be 0 (no bound) or positive, got -5`,
		}},
		{"bad-regexp.yml", []string{
			"config file \"testdata/bad-regexp.yml\": line 10: invalid regular expression \"http://(unclosed\": error parsing regexp: missing closing ): `^(?:http://(unclosed)$`",
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tc.file))
			if err == nil {
				t.Fatalf("Load(%q) = nil error, want %q", tc.file, tc.want)
			}
			if diff := cmp.Diff(tc.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("Load(%q) error mismatch (-want +got):\n%s", tc.file, diff)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yml")
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.yml") {
		t.Fatalf("Load(missing) = %v, want an error naming the file", err)
	}
}

func TestRedactedHidesSecrets(t *testing.T) {
	c, err := Load("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "example-not-a-real-password") {
		t.Errorf("Redacted() leaks the basic auth password:\n%s", s)
	}
	if !strings.Contains(s, "password: <secret>") {
		t.Errorf("Redacted() does not show <secret> for the password:\n%s", s)
	}
	// The redacted form must still be a valid config shape (strict decode).
	if _, err := Parse(out); err != nil {
		t.Errorf("Parse(Redacted()) = %v", err)
	}
}

func TestParseInlineBearer(t *testing.T) {
	const secret = "sk-planted-0123456789"
	c, err := Parse([]byte(`
targets:
  - name: a
    url: http://127.0.0.1:8000
    backend: openai-chat
    modules: [m]
    http_client_config:
      authorization:
        credentials: ` + secret + `
modules:
  m: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(c.Targets[0].HTTPClientConfig.Authorization.Credentials); got != secret {
		t.Fatalf("credentials = %q, want the secret kept in memory", got)
	}
	out, _ := c.Redacted()
	if strings.Contains(string(out), secret) {
		t.Errorf("Redacted() leaks the bearer token:\n%s", out)
	}
}

func TestRegexpAnchored(t *testing.T) {
	re, err := NewRegexp(`http://10\.0\.0\.\d+:8000`)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"http://10.0.0.7:8000":              true,
		"http://10.0.0.7:8000.evil.example": false,
		"https://x/?u=http://10.0.0.7:8000": false,
	} {
		if got := re.MatchString(s); got != want {
			t.Errorf("MatchString(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestExtraBodyIsJSON: a nested extra_body decodes to values encoding/json
// can write. yaml.v2 gives map[any]any for a nested mapping, which json
// refused on every request, after check-config had passed the file.
func TestExtraBodyIsJSON(t *testing.T) {
	c, err := Parse([]byte(`targets:
  - name: a
    url: http://127.0.0.1:11434
    backend: openai-chat
    modules: [m]
modules:
  m:
    extra_body:
      options: {num_predict: 16, stop: ["\n", {deep: [1, {x: true}]}]}
      1: one
`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c.Modules["m"].ExtraBody)
	if err != nil {
		t.Fatalf("json.Marshal(extra_body) = %v", err)
	}
	want := `{"1":"one","options":{"num_predict":16,"stop":["\n",{"deep":[1,{"x":true}]}]}}`
	if string(b) != want {
		t.Errorf("extra_body as JSON = %s, want %s", b, want)
	}
}

// TestRedactedShowsEffectiveTimeout: /config shows the timeout a probe
// runs with: a target without one times out at its interval, not at 0s;
// one with its own keeps it. The config itself is left as loaded.
func TestRedactedShowsEffectiveTimeout(t *testing.T) {
	c, err := Parse([]byte(`
targets:
  - name: a
    url: http://127.0.0.1:8000
    backend: openai-chat
    model: m
    interval: 30s
    modules: [short]
  - name: b
    url: http://127.0.0.1:8001
    backend: openai-chat
    model: m
    interval: 30s
    timeout: 10s
    modules: [short]
modules:
  short: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	shown, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(Redacted()) = %v\n%s", err, out)
	}
	for i, want := range []time.Duration{30 * time.Second, 10 * time.Second} {
		if got := time.Duration(shown.Targets[i].Timeout); got != want {
			t.Errorf("target %s: /config shows timeout %v, want %v\n%s", shown.Targets[i].Name, got, want, out)
		}
	}
	if c.Targets[0].Timeout != 0 {
		t.Errorf("Redacted changed the loaded config's timeout to %v", c.Targets[0].Timeout)
	}
}
