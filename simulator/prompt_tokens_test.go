package simulator

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	pngenc "image/png"
	"testing"
)

// TestPromptTokensExact holds every endpoint's prompt count to what a real
// server with the Qwen3 tokenizer (the one the simulator names on
// /model_info) reports. The ids are Qwen3's, from Hugging Face:
// "Hello world" is [9707, 1879]; as one user turn of its chat template with
// the generation prompt,
// "<|im_start|>user\nHello world<|im_end|>\n<|im_start|>assistant\n", it is
// [151644, 872, 198, 9707, 1879, 151645, 198, 151644, 77091, 198].
func TestPromptTokensExact(t *testing.T) {
	const text, chat = 2, 10
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"generate", "/generate", `{"text":"Hello world","sampling_params":{"max_new_tokens":1}}`, text},
		{"completions", "/v1/completions", `{"prompt":"Hello world","max_tokens":1}`, text},
		{"completions_list", "/v1/completions", `{"prompt":["Hello world"],"max_tokens":1}`, text},
		{"truss", "/v1/models/model:predict", `{"prompt":"Hello world","max_tokens":1}`, text},
		{"trt", "/v2/models/ensemble/generate", `{"text_input":"Hello world","max_tokens":1}`, text},
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hello world"}],"max_tokens":1}`, chat},
		{"chat_parts", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"Hello world"}]}],"max_tokens":1}`, chat},
		{"ollama_chat", "/api/chat", `{"model":"servingprobe-sim","messages":[{"role":"user","content":"Hello world"}],"stream":false,"options":{"num_predict":1}}`, chat},
		// ollama's /api/generate wraps the prompt in the model's template
		// unless the request is raw.
		{"ollama_generate", "/api/generate", `{"model":"servingprobe-sim","prompt":"Hello world","stream":false,"options":{"num_predict":1}}`, chat},
		{"ollama_generate_raw", "/api/generate", `{"model":"servingprobe-sim","prompt":"Hello world","raw":true,"stream":false,"options":{"num_predict":1}}`, text},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, fastConfig())
			ts := startLoopback(t, s)
			resp := post(t, ts.Client(), ts.URL+tc.path, tc.body, RequestIDHeader, tc.name)
			if body := readAll(t, resp); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			tr, err := s.WaitTruth(context.Background(), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if tr.PromptTokens != tc.want {
				t.Errorf("%s %s: prompt tokens = %d, want %d", tc.path, tc.body, tr.PromptTokens, tc.want)
			}
		})
	}
}

// TestTokenizeExact checks /tokenize, which counts as the generation
// endpoints do: vLLM's defaults are add_special_tokens for a prompt, and
// the chat template with the generation prompt for messages.
func TestTokenizeExact(t *testing.T) {
	s := newServer(t, fastConfig())
	ts := startLoopback(t, s)
	for _, tc := range []struct {
		body string
		want []int
	}{
		{`{"prompt":"Hello world"}`, []int{9707, 1879}},
		{`{"messages":[{"role":"user","content":"Hello world"}]}`, []int{151644, 872, 198, 9707, 1879, 151645, 198, 151644, 77091, 198}},
	} {
		got := object(t, string(readAll(t, post(t, ts.Client(), ts.URL+"/tokenize", tc.body))))
		ids, _ := got["tokens"].([]any)
		ok := num(t, got["count"]) == len(tc.want) && len(ids) == len(tc.want)
		for i := 0; ok && i < len(ids); i++ {
			ok = num(t, ids[i]) == tc.want[i]
		}
		if !ok {
			t.Errorf("/tokenize %s = %v, want ids %v", tc.body, got, tc.want)
		}
	}
}

// TestChatImageTokens: an image in a chat request counts as a Qwen2-VL
// engine counts it, from its size: a 100×200 image is smart-resized to
// 112×196, 4×7 merged 28 px patches, plus the vision start and end
// tokens, 30 tokens beside the text's 10. An image that is not one is
// refused, as an engine refuses it.
func TestChatImageTokens(t *testing.T) {
	var png bytes.Buffer
	if err := pngenc.Encode(&png, image.NewGray(image.Rect(0, 0, 200, 100))); err != nil {
		t.Fatal(err)
	}
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png.Bytes())
	s := newServer(t, fastConfig())
	ts := startLoopback(t, s)
	for _, tc := range []struct {
		name, url string
		status    int
		want      int
	}{
		{"png", url, 200, 10 + 30},
		{"two", url + `"}},{"type":"image_url","image_url":{"url":"` + url, 200, 10 + 2*30},
		{"remote", "https://example.invalid/cat.png", 200, 10},
		{"broken", "data:image/png;base64,AAAA", 400, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"messages":[{"role":"user","content":[{"type":"text","text":"Hello world"},{"type":"image_url","image_url":{"url":"` + tc.url + `"}}]}],"max_tokens":1}`
			resp := post(t, ts.Client(), ts.URL+"/v1/chat/completions", body, RequestIDHeader, tc.name)
			if b := readAll(t, resp); resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status != 200 {
				return
			}
			tr, err := s.WaitTruth(context.Background(), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if tr.PromptTokens != tc.want {
				t.Errorf("prompt tokens = %d, want %d", tr.PromptTokens, tc.want)
			}
		})
	}
	// sglang's image_data, beside a /generate text ("Hello world" is 2
	// tokens) or a completions prompt, counts the same.
	for _, tc := range []struct{ name, path, body string }{
		{"generate", "/generate", `{"text":"Hello world","image_data":["` + url + `"],"sampling_params":{"max_new_tokens":1}}`},
		{"generate one", "/generate", `{"text":"Hello world","image_data":"` + url + `","sampling_params":{"max_new_tokens":1}}`},
		{"completions", "/v1/completions", `{"prompt":"Hello world","image_data":["` + url + `"],"max_tokens":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, ts.Client(), ts.URL+tc.path, tc.body, RequestIDHeader, "image-data-"+tc.name)
			if b := readAll(t, resp); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			tr, err := s.WaitTruth(context.Background(), "image-data-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if tr.PromptTokens != 2+30 {
				t.Errorf("prompt tokens = %d, want 32", tr.PromptTokens)
			}
		})
	}
}

// TestServerInfoAcceptLength: /server_info states avg_spec_accept_length
// only when decoding is speculative (several tokens a step), as sglang
// states it only with speculative decoding on; bench_serving prints
// "Accept length" whenever it is there.
func TestServerInfoAcceptLength(t *testing.T) {
	for _, tc := range []struct {
		perChunk int
		want     string
	}{
		{1, `{}`},
		{3, `{"avg_spec_accept_length":3}`},
	} {
		cfg := fastConfig()
		cfg.TokensPerChunk = tc.perChunk
		s := newServer(t, cfg)
		ts := startLoopback(t, s)
		resp, err := ts.Client().Get(ts.URL + "/server_info")
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			InternalStates []json.RawMessage `json:"internal_states"`
		}
		if err := json.Unmarshal(readAll(t, resp), &info); err != nil {
			t.Fatal(err)
		}
		if len(info.InternalStates) != 1 || string(info.InternalStates[0]) != tc.want {
			t.Errorf("tokens per chunk %d: internal_states %s, want [%s]", tc.perChunk, info.InternalStates, tc.want)
		}
	}
}
