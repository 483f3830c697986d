package prober

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

func ptr[T any](v T) *T { return &v }

// TestRequestBodies pins every backend's request, byte for byte, in
// testdata/requests/<case>.http (rewrite with -update). Key order follows
// the bodies of bench_serving's request functions (sglang's
// bench_serving.py), whose dict order is Python's insertion order.
func TestRequestBodies(t *testing.T) {
	base := RequestOptions{BaseURL: "http://127.0.0.1:30000/", Model: "Qwen/Qwen2.5-0.5B-Instruct", Stream: true, IgnoreEOS: true}
	compat := base // bench_serving sends no stream_options, and chat's length once
	compat.CompatChatLength = true
	ours := base
	ours.IncludeUsage = true
	prompt := datasets.Prompt{Text: "Hello", OutputLen: 128}
	img := []string{"data:image/png;base64,iVBORw0KGgo=", "data:image/jpeg;base64,/9j/4AAQ"}
	for _, tc := range []struct {
		name    string
		backend string
		opts    RequestOptions
		prompt  datasets.Prompt
	}{
		{"sglang", "sglang", compat, datasets.Prompt{Text: "Hello", OutputLen: 256}},
		{"sglang_ids_lora_images", "sglang-native",
			RequestOptions{BaseURL: base.BaseURL, Stream: true, Temperature: ptr(0.7), TopP: ptr(0.9),
				ExtraBody: map[string]any{"return_logprob": true, "custom": 1}},
			datasets.Prompt{IDs: []int{1, 2, 3}, OutputLen: 16, LoRA: "adapter-a", Images: img, RoutingKey: "group-7"}},
		{"sglang_extra_replaces_sampling_params", "sglang",
			RequestOptions{BaseURL: base.BaseURL, Stream: true, IgnoreEOS: true, ExtraBody: map[string]any{"sampling_params": map[string]any{"temperature": 1}}},
			prompt},
		{"completions_compat", "vllm", compat, prompt},
		{"completions_usage", "sglang-oai", ours, prompt},
		{"completions_lora_images_extra", "lmdeploy",
			RequestOptions{BaseURL: base.BaseURL, Model: "base", Stream: true, IncludeUsage: true, TopP: ptr(0.95),
				ExtraBody: map[string]any{"temperature": 0.6, "ignore_eos": false, "repetition_penalty": 1.0}},
			datasets.Prompt{Text: "Hi", OutputLen: 8, LoRA: "adapter-b", Images: img[:1],
				ExtraBody: map[string]any{"seed": 42}}},
		{"completions_no_stream", "openai", RequestOptions{BaseURL: base.BaseURL, Model: "m", IncludeUsage: true}, prompt},
		{"chat_compat", "sglang-oai-chat", compat, prompt},
		{"chat_usage_images", "vllm-chat", ours, datasets.Prompt{Text: "Describe", OutputLen: 64, Images: img}},
		// sglang's audio dataset (benchmark/datasets/audio.py): the clips
		// as input_audio parts (base64 WAV, format wav), then the text; with
		// no clip the text is still a part.
		{"chat_audio", "sglang-oai-chat", ours, datasets.Prompt{Text: "Describe the audio.", OutputLen: 16, Audio: []string{"UklGRiQAAABXQVZF", "UklGRiQAAABXQVZG"}}},
		{"chat_audio_none", "sglang-oai-chat", ours, datasets.Prompt{Text: "Write a short description.", OutputLen: 16, Audio: []string{}}},
		{"chat_multi_turn", "openai-chat", ours, datasets.Prompt{OutputLen: 32, Images: img[:1], Messages: []datasets.Message{
			{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"},
			{Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "And this image?"}}}},
		{"trt", "trt", compat, prompt},
		{"trt_no_ignore_eos", "trt", RequestOptions{BaseURL: base.BaseURL, Stream: true}, prompt},
		{"truss", "truss", compat, prompt},
		{"ollama", "ollama", RequestOptions{BaseURL: "http://127.0.0.1:11434", Model: "qwen3:0.6b", Stream: true, IgnoreEOS: true, TopP: ptr(0.9)}, prompt},
		{"ollama_chat_multi_turn_images", "ollama-chat", RequestOptions{BaseURL: "http://127.0.0.1:11434", Model: "qwen3:0.6b", Stream: true},
			datasets.Prompt{OutputLen: 32, Images: img[:1], Messages: []datasets.Message{
				{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"},
				{Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "And this image?"}}}},
		{"ollama_chat_no_stream", "ollama-chat", RequestOptions{BaseURL: "http://127.0.0.1:11434", Model: "qwen3:0.6b"}, prompt},
		{"responses", "openai-responses", ours, prompt},
		{"responses_multi_turn", "openai-responses", RequestOptions{BaseURL: base.BaseURL, Model: "m", Stream: true, TopP: ptr(0.9)},
			datasets.Prompt{OutputLen: 32, Messages: []datasets.Message{
				{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"},
				{Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "And now?"}}}},
		{"anthropic", "anthropic", ours, prompt},
		{"embeddings", "sglang-embedding", ours, prompt},
		{"embeddings_ids", "openai-embeddings", RequestOptions{BaseURL: base.BaseURL, Model: "m"}, datasets.Prompt{IDs: []int{1, 2, 3}}},
		{"anthropic_system_version_header", "anthropic", RequestOptions{BaseURL: base.BaseURL, Model: "m", Stream: true,
			Headers: map[string]string{"anthropic-version": "2024-01-01"}},
			datasets.Prompt{OutputLen: 32, Messages: []datasets.Message{
				{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"},
				{Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "And now?"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBackend(tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			req, err := b.NewRequest(tc.opts, tc.prompt)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(req.Body)
			var got bytes.Buffer
			fmt.Fprintf(&got, "%s %s\n", req.Method, req.URL)
			keys := make([]string, 0, len(req.Header))
			for k := range req.Header {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(&got, "%s: %s\n", k, req.Header.Get(k))
			}
			fmt.Fprintf(&got, "\n%s\n", body)
			path := filepath.Join("testdata", "requests", tc.name+".http")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("%s request (-want +got):\n%s", tc.backend, diff)
			}
		})
	}
}

// TestRequestBodiesMatchSpecExamples checks our bytes against bodies
// written out by hand from bench_serving's request functions, as
// json.dumps sends them, independently of our goldens.
func TestRequestBodiesMatchSpecExamples(t *testing.T) {
	for _, tc := range []struct {
		backend string
		prompt  datasets.Prompt
		want    string
	}{
		{"sglang", datasets.Prompt{Text: "…", OutputLen: 256},
			`{"text":"…","sampling_params":{"temperature":0.0,"max_new_tokens":256,"ignore_eos":true},"stream":true,"lora_path":null,"return_logprob":false,"logprob_start_len":-1}`},
		{"vllm", datasets.Prompt{Text: "…", OutputLen: 128},
			`{"model":"m","prompt":"…","best_of":1,"max_tokens":128,"stream":true,"temperature":0.0,"ignore_eos":true}`},
		// bench_serving's source has the literal 0.000001; Python's
		// json.dumps writes that float as 1e-06 on the wire, and so do we.
		{"trt", datasets.Prompt{Text: "p", OutputLen: 9},
			`{"accumulate_tokens":true,"text_input":"p","temperature":1e-06,"top_p":1.0,"max_tokens":9,"stream":true,"min_length":9,"end_id":1048576}`},
	} {
		b, _ := NewBackend(tc.backend)
		req, err := b.NewRequest(RequestOptions{BaseURL: "http://h", Model: "m", Stream: true, IgnoreEOS: true}, tc.prompt)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(req.Body)
		if string(got) != tc.want {
			t.Errorf("%s body:\n got %s\nwant %s", tc.backend, got, tc.want)
		}
	}
}

func TestBackendRegistry(t *testing.T) {
	want := map[string]int{
		"sglang": 30000, "sglang-native": 30000, "sglang-oai": 30000, "sglang-oai-chat": 30000,
		"vllm": 8000, "vllm-chat": 30000, "lmdeploy": 23333, "lmdeploy-chat": 30000,
		"trt": 8000, "truss": 8080, "openai": 8000, "openai-chat": 8000,
		"ollama": 11434, "ollama-chat": 11434,
		"openai-responses": 8000, "anthropic": 8000,
		"sglang-embedding": 30000, "vllm-embedding": 8000, "openai-embeddings": 8000,
	}
	if diff := cmp.Diff(slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}), BackendNames()); diff != "" {
		t.Errorf("BackendNames() (-want +got):\n%s", diff)
	}
	for name, port := range want {
		if got, ok := DefaultPort(name); !ok || got != port {
			t.Errorf("DefaultPort(%q) = %d, %v; want %d", name, got, ok, port)
		}
	}
	if _, err := NewBackend("tgi"); err == nil {
		t.Error("NewBackend(tgi) succeeded, want an error")
	}
}
