package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/hostile"
)

// TestSimulatorToolCallChecks probes the simulator over loopback with a
// module that declares a tool: the simulator streams a call in vLLM's delta
// shape (the name first, the arguments in fragments), which the tool_call
// check passes; with the malformed-tool-call fault its arguments lose their
// closing brace, and the check fails while the request itself succeeds and
// keeps its latency.
func TestSimulatorToolCallChecks(t *testing.T) {
	url, stop, err := hostile.StartSimulator()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	tool := map[string]any{"type": "function", "function": map[string]any{
		"name": "get_weather",
		"parameters": map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
			"required":             []any{"city", "days"},
			"additionalProperties": false,
		},
	}}
	for _, tc := range []struct {
		name   string
		fault  simulator.Fault
		want   prober.CheckOutcome
		reason string
	}{
		{"well-formed call", simulator.FaultNone, prober.CheckPass, ""},
		{"malformed call", simulator.FaultMalformedToolCall, prober.CheckFail, "arguments are not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := config.DefaultModule
			m.Dataset, m.Prompt, m.OutputLen = "fixed", "What is the weather in Paris?", 64
			m.Tools, m.ToolChoice = []any{tool}, "required"
			m.Checks = config.AnswerChecks{ToolCall: true, NoReasoningInContent: true}
			if tc.fault != simulator.FaultNone {
				m.Headers = map[string]string{simulator.FaultHeader: string(tc.fault)}
			}
			target := config.DefaultTarget
			target.Name, target.URL, target.Backend, target.Model = "sim", url, "vllm-chat", simulator.DefaultConfig().Model
			target.Modules = []string{"tools"}
			build := prober.NewProbeBuilder(prober.ProbeBuilderOptions{
				Tokenizer: func(string) (datasets.Tokenizer, error) { return hostile.WordTokenizer{}, nil },
			})
			probe, err := build(target, "tools", m)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := probe(ctx, log.NewNopLogger())
			if r.Outcome != prober.OutcomeSuccess {
				t.Fatalf("outcome %s (%s), want success: the stream is well-formed either way", r.Outcome, r.Err)
			}
			if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_weather" {
				t.Fatalf("tool calls = %+v, want one call of get_weather", r.ToolCalls)
			}
			if r.FinishReason != "tool_calls" || r.SampleSeconds().E2E <= 0 {
				t.Errorf("finish reason %q, E2E %v: want tool_calls and a measured latency", r.FinishReason, r.SampleSeconds().E2E)
			}
			if len(r.Checks) != 2 || r.Checks[0].Check != prober.CheckToolCall {
				t.Fatalf("checks = %+v", r.Checks)
			}
			if got := r.Checks[0]; got.Result != tc.want || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("tool_call = %s (%s), want %s (%s); arguments %q", got.Result, got.Reason, tc.want, tc.reason, r.ToolCalls[0].Arguments)
			}
			if got := r.Checks[1]; got.Result != prober.CheckPass {
				t.Errorf("no_reasoning_in_content = %s (%s), want pass", got.Result, got.Reason)
			}
		})
	}
}
