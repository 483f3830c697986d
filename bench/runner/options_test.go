package runner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// TestRequestOptions: a daemon bench window sends what its module's probes
// send on every backend (its temperature and include_usage were dropped on
// OpenAI backends), and the CLI keeps bench_serving's flags.
func TestRequestOptions(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	no := false
	win := ModuleSpec(config.Target{URL: "http://s"}, config.Module{
		Temperature: f(0.7), TopP: f(0.9), IncludeUsage: &no,
		ExtraBody: map[string]any{"seed": 3}, Headers: map[string]string{"X-Team": "llm"},
	})
	mod := *win.Module
	// The module's headers go with the window's client, once.
	if win.Headers["X-Team"] != "llm" || mod.Headers != nil {
		t.Errorf("ModuleSpec headers %v, module options' %v: want them on the Spec only", win.Headers, mod.Headers)
	}
	spec := func(edit func(*Spec)) Spec {
		s := DefaultSpec()
		s.BaseURL = "http://s"
		edit(&s)
		return s
	}
	chat, _ := prober.LookupBackend("vllm-chat")
	gen, _ := prober.LookupBackend("sglang")
	for _, tc := range []struct {
		name string
		s    Spec
		info prober.BackendInfo
		want prober.RequestOptions
	}{
		{"window on an OpenAI backend: the module's sampling, usage and body",
			spec(func(s *Spec) { s.Module = &mod }), chat,
			prober.RequestOptions{BaseURL: "http://s", Model: "m", Stream: true, IgnoreEOS: true, Temperature: f(0.7), TopP: f(0.9),
				IncludeUsage: false, ExtraBody: map[string]any{"seed": 3}}},
		{"window on /generate: the module's sampling too",
			spec(func(s *Spec) { s.Module, s.Temperature, s.TopP = &mod, 0.2, 0.5 }), gen,
			prober.RequestOptions{BaseURL: "http://s", Model: "m", Stream: true, IgnoreEOS: true, Temperature: f(0.7), TopP: f(0.9),
				ExtraBody: map[string]any{"seed": 3}}},
		// bench_serving sends 0.0 there whatever --temperature says; vLLM's
		// bench serve sends the flag's value, as a user who gave it means.
		{"CLI on an OpenAI backend: --temperature and --top-p as vLLM sends them, usage asked for",
			spec(func(s *Spec) { s.Temperature, s.TopP = 0.2, 0.5 }), chat,
			prober.RequestOptions{BaseURL: "http://s", Model: "m", Stream: true, IgnoreEOS: true, Temperature: f(0.2), TopP: f(0.5), IncludeUsage: true}},
		{"CLI on an OpenAI backend: vLLM's other sampling flags and chat_template_kwargs in the extra body, --extra-request-body over them",
			spec(func(s *Spec) {
				k := 20
				s.TopK, s.MinP, s.RepetitionPenalty = &k, f(0.05), f(1.1)
				s.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
				s.ExtraBody = map[string]any{"min_p": 0.1}
			}), chat,
			prober.RequestOptions{BaseURL: "http://s", Model: "m", Stream: true, IgnoreEOS: true, Temperature: f(0), IncludeUsage: true,
				ExtraBody: map[string]any{"top_k": 20, "min_p": 0.1, "repetition_penalty": 1.1, "chat_template_kwargs": map[string]any{"enable_thinking": false}}}},
		{"CLI on /generate: --temperature and --top-p",
			spec(func(s *Spec) {
				s.Temperature, s.TopP, s.Compat = 0.2, 0.5, bench.Compat{NoUsage: true, ChatLength: true}
			}), gen,
			prober.RequestOptions{BaseURL: "http://s", Model: "m", Stream: true, IgnoreEOS: true, Temperature: f(0.2), TopP: f(0.5),
				CompatChatLength: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, requestOptions(tc.s, tc.info, "m")); diff != "" {
				t.Errorf("requestOptions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestImageBackends: the image dataset goes to every backend that can
// carry images (bench_serving sends them on its OpenAI chat path too).
func TestImageBackends(t *testing.T) {
	for backend, ok := range map[string]bool{
		"vllm-chat": true, "openai-chat": true, "lmdeploy-chat": true, "sglang-oai-chat": true,
		"sglang": true, "sglang-native": true, "sglang-oai": true,
		"vllm": false, "trt": false, "truss": false,
	} {
		s := DefaultSpec()
		s.Backend, s.BaseURL, s.Dataset, s.Model = backend, "http://s", "image", "m"
		err := s.Validate()
		refused := err != nil && strings.Contains(err.Error(), "needs a backend that carries images")
		if refused == ok {
			t.Errorf("--backend %s with images: error %v, want accepted %v", backend, err, ok)
		}
	}
}
