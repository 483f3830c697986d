package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/bench/api"
	"github.com/servingprobe/servingprobe/exporter"
)

// TestCheckConfigAgreesWithServe: check-config and serve accept and refuse
// exactly the same files, over every config in the repository and a few
// that only building the probes can refuse.
func TestCheckConfigAgreesWithServe(t *testing.T) {
	files := []string{"demo.yml", "../../examples/servingprobe.yml", "../../examples/compose/servingprobe.yml", "../../deploy/servingprobe.yml"}
	more, err := filepath.Glob("../../config/testdata/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	dir := t.TempDir()
	for name, body := range map[string]string{
		// Valid YAML and valid fields, refused only when the probe is built.
		"tokenizer-server.yml":  "targets:\n  - name: a\n    url: http://127.0.0.1:1\n    backend: vllm\n    modules: [m]\nmodules:\n  m:\n    tokenizer: server\n",
		"missing-tokenizer.yml": "targets:\n  - name: a\n    url: http://127.0.0.1:1\n    backend: vllm\n    modules: [m]\nmodules:\n  m:\n    tokenizer: ./no/such/dir\n",
		"missing-dataset.yml":   "targets:\n  - name: a\n    url: http://127.0.0.1:1\n    backend: vllm\n    modules: [m]\nmodules:\n  m:\n    dataset: sharegpt\n    dataset_path: no-such.json\n",
		// Refused only when the capacity check's window is decoded: the
		// module has no answer checks to judge valid>=P%.
		"capacity-valid-no-checks.yml": "targets:\n  - name: a\n    url: http://127.0.0.1:1\n    backend: vllm\n    model: m\n    modules: [m]\n    capacity_check:\n      every: 24h\n      slo: 'ttft:p90<=2s,valid>=99%'\nmodules:\n  m:\n    dataset: random\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	accepted := 0
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		code, _, stderr := runCLI(t, "check-config", "--config.file="+f)
		_, serveErr := exporter.New(exporter.Options{ConfigFile: f, BuildProbe: daemonProbeBuilder(), DisableExporterMetrics: true, Validate: api.ValidateCapacityChecks})
		if (code == 0) != (serveErr == nil) {
			t.Errorf("%s: check-config exit %d (%s), serve's load error %v: they must agree", f, code, strings.TrimSpace(stderr), serveErr)
		}
		if code == 0 {
			accepted++
		}
		if strings.HasPrefix(filepath.Base(f), "bad-") || strings.HasPrefix(f, dir) {
			if code == 0 {
				t.Errorf("%s: check-config accepted a file that must be refused", f)
			}
		}
	}
	if accepted < 4 {
		t.Errorf("only %d files accepted: the examples and the demo config must be valid", accepted)
	}
}

// TestCheckConfigBadChecks: a config whose answer checks are broken in
// every way at once (a bad regex, schemas that are not schemas, a
// tool_choice naming an undeclared tool or none of the choices) gets
// every problem listed by check-config, each with its line and path, the
// schemas' compiled with the prober's own compiler.
func TestCheckConfigBadChecks(t *testing.T) {
	code, _, stderr := runCLI(t, "check-config", "--config.file=../../config/testdata/bad-checks.yml")
	want := []string{
		`config file "../../config/testdata/bad-checks.yml": line 13: modules["json"].response_format.json_schema.schema: not a valid JSON Schema: at '/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; at '/type': got string, want array`,
		"line 16: modules[\"json\"].checks.regex: invalid regular expression \"([a-z]+\": error parsing regexp: missing closing ): `([a-z]+`",
		`line 22: modules["tools"].tools[0].function.parameters: not a valid JSON Schema: at '/required': got string, want array`,
		`line 23: modules["tools"].tool_choice.function.name: "get_time" is not one of the module's tools (get_weather)`,
		`line 29: modules["choice"].tool_choice: must be auto, required, none or {type: function, function: {name: ...}}, got "sometimes"`,
		`line 32: modules["text"].checks.json_schema: needs response_format of type json_object or json_schema`,
	}
	if code != 1 || strings.TrimSpace(stderr) != strings.Join(want, "\n") {
		t.Errorf("check-config exit %d, stderr:\n%s\nwant exit 1 and:\n%s", code, stderr, strings.Join(want, "\n"))
	}
}
