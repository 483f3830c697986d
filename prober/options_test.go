package prober

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/config"
)

func TestModuleOptions(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	b := func(v bool) *bool { return &v }
	tgt := config.Target{URL: "http://vllm:8000/", Model: "qwen"}
	for _, tc := range []struct {
		name string
		m    config.Module
		want RequestOptions
	}{
		{"defaults: stream, ignore_eos and usage on; sampling left to the backend",
			config.Module{},
			RequestOptions{BaseURL: "http://vllm:8000", Model: "qwen", Stream: true, IgnoreEOS: true, IncludeUsage: true}},
		{"every setting maps",
			config.Module{Stream: b(false), IgnoreEOS: b(false), IncludeUsage: b(false), Temperature: f(0.7), TopP: f(0.9),
				ExtraBody: map[string]any{"options": map[string]any{"num_predict": 16}}, Headers: map[string]string{"X-Team": "llm"}},
			RequestOptions{BaseURL: "http://vllm:8000", Model: "qwen", Temperature: f(0.7), TopP: f(0.9),
				ExtraBody: map[string]any{"options": map[string]any{"num_predict": 16}}, Headers: map[string]string{"X-Team": "llm"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ModuleOptions(tgt, tc.m)); diff != "" {
				t.Errorf("ModuleOptions (-want +got):\n%s", diff)
			}
		})
	}
}
