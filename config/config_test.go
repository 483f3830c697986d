package config

import (
	"encoding/json"
	"fmt"
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
			`config file "testdata/bad-unknown-field.yml": line 6: targets[0].intervall: unknown key (allowed: backend, capacity_check, http_client_config, interval, max_event_bytes, max_in_flight, max_response_bytes, model, modules, name, no_server_metrics, no_traceparent, server_metrics, timeout, url)`,
			`line 10: modules["m"].max_tokens: unknown key (allowed: apply_chat_template, cache_bust, checks, dataset, dataset_path, extra_body, headers, ignore_eos, include_usage, input_len, lora, output_len, prompt, range_ratio, response_format, seed, session_header, stream, temperature, tokenizer, tool_choice, tools, top_p, turn_input_len, turns)`,
		}},
		{"bad-typo-hides-url.yml", []string{
			// The misspelt key does not hide the invalid URL below it.
			`config file "testdata/bad-typo-hides-url.yml": line 5: targets[0].intervall: unknown key (allowed: backend, capacity_check, http_client_config, interval, max_event_bytes, max_in_flight, max_response_bytes, model, modules, name, no_server_metrics, no_traceparent, server_metrics, timeout, url)`,
			`line 8: targets[1].url: scheme must be http or https, got "ftp"`,
			// prometheus/common's types are walked like ours.
			`line 11: targets[1].http_client_config.basic_auth.usr: unknown key (allowed: password, password_file, password_ref, username, username_file, username_ref)`,
		}},
		{"bad-syntax.yml", []string{
			// libyaml names where the construct began (the fault is on
			// line 4); the file's text is never shown.
			`config file "testdata/bad-syntax.yml": line 3: YAML syntax error here or below: did not find expected '-' indicator`,
		}},
		{"bad-secret-syntax.yml", []string{
			// The line the fault is named at holds a token: not shown.
			`config file "testdata/bad-secret-syntax.yml": line 8: YAML syntax error here or below: did not find expected key`,
		}},
		{"bad-type.yml", []string{
			// A duration that does not parse no longer stops the decode.
			`config file "testdata/bad-type.yml": line 6: targets[0].interval: must be a duration such as 30s or 1m, got "soon"`,
			`line 9: modules["m"].output_len: must be a whole number, got "many"`,
		}},
		{"bad-int.yml", []string{
			`config file "testdata/bad-int.yml": line 6: targets[0].max_in_flight: must be a whole number, got "many"`,
			`line 9: modules["m"].output_len: must be a whole number, got "many"`,
		}},
		{"bad-eight.yml", []string{
			// Eight problems: type errors, an unknown key and
			// Validate's, all at once, by line; the /v1 URL is accepted.
			`config file "testdata/bad-eight.yml": line 3: targets[0].url: missing scheme, write http://127.0.0.1:8000`,
			`line 6: targets[0].interval: must be a duration such as 30s or 1m, got "5"`,
			`line 7: targets[0].max_in_flight: must be a whole number, got "lots"`,
			`line 8: targets[1].name: duplicate target name "a" (also targets[0])`,
			`line 11: targets[1].modules[1]: unknown module "x"`,
			`line 12: targets[1].no_traceparent: must be true or false, got "maybe"`,
			`line 13: targets[1].intervall: unknown key (allowed: backend, capacity_check, http_client_config, interval, max_event_bytes, max_in_flight, max_response_bytes, model, modules, name, no_server_metrics, no_traceparent, server_metrics, timeout, url)`,
			`line 17: bench.max_duration: must be a duration such as 30s or 1m, got "forever"`,
		}},
		{"bad-many.yml", []string{
			`config file "testdata/bad-many.yml": line 6: targets[1].name: duplicate target name "a" (also targets[0])`,
			`line 7: targets[1].url: scheme must be http or https, got "ftp"`,
			`line 9: targets[1].modules[1]: unknown module "x"`,
			`line 10: targets[1].max_in_flight: must be at least 1`,
			`line 12: modules["m"].dataset_path: must be set for dataset sharegpt`,
			`line 14: modules["m"].range_ratio: must be between 0 and 1`,
			`line 15: modules["m"].top_p: must be in (0, 1]`,
			`line 17: modules["m"].headers["Authorization"]: credentials belong in the target's http_client_config, where they are kept secret`,
			`line 19: bench.max_request_rate: must be positive`,
		}},
		{"bad-server-metrics-type.yml", []string{
			// A scalar where a list belongs: the URL is not quoted.
			`config file "testdata/bad-server-metrics-type.yml": line 6: targets[0].server_metrics: must be a list of URLs, not a single value`,
		}},
		{"bad-server-metrics.yml", []string{
			`config file "testdata/bad-server-metrics.yml": line 7: targets[0].server_metrics[0]: scheme must be http or https, got "ftp"`,
			// The duplicate is named without its password.
			`line 9: targets[0].server_metrics[2]: duplicate of an earlier entry`,
			`line 10: targets[0].server_metrics[3]: not a valid URL (missing ']' in host)`,
			`line 11: targets[0].server_metrics[4]: must not be empty`,
			`line 12: targets[0].server_metrics[5]: missing scheme and host, write a URL such as http://127.0.0.1:8000`,
			`line 13: targets[0].no_server_metrics: excludes server_metrics: set one or the other`,
		}},
		{"bad-url-credentials.yml", []string{
			`config file "testdata/bad-url-credentials.yml": line 3: targets[0].url: must not contain credentials; use http_client_config.basic_auth`,
		}},
		{"bad-url-query.yml", []string{
			// Neither message quotes the key.
			`config file "testdata/bad-url-query.yml": line 3: targets[0].url: must not contain a query or fragment: paths are appended to a base URL; send an API key as a header (http_client_config)`,
			`line 7: targets[1].url: not a valid URL (missing ']' in host)`,
		}},
		{"bad-no-targets.yml", []string{
			`config file "testdata/bad-no-targets.yml": targets: at least one target is required`,
		}},
		{"bad-adhoc.yml", []string{
			`config file "testdata/bad-adhoc.yml": line 8: probe_api.adhoc_url_allowlist: must list at least one pattern when allow_adhoc_targets is true`,
		}},
		{"bad-capacity-check.yml", []string{
			`config file "testdata/bad-capacity-check.yml": line 6: targets[0].capacity_check.slo: must be set, such as 'ttft:p90<=2s'`,
			"line 7: targets[0].capacity_check.every: must be at least 10m (a check is minutes of load), got 1m",
			`line 8: targets[0].capacity_check.at: want a local time of day as HH:MM, such as "03:00", got "3am"`,
			"line 9: targets[0].capacity_check.budget: must not exceed every (1m), got 10m",
			`line 10: targets[0].capacity_check.module: must be one of the target's modules, got "other"`,
			"line 16: targets[1].capacity_check.every: must be a whole number of days (24h, 48h, ...) when at is set, got 1d12h",
			"line 19: targets[1].capacity_check.evry: unknown key (allowed: at, budget, every, module, slo)",
		}},
		{"bad-retention.yml", []string{
			`config file "testdata/bad-retention.yml": line 9: bench.results_retention_count: must be 0 (no bound) or positive, got -1`,
			`line 10: bench.results_retention_bytes: must be 0 (no bound) or positive, got -5`,
		}},
		{"bad-conversation.yml", []string{
			`config file "testdata/bad-conversation.yml": line 10: modules["conv"].turns: must be between 1 and 8`,
			`line 11: modules["conv"].turn_input_len: must be at least 1`,
			`line 12: modules["conv"].cache_bust: only for single-turn modules: a conversation's first turn always starts with a fresh random prefix`,
			`line 13: modules["conv"].session_header: "x session" is not a valid HTTP header name`,
			`line 16: modules["single"].turns: only used by dataset conversation (dataset is "random")`,
			`line 17: modules["single"].turn_input_len: only used by dataset conversation (dataset is "random")`,
			`line 18: modules["single"].session_header: must not be X-Request-Id, which carries each request's own id`,
			`line 21: modules["ids"].cache_bust: needs a text prompt: dataset random-ids sends token ids`,
			`line 22: modules["ids"].session_header: also set in headers: the session id would replace it`,
		}},
		// The answer checks: config alone checks their shape; the
		// schemas compile with the prober's compiler (ConfigChecks),
		// which TestCheckConfigBadChecks runs.
		{"bad-checks.yml", []string{
			"config file \"testdata/bad-checks.yml\": line 16: modules[\"json\"].checks.regex: invalid regular expression \"([a-z]+\": error parsing regexp: missing closing ): `([a-z]+`",
			`line 23: modules["tools"].tool_choice.function.name: "get_time" is not one of the module's tools (get_weather)`,
			`line 29: modules["choice"].tool_choice: must be auto, required, none or {type: function, function: {name: ...}}, got "sometimes"`,
			`line 32: modules["text"].checks.json_schema: needs response_format of type json_object or json_schema`,
		}},
		{"bad-regexp.yml", []string{
			"config file \"testdata/bad-regexp.yml\": line 10: probe_api.adhoc_url_allowlist[0]: invalid regular expression \"http://(unclosed\": error parsing regexp: missing closing ): `^(?:http://(unclosed)$`",
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

// TestProblemsHideSecrets: no problem of a file quotes a secret from it,
// whatever the kind of problem: a syntax error on the credential's line, a
// credential of the wrong type, a URL with a password that does not parse
// (as a target, a server-metrics or a proxy URL). Errors reach the log and
// the answer of /-/reload.
func TestProblemsHideSecrets(t *testing.T) {
	const secret = "sk-planted-0123456789"
	head := "targets:\n  - name: a\n    backend: vllm\n    modules: [m]\n"
	for _, tc := range []struct {
		name, yaml, want string // want: a part of the message
	}{
		{"syntax error on the line", head + "    url: http://127.0.0.1:8000\n    http_client_config:\n      authorization:\n        credentials: " + secret + "\n       type: Bearer\nmodules:\n  m: {}\n", "line 8: YAML syntax error"},
		{"unclosed quote", head + "    url: http://127.0.0.1:8000\n    http_client_config:\n      authorization:\n        credentials: \"" + secret + "\nmodules:\n  m: {}\n", "YAML syntax error"},
		{"credential of the wrong type", head + "    url: http://127.0.0.1:8000\n    http_client_config:\n      authorization:\n        credentials: [" + secret + "]\nmodules:\n  m: {}\n", "line 8: targets[0].http_client_config.authorization.credentials: must be text, not a list"},
		{"target URL with a password", head + "    url: http://u:" + secret + "@[::1\nmodules:\n  m: {}\n", "line 5: targets[0].url: not a valid URL"},
		{"server metrics URL", head + "    url: http://127.0.0.1:8000\n    server_metrics: [\"http://u:" + secret + "@h:x/metrics\"]\nmodules:\n  m: {}\n", "targets[0].server_metrics[0]: not a valid URL (invalid port)"},
		{"proxy URL", head + "    url: http://127.0.0.1:8000\n    http_client_config:\n      proxy_url: \"http://u:" + secret + "@[::1\"\nmodules:\n  m: {}\n", "line 7: targets[0].http_client_config.proxy_url:"},
		{"query key in a URL", head + "    url: http://127.0.0.1:8000/?api_key=" + secret + "\nmodules:\n  m: {}\n", "targets[0].url: must not contain a query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse() = nil error, want one containing %q", tc.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "planted") {
				t.Errorf("Parse() error quotes the secret:\n%v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse() = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestTargetBaseURL: a target's url is the base the backends append their
// paths to, by the CLI's rule (NormalizeBaseURL): the /v1 that OpenAI's
// SDKs and vLLM's docs write is taken off, as is a trailing slash.
func TestTargetBaseURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000"},
		{"https://gw.example/llm/v1", "https://gw.example/llm"},
		{"http://127.0.0.1:8000/v10", "http://127.0.0.1:8000/v10"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, err := Parse([]byte("targets:\n  - {name: a, url: \"" + tc.in + "\", backend: vllm, modules: [m]}\nmodules:\n  m: {}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Targets[0].URL; got != tc.want {
				t.Errorf("Parse(url: %s).Targets[0].URL = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNormalizeBaseURLErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "must be set"},
		{"127.0.0.1:8000", "missing scheme, write http://127.0.0.1:8000"},
		{"vllm:8000/v1", "missing scheme, write http://vllm:8000/v1"},
		{"user:pw@vllm:8000", "missing scheme and host, write a URL such as http://127.0.0.1:8000"},
		{"/v1", "missing scheme and host, write a URL such as http://127.0.0.1:8000"},
		{"ftp://host", `scheme must be http or https, got "ftp"`},
		{"http://", "must include a host"},
		{"http://host:port", "not a valid URL (invalid port)"},
		{"http://host/#frag", "must not contain a query or fragment: paths are appended to a base URL; send an API key as a header (http_client_config)"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := NormalizeBaseURL(tc.in)
			if err == nil || err.Error() != tc.want {
				t.Errorf("NormalizeBaseURL(%q) = %v, want %q", tc.in, err, tc.want)
			}
		})
	}
}

// TestParseHTTPHeaders decodes prometheus/common's http_headers, whose
// header names are the keys of an inline map: every name is taken, and a
// wrong value under one is reported at its path.
func TestParseHTTPHeaders(t *testing.T) {
	const doc = `
targets:
  - name: a
    url: http://127.0.0.1:8000
    backend: openai-chat
    modules: [m]
    http_client_config:
      http_headers:
        X-Api-Key:
          secrets: [sk-planted-0123456789]
        X-Team:
          values: [%s]
modules:
  m: {}
`
	c, err := Parse([]byte(fmt.Sprintf(doc, "sre")))
	if err != nil {
		t.Fatal(err)
	}
	h := c.Targets[0].HTTPClientConfig.HTTPHeaders
	if h == nil || len(h.Headers["X-Api-Key"].Secrets) != 1 || h.Headers["X-Team"].Values[0] != "sre" {
		t.Fatalf("http_headers decoded as %+v", h)
	}
	_, err = Parse([]byte(fmt.Sprintf(doc, "{not: a list}")))
	if err == nil || !strings.Contains(err.Error(), "http_headers.X-Team.values[0]: must be text") {
		t.Fatalf("a mapping where values takes a list: %v, want an error at http_headers.X-Team.values[0]", err)
	}
}
