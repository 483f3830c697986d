package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Validate checks the whole config and returns every problem at once, each
// prefixed with the path of the field it is about. It makes config's own
// checks only; Checks.Parse adds the ones config cannot make itself.
func (c *Config) Validate() error {
	var v validator
	c.validate(&v, Checks{})
	errs := make([]error, len(v.problems))
	for i, p := range v.problems {
		errs[i] = errors.New(p.String())
	}
	return errors.Join(errs...)
}

func (c *Config) validate(v *validator, k Checks) {
	if len(c.Targets) == 0 {
		v.add("targets", "at least one target is required")
	}
	seen := map[string]int{}
	for i, t := range c.Targets {
		p := fmt.Sprintf("targets[%d]", i)
		if t.Name == "" {
			v.add(p+".name", "must be set")
		} else if j, dup := seen[t.Name]; dup {
			v.add(p+".name", "duplicate target name %q (also targets[%d])", t.Name, j)
		} else {
			seen[t.Name] = i
		}
		t.validate(v, p, c.Modules, k)
	}
	names := make([]string, 0, len(c.Modules))
	for name := range c.Modules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := fmt.Sprintf("modules[%q]", name)
		if name == "" {
			v.add(p, "module name must not be empty")
		}
		c.Modules[name].validate(v, p)
		c.Modules[name].validateSchemas(v, p, k)
	}
	c.Bench.validate(v, "bench")
	if c.Probe.AllowAdhocTargets && len(c.Probe.AdhocURLAllowlist) == 0 {
		v.add("probe_api.adhoc_url_allowlist", "must list at least one pattern when allow_adhoc_targets is true")
	}
}

func (t Target) validate(v *validator, p string, modules map[string]Module, k Checks) {
	// The base URL rule is the CLI's (--url, --base-url): one function.
	if _, err := k.baseURL(t.Backend, t.URL); err != nil {
		v.add(p+".url", "%s", err)
	} else if u, _ := url.Parse(t.URL); u.User != nil {
		// Credentials in a URL would show in /config, logs and labels.
		v.add(p+".url", "must not contain credentials; use http_client_config.basic_auth")
	}
	// Which names are backends is the prober's to say (its one list,
	// beside each backend's traits; config may not import it): the caller
	// passes it in Checks, so an unknown name is reported in its place
	// among the file's other problems.
	if t.Backend == "" {
		v.add(p+".backend", "must be set")
	} else if k.Backend != nil {
		if err := k.Backend(t.Backend); err != nil {
			v.add(p+".backend", "%s", err)
		}
	}
	if len(t.Modules) == 0 {
		v.add(p+".modules", "at least one module is required")
	}
	for j, m := range t.Modules {
		if _, ok := modules[m]; !ok {
			v.add(fmt.Sprintf("%s.modules[%d]", p, j), "unknown module %q", m)
		}
	}
	if t.Interval <= 0 {
		v.add(p+".interval", "must be positive")
	}
	if t.Timeout < 0 {
		v.add(p+".timeout", "must not be negative")
	}
	if t.MaxInFlight < 1 {
		v.add(p+".max_in_flight", "must be at least 1")
	}
	if t.MaxResponseBytes < 1 {
		v.add(p+".max_response_bytes", "must be positive")
	}
	if t.MaxEventBytes < 1 {
		v.add(p+".max_event_bytes", "must be positive")
	} else if int64(t.MaxEventBytes) > t.MaxResponseBytes && t.MaxResponseBytes > 0 {
		v.add(p+".max_event_bytes", "must not exceed max_response_bytes")
	}
	if err := t.HTTPClientConfig.Validate(); err != nil {
		v.add(p+".http_client_config", "%v", err)
	}
	if t.NoServerMetrics && len(t.ServerMetrics) > 0 {
		v.add(p+".no_server_metrics", "excludes server_metrics: set one or the other")
	}
	for j, s := range t.ServerMetrics {
		q := fmt.Sprintf("%s.server_metrics[%d]", p, j)
		// The value is quoted redacted: errors reach logs and /-/reload's answer.
		switch err := checkHTTPURL(string(s)); {
		case s == "":
			v.add(q, "must not be empty")
		case err != nil:
			v.add(q, "%s", err)
		case slices.Contains(t.ServerMetrics[:j], s):
			v.add(q, "duplicate of an earlier entry")
		}
	}
	t.CapacityCheck.validate(v, p+".capacity_check", t)
}

var credentialHeaders = []string{"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"}

func (m Module) validate(v *validator, p string) {
	if !moduleDatasets[m.Dataset] {
		known := make([]string, 0, len(moduleDatasets))
		for k := range moduleDatasets {
			known = append(known, k)
		}
		sort.Strings(known)
		v.add(p+".dataset", "unknown dataset %q (one of %s)", m.Dataset, strings.Join(known, ", "))
	}
	switch m.Dataset {
	case "fixed":
		if m.Prompt == "" {
			v.add(p+".prompt", "must be set for dataset fixed")
		}
	case "sharegpt", "custom", "mooncake":
		if m.DatasetPath == "" {
			v.add(p+".dataset_path", "must be set for dataset %s", m.Dataset)
		}
	}
	if m.Prompt != "" && m.Dataset != "fixed" {
		v.add(p+".prompt", "only used by dataset fixed (dataset is %q)", m.Dataset)
	}
	if m.InputLen < 1 {
		v.add(p+".input_len", "must be at least 1")
	}
	if m.OutputLen < 1 {
		v.add(p+".output_len", "must be at least 1")
	}
	if math.IsNaN(m.RangeRatio) || m.RangeRatio < 0 || m.RangeRatio > 1 {
		v.add(p+".range_ratio", "must be between 0 and 1")
	}
	if m.Temperature != nil && (math.IsNaN(*m.Temperature) || *m.Temperature < 0) {
		v.add(p+".temperature", "must not be negative")
	}
	if m.TopP != nil && (math.IsNaN(*m.TopP) || *m.TopP <= 0 || *m.TopP > 1) {
		v.add(p+".top_p", "must be in (0, 1]")
	}
	m.validateAnswer(v, p)
	m.validateConversation(v, p)
	for name := range m.Headers {
		if slices.Contains(credentialHeaders, strings.ToLower(name)) {
			v.add(fmt.Sprintf("%s.headers[%q]", p, name), "credentials belong in the target's http_client_config, where they are kept secret")
		}
	}
}

// AnswerProblems returns the problems of m's response_format, tools,
// tool_choice and checks, each prefixed with its key, as Validate reports
// them: the one check of their shape for a module and for a bench that
// takes the same keys (runner.Spec).
func (m Module) AnswerProblems() error {
	var v validator
	m.validateAnswer(&v, "")
	errs := make([]error, len(v.problems))
	for i, p := range v.problems {
		p.path = strings.TrimPrefix(p.path, ".")
		errs[i] = errors.New(p.String())
	}
	return errors.Join(errs...)
}

// validateAnswer checks response_format, tools, tool_choice and checks
// for their shape; the prober compiles the schemas (config has no JSON
// Schema validator) when it builds the module's probes.
func (m Module) validateAnswer(v *validator, p string) {
	rf := ""
	if m.ResponseFormat != nil {
		rf, _ = m.ResponseFormat["type"].(string)
		switch rf {
		case "json_object", "text":
		case "json_schema":
			js, _ := m.ResponseFormat["json_schema"].(map[string]any)
			if _, ok := js["schema"].(map[string]any); !ok {
				v.add(p+".response_format.json_schema.schema", "must be set to a JSON Schema object, as OpenAI's response_format writes it")
			}
		default:
			v.add(p+".response_format.type", "must be json_object, json_schema or text")
		}
	}
	for i, t := range m.Tools {
		tp := fmt.Sprintf("%s.tools[%d]", p, i)
		tm, _ := t.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		if typ, _ := tm["type"].(string); typ != "function" {
			v.add(tp+".type", "must be function")
		}
		if name, _ := fn["name"].(string); name == "" {
			v.add(tp+".function.name", "must be set")
		}
		if params, ok := fn["parameters"]; ok {
			if _, ok := params.(map[string]any); !ok {
				v.add(tp+".function.parameters", "must be a JSON Schema object")
			}
		}
	}
	if m.ToolChoice != nil && len(m.Tools) == 0 {
		v.add(p+".tool_choice", "needs tools")
	} else if m.ToolChoice != nil {
		m.validateToolChoice(v, p)
	}
	c := m.Checks
	if c.JSONSchema && rf != "json_object" && rf != "json_schema" {
		v.add(p+".checks.json_schema", "needs response_format of type json_object or json_schema")
	}
	if c.ToolCall && len(m.Tools) == 0 {
		v.add(p+".checks.tool_call", "needs tools")
	}
	if c.Regex != "" {
		if _, err := regexp.Compile(c.Regex); err != nil {
			v.add(p+".checks.regex", "invalid regular expression %q: %v", c.Regex, err)
		}
	}
}

// validateToolChoice checks tool_choice as OpenAI's chat API takes it:
// auto, required or none, or a function that one of the module's tools
// declares. A choice naming an undeclared tool would be refused by the
// server on every probe, or, by a lenient one, make every tool_call
// check fail for a typo.
func (m Module) validateToolChoice(v *validator, p string) {
	switch tc := m.ToolChoice.(type) {
	case string:
		if tc != "auto" && tc != "required" && tc != "none" {
			v.add(p+".tool_choice", "must be auto, required, none or {type: function, function: {name: ...}}, got %q", tc)
		}
	case map[string]any:
		if typ, _ := tc["type"].(string); typ != "function" {
			v.add(p+".tool_choice.type", "must be function")
		}
		fn, _ := tc["function"].(map[string]any)
		name, _ := fn["name"].(string)
		if name == "" {
			v.add(p+".tool_choice.function.name", "must be set")
			return
		}
		var declared []string
		for _, t := range m.Tools {
			tm, _ := t.(map[string]any)
			f, _ := tm["function"].(map[string]any)
			if n, _ := f["name"].(string); n != "" {
				declared = append(declared, n)
			}
		}
		if !slices.Contains(declared, name) {
			v.add(p+".tool_choice.function.name", "%q is not one of the module's tools (%s)", name, strings.Join(declared, ", "))
		}
	default:
		v.add(p+".tool_choice", "must be auto, required, none or {type: function, function: {name: ...}}")
	}
}

// validateSchemas compiles the module's JSON Schemas (its json_schema
// response format's and each tool's parameters) with k.Schema, the
// prober's compiler (config has no JSON Schema validator), so that a
// schema that is no schema is reported at its line with the file's other
// problems rather than alone when the probes are built. A schema whose
// shape validateAnswer already refused is not compiled.
func (m Module) validateSchemas(v *validator, p string, k Checks) {
	if k.Schema == nil {
		return
	}
	if rf, _ := m.ResponseFormat["type"].(string); rf == "json_schema" {
		js, _ := m.ResponseFormat["json_schema"].(map[string]any)
		if schema, ok := js["schema"].(map[string]any); ok {
			if err := k.Schema(schema); err != nil {
				v.add(p+".response_format.json_schema.schema", "not a valid JSON Schema: %v", err)
			}
		}
	}
	for i, t := range m.Tools {
		tm, _ := t.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		if params, ok := fn["parameters"].(map[string]any); ok {
			if err := k.Schema(params); err != nil {
				v.add(fmt.Sprintf("%s.tools[%d].function.parameters", p, i), "not a valid JSON Schema: %v", err)
			}
		}
	}
}

func (b Bench) validate(v *validator, p string) {
	if b.MaxPrompts < 1 {
		v.add(p+".max_prompts", "must be at least 1")
	}
	if math.IsNaN(b.MaxRequestRate) || b.MaxRequestRate <= 0 {
		v.add(p+".max_request_rate", "must be positive")
	}
	if b.MaxConcurrency < 1 {
		v.add(p+".max_concurrency", "must be at least 1")
	}
	if b.MaxDuration <= 0 {
		v.add(p+".max_duration", "must be positive")
	}
	if b.MaxBodyBytes < 1 {
		v.add(p+".max_body_bytes", "must be positive")
	}
	if b.MaxConcurrentRuns < 1 {
		v.add(p+".max_concurrent_runs", "must be at least 1")
	}
	if b.ResultsDir == "" {
		v.add(p+".results_dir", "must be set")
	}
	if b.ResultsRetentionCount < 0 {
		v.add(p+".results_retention_count", "must be 0 (no bound) or positive, got %d", b.ResultsRetentionCount)
	}
	if b.ResultsRetentionBytes < 0 {
		v.add(p+".results_retention_bytes", "must be 0 (no bound) or positive, got %d", b.ResultsRetentionBytes)
	}
}

type validator struct{ problems []problem }

func (v *validator) add(path, format string, args ...any) {
	v.problems = append(v.problems, problem{path: path, msg: fmt.Sprintf(format, args...)})
}
