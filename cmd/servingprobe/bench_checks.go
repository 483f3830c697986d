package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/servingprobe/servingprobe/bench/runner"
)

// addCheckFlags binds the answer's shape and checks (docs/checks.md): the
// same keys as a module's, into the Spec's, so that a bench window's body
// and the CLI judge answers alike.
func addCheckFlags(b *binder, s *runner.Spec) {
	b.flag("response-format", "response_format", "OpenAI's response_format as a JSON object ({\"type\": \"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": {\"name\": ..., \"schema\": {...}}}), sent in each backend's own field (ollama's format, sglang's sampling_params.json_schema).", jsonObjectValue(&s.ResponseFormat))
	b.flag("tools", "tools", "OpenAI's tools as a JSON array of {\"type\": \"function\", \"function\": {\"name\", \"parameters\"}} (chat backends).", jsonArrayValue(&s.Tools))
	b.flag("tool-choice", "tool_choice", "OpenAI's tool_choice: auto, required, none, or a JSON object naming a function (needs --tools).", toolChoiceValue(&s.ToolChoice))
	b.bool("check-json-schema", "checks.json_schema", "Judge each answer: it parses as JSON and validates against --response-format's schema.", &s.Checks.JSONSchema)
	b.bool("check-tool-call", "checks.tool_call", "Judge each answer: it calls a declared tool with arguments that validate against its parameters.", &s.Checks.ToolCall)
	b.flag("check-regex", "checks.regex", "Judge each answer: this regular expression (Go's RE2) matches in its content.", stringValue(&s.Checks.Regex))
	b.flag("check-contains", "checks.contains", "Judge each answer: its content contains this text.", stringValue(&s.Checks.Contains))
	b.flag("check-equals", "checks.equals", "Judge each answer: its content, trimmed, is this text.", stringValue(&s.Checks.Equals))
	b.bool("check-no-reasoning-in-content", "checks.no_reasoning_in_content", "Judge each answer: no reasoning markers (<think>, Harmony channel tokens) in its content, and not empty with all output in reasoning.", &s.Checks.NoReasoningInContent)
}

// jsonArrayValue binds a JSON array (--tools).
func jsonArrayValue(p *[]any) flagValue {
	return &scalar[[]any]{p: p,
		show: func(v []any) string {
			if v == nil {
				return ""
			}
			b, _ := json.Marshal(v)
			return string(b)
		},
		parse: func(s string) ([]any, error) {
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("must be a JSON array: %v", err)
			}
			if dec.More() {
				return nil, errors.New("must be one JSON array, got more after it")
			}
			a, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("must be a JSON array, got %s", jsonKind(v))
			}
			return a, nil
		}}
}

// toolChoiceValue binds --tool-choice: a word, or a JSON object.
func toolChoiceValue(p *any) flagValue {
	return &scalar[any]{p: p,
		show: func(v any) string {
			switch x := v.(type) {
			case nil:
				return ""
			case string:
				return x
			}
			b, _ := json.Marshal(v)
			return string(b)
		},
		parse: func(s string) (any, error) {
			if !strings.HasPrefix(strings.TrimSpace(s), "{") {
				return s, nil
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				return nil, fmt.Errorf("must be auto, required, none or a JSON object: %v", err)
			}
			return m, nil
		}}
}
