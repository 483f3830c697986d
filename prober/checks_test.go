package prober

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/config"
)

// weatherTools declares get_weather(city string) and get_time(zone), as a
// module's tools do (OpenAI's shape).
func weatherTools() []any {
	fn := func(name, param string) any {
		return map[string]any{"type": "function", "function": map[string]any{
			"name": name,
			"parameters": map[string]any{
				"type":                 "object",
				"properties":           map[string]any{param: map[string]any{"type": "string"}},
				"required":             []any{param},
				"additionalProperties": false,
			},
		}}
	}
	return []any{fn("get_weather", "city"), fn("get_time", "zone")}
}

func schemaFormat() map[string]any {
	return map[string]any{"type": "json_schema", "json_schema": map[string]any{
		"name": "answer",
		"schema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
			"required":   []any{"ok"},
		},
	}}
}

func TestCheckerCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		module config.Module
		res    Result
		want   []CheckOutcome
		reason string // a part of the first non-pass reason
	}{
		{"schema pass", config.Module{ResponseFormat: schemaFormat(), Checks: config.AnswerChecks{JSONSchema: true}},
			Result{Answer: `{"ok": true}`}, []CheckOutcome{CheckPass}, ""},
		{"schema pass in a code fence", config.Module{ResponseFormat: schemaFormat(), Checks: config.AnswerChecks{JSONSchema: true}},
			Result{Answer: "```json\n{\"ok\": false}\n```"}, []CheckOutcome{CheckPass}, ""},
		{"schema invalid", config.Module{ResponseFormat: schemaFormat(), Checks: config.AnswerChecks{JSONSchema: true}},
			Result{Answer: `{"ok": "yes"}`}, []CheckOutcome{CheckFail}, "does not validate"},
		{"not JSON", config.Module{ResponseFormat: schemaFormat(), Checks: config.AnswerChecks{JSONSchema: true}},
			Result{Answer: `sure! {"ok": true}`}, []CheckOutcome{CheckFail}, "not JSON"},
		{"JSON cut at the length", config.Module{ResponseFormat: schemaFormat(), Checks: config.AnswerChecks{JSONSchema: true}},
			Result{Answer: `{"ok": tr`, FinishReason: "length"}, []CheckOutcome{CheckError}, "cut"},
		{"json_object parses only", config.Module{ResponseFormat: map[string]any{"type": "json_object"}, Checks: config.AnswerChecks{JSONSchema: true}},
			Result{Answer: `[1, 2]`}, []CheckOutcome{CheckPass}, ""},
		{"tool call pass", config.Module{Tools: weatherTools(), Checks: config.AnswerChecks{ToolCall: true}},
			Result{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}, []CheckOutcome{CheckPass}, ""},
		{"no tool call", config.Module{Tools: weatherTools(), Checks: config.AnswerChecks{ToolCall: true}},
			Result{Answer: "It is sunny."}, []CheckOutcome{CheckFail}, "no tool call"},
		{"undeclared tool", config.Module{Tools: weatherTools(), Checks: config.AnswerChecks{ToolCall: true}},
			Result{ToolCalls: []ToolCall{{Name: "get_wether", Arguments: `{}`}}}, []CheckOutcome{CheckFail}, "undeclared tool"},
		{"tool arguments not JSON", config.Module{Tools: weatherTools(), Checks: config.AnswerChecks{ToolCall: true}},
			Result{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city": "Par`}}}, []CheckOutcome{CheckFail}, "not JSON"},
		{"tool arguments invalid", config.Module{Tools: weatherTools(), Checks: config.AnswerChecks{ToolCall: true}},
			Result{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city": 75001}`}}}, []CheckOutcome{CheckFail}, "do not validate"},
		{"golden answers", config.Module{Checks: config.AnswerChecks{Regex: `\bParis\b`, Contains: "France", Equals: "Paris, France"}},
			Result{Answer: " Paris, France\n"}, []CheckOutcome{CheckPass, CheckPass, CheckPass}, ""},
		{"golden answers wrong", config.Module{Checks: config.AnswerChecks{Regex: `^\d+$`, Contains: "France", Equals: "Paris"}},
			Result{Answer: "Lyon"}, []CheckOutcome{CheckFail, CheckFail, CheckFail}, "no match"},
		{"tool call cut before its arguments", config.Module{Tools: weatherTools(), Checks: config.AnswerChecks{ToolCall: true}},
			Result{ToolCalls: []ToolCall{{Name: "get_weather"}}, FinishReason: "length"}, []CheckOutcome{CheckError}, "cut"},
		{"think tag in a cut answer", config.Module{Checks: config.AnswerChecks{NoReasoningInContent: true}},
			Result{Answer: "<think>hmm", FinishReason: "length"}, []CheckOutcome{CheckFail}, "<think>"},
		{"golden answer cut", config.Module{Checks: config.AnswerChecks{Contains: "France"}},
			Result{Answer: "Paris is in", FinishReason: "length"}, []CheckOutcome{CheckFail}, "not in"},
		{"all output in reasoning, cut", config.Module{Checks: config.AnswerChecks{NoReasoningInContent: true}},
			Result{ReasoningTokens: 64, OutputTokens: 64, FinishReason: "length"}, []CheckOutcome{CheckFail}, "all 64"},
		{"think tag in content", config.Module{Checks: config.AnswerChecks{NoReasoningInContent: true}},
			Result{Answer: "<think>hmm</think>Blue."}, []CheckOutcome{CheckFail}, "<think>"},
		{"harmony channel in content", config.Module{Checks: config.AnswerChecks{NoReasoningInContent: true}},
			Result{Answer: "<|channel|>analysis<|message|>hmm"}, []CheckOutcome{CheckFail}, "<|channel|>"},
		{"all output in reasoning", config.Module{Checks: config.AnswerChecks{NoReasoningInContent: true}},
			Result{Answer: "", ReasoningTokens: 64, OutputTokens: 64}, []CheckOutcome{CheckFail}, "all 64 output tokens"},
		{"reasoning apart from the answer", config.Module{Checks: config.AnswerChecks{NoReasoningInContent: true}},
			Result{Answer: "Blue.", ReasoningTokens: 30, OutputTokens: 33}, []CheckOutcome{CheckPass}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewChecker(tc.module)
			if err != nil {
				t.Fatalf("NewChecker = %v", err)
			}
			tc.res.Outcome = OutcomeSuccess
			got := k.Check(&tc.res)
			var outcomes []CheckOutcome
			reason := ""
			for _, c := range got {
				outcomes = append(outcomes, c.Result)
				if c.Result != CheckPass && reason == "" {
					reason = c.Reason
				}
				if c.Result == CheckPass && c.Reason != "" {
					t.Errorf("%s passed with a reason %q", c.Check, c.Reason)
				}
				if len(c.Reason) > maxCheckReason {
					t.Errorf("%s: reason of %d bytes, bound is %d", c.Check, len(c.Reason), maxCheckReason)
				}
			}
			if diff := cmp.Diff(tc.want, outcomes); diff != "" {
				t.Errorf("Check outcomes (-want +got):\n%s\nreasons: %+v", diff, got)
			}
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("first reason %q does not contain %q", reason, tc.reason)
			}
		})
	}
}

// TestCheckFailedRequestNotJudged: a request that failed has no answer;
// it is counted by its outcome, not as a wrong answer.
func TestCheckFailedRequestNotJudged(t *testing.T) {
	k, err := NewChecker(config.Module{Checks: config.AnswerChecks{Contains: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Check(&Result{Outcome: OutcomeHTTP5xx}); got != nil {
		t.Errorf("Check(http_5xx) = %v, want none", got)
	}
	var none *Checker
	if got := none.Check(&Result{Outcome: OutcomeSuccess}); got != nil {
		t.Errorf("nil Checker.Check = %v, want none", got)
	}
}

func TestNewCheckerBadSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    config.Module
		want string
	}{
		{"bad response schema", config.Module{
			ResponseFormat: map[string]any{"type": "json_schema", "json_schema": map[string]any{"schema": map[string]any{"type": 12}}},
			Checks:         config.AnswerChecks{JSONSchema: true},
		}, "response_format.json_schema.schema"},
		{"remote reference", config.Module{
			ResponseFormat: map[string]any{"type": "json_schema", "json_schema": map[string]any{"schema": map[string]any{"$ref": "http://127.0.0.1:1/s.json"}}},
			Checks:         config.AnswerChecks{JSONSchema: true},
		}, "response_format.json_schema.schema"},
		{"bad tool parameters", config.Module{
			Tools:  []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "objekt"}}}},
			Checks: config.AnswerChecks{ToolCall: true},
		}, "tools[0].function.parameters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewChecker(tc.m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewChecker = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestModuleCheckerRefusesUnmappedFields: a backend with no field for
// tools or response_format refuses a module that sets them, rather than
// judging answers to a request that never asked.
func TestModuleCheckerRefusesUnmappedFields(t *testing.T) {
	for _, tc := range []struct {
		backend string
		m       config.Module
		ok      bool
	}{
		{"vllm-chat", config.Module{Tools: weatherTools()}, true},
		{"ollama-chat", config.Module{Tools: weatherTools()}, true},
		{"vllm", config.Module{Tools: weatherTools()}, false},
		{"vllm", config.Module{ResponseFormat: schemaFormat()}, true},
		{"sglang", config.Module{ResponseFormat: schemaFormat()}, true},
		{"trt", config.Module{ResponseFormat: schemaFormat()}, false},
	} {
		info, err := LookupBackend(tc.backend)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ModuleChecker(info, tc.m)
		if (err == nil) != tc.ok {
			t.Errorf("ModuleChecker(%s) = %v, want ok %v", tc.backend, err, tc.ok)
		}
	}
}

// TestToolCallsFromEngines reads tool-call streams written as vLLM's and
// sglang's chat servers send them (vLLM: the name in the call's first
// delta, the arguments in string fragments after it; sglang: id, name and
// an empty arguments string first, nulls in later fragments, a second call
// at index 1), assembles the calls, and judges them.
func TestToolCallsFromEngines(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []ToolCall
	}{
		{"vllm-chat/tool_calls.sse", []ToolCall{{ID: "chatcmpl-tool-5a2e", Name: "get_weather", Arguments: `{"city": "Paris"}`}}},
		{"sglang-oai-chat/tool_calls.sse", []ToolCall{
			{ID: "call_8d1b2c", Name: "get_weather", Arguments: `{"city": "Paris"}`},
			{ID: "call_5e7a90", Name: "get_time", Arguments: `{"zone": "CET"}`},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			k, err := NewChecker(config.Module{Tools: weatherTools(), Checks: config.AnswerChecks{ToolCall: true, NoReasoningInContent: true}})
			if err != nil {
				t.Fatal(err)
			}
			p := &Prober{Backend: openAIChat{}, Options: RequestOptions{Stream: true}, Checks: k}
			res := Result{Stream: true}
			if err := p.stream(strings.NewReader(string(b)), FormatSSE, &res); err != nil {
				t.Fatalf("stream = %v", err)
			}
			if diff := cmp.Diff(tc.want, res.ToolCalls); diff != "" {
				t.Errorf("ToolCalls (-want +got):\n%s", diff)
			}
			if res.Answer != "" {
				t.Errorf("Answer = %q, want empty (the calls are not content)", res.Answer)
			}
			res.Outcome = OutcomeSuccess
			for _, c := range k.Check(&res) {
				if c.Result != CheckPass {
					t.Errorf("%s = %s (%s), want pass", c.Check, c.Result, c.Reason)
				}
			}
			// The same stream with one argument fragment broken is a fail.
			bad := strings.Replace(string(b), `Paris`, `Paris\", \"units\": `, 1)
			res = Result{Stream: true}
			if err := p.stream(strings.NewReader(bad), FormatSSE, &res); err != nil {
				t.Fatalf("stream = %v", err)
			}
			res.Outcome = OutcomeSuccess
			if got := k.Check(&res); got[0].Result != CheckFail {
				t.Errorf("broken arguments: %s = %s, want fail", got[0].Check, got[0].Result)
			}
		})
	}
}

// TestAnswerApartFromReasoning: the answer the checks read is the content
// alone, without the reasoning field's text.
func TestAnswerApartFromReasoning(t *testing.T) {
	stream := `data: {"choices":[{"index":0,"delta":{"reasoning_content":"<think>"}}]}

data: {"choices":[{"index":0,"delta":{"reasoning_content":"sky?","content":"Bl"}}]}

data: {"choices":[{"index":0,"delta":{"content":"ue."},"finish_reason":"stop"}]}

data: [DONE]

`
	k, err := NewChecker(config.Module{Checks: config.AnswerChecks{Equals: "Blue.", NoReasoningInContent: true}})
	if err != nil {
		t.Fatal(err)
	}
	p := &Prober{Backend: openAIChat{}, Options: RequestOptions{Stream: true}, Checks: k}
	res := Result{Stream: true}
	if err := p.stream(strings.NewReader(stream), FormatSSE, &res); err != nil {
		t.Fatal(err)
	}
	if res.Answer != "Blue." {
		t.Errorf("Answer = %q, want %q", res.Answer, "Blue.")
	}
	res.Outcome = OutcomeSuccess
	for _, c := range k.Check(&res) {
		if c.Result != CheckPass {
			t.Errorf("%s = %s (%s), want pass", c.Check, c.Result, c.Reason)
		}
	}
}
