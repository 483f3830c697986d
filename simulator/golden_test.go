package simulator

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

// TestGoldenStreams pins every protocol's bytes. Inside synctest the clock
// starts at 2000-01-01, so "created" and e2e_latency are reproducible.
func TestGoldenStreams(t *testing.T) {
	for _, tc := range []struct{ name, path, header, body string }{
		{"chat_usage", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`},
		{"chat_eos", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":50,"stream":true}`},
		{"chat_unary", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"ignore_eos":true}`},
		{"completions", "/v1/completions", "", `{"prompt":"hi","max_tokens":3,"ignore_eos":true,"stream":true}`},
		{"completions_usage", "/v1/completions", "", `{"prompt":"hi","max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`},
		{"completions_unary", "/v1/completions", "", `{"prompt":"hi","max_tokens":3,"ignore_eos":true}`},
		{"completions_error", "/v1/completions", string(FaultErrorInStream), `{"prompt":"hi","max_tokens":4,"ignore_eos":true,"stream":true}`},
		{"completions_malformed", "/v1/completions", string(FaultMalformedChunk), `{"prompt":"hi","max_tokens":2,"ignore_eos":true,"stream":true}`},
		{"generate", "/generate", "", `{"text":"hi","sampling_params":{"max_new_tokens":3,"ignore_eos":true},"stream":true}`},
		{"generate_eos", "/generate", "", `{"text":"hi","sampling_params":{"max_new_tokens":50},"stream":true}`},
		{"generate_unary", "/generate", "", `{"text":"hi","sampling_params":{"max_new_tokens":3,"ignore_eos":true}}`},
		{"generate_error", "/generate", string(FaultErrorInStream), `{"text":"hi","sampling_params":{"max_new_tokens":2,"ignore_eos":true},"stream":true}`},
		{"trt", "/v2/models/ensemble/generate_stream", "", `{"text_input":"hi","max_tokens":3,"min_length":3,"end_id":1048576}`},
		{"trt_unary", "/v2/models/ensemble/generate", "", `{"text_input":"hi","max_tokens":3,"min_length":3}`},
		{"truss", "/v1/models/model:predict", "", `{"prompt":"hi","max_tokens":2,"ignore_eos":true,"stream":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := timedConfig()
				cfg.MeanOutputTokens = 4
				s := newServer(t, cfg)
				req := newPost(tc.path, tc.body)
				req.Header.Set(RequestIDHeader, "golden-"+tc.name)
				if tc.header != "" {
					req.Header.Set(FaultHeader, tc.header)
				}
				w := newRecorder()
				s.Handler().ServeHTTP(w, req.WithContext(context.Background()))
				got := w.Body.Bytes()
				path := filepath.Join("testdata", "golden", tc.name+".sse")
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./simulator -run TestGoldenStreams -update)", err)
				}
				if string(got) != string(want) {
					t.Errorf("%s differs from %s:\ngot:\n%s\nwant:\n%s", tc.name, path, got, want)
				}
			})
		})
	}
}
