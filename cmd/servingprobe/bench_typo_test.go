package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBenchTypos: a mistyped flag, dataset or backend is refused before
// anything is sent to the server, naming what was most likely meant.
func TestBenchTypos(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"flag", []string{"--num-promtps", "5"}, "unrecognized arguments: --num-promtps (did you mean --num-prompts?)"},
		{"flag with a value", []string{"--random-inptu-len=5"}, "unrecognized arguments: --random-inptu-len (did you mean --random-input-len?)"},
		{"flag far from any", []string{"--zzzzzzzzzz"}, "unrecognized arguments: --zzzzzzzzzz\n"},
		{"dataset", []string{"--dataset-name", "sharegtp"}, `--dataset-name "sharegtp": unknown dataset; did you mean sharegpt?`},
		{"backend", []string{"--backend", "vllm-caht"}, `--backend "vllm-caht": unknown backend; did you mean vllm-chat?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"bench", "--base-url", srv.URL, "--disable-tqdm"}, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want a refusal with %q:\n%s", code, tc.want, stderr)
			}
			if strings.Contains(stderr, "did you mean") != strings.Contains(tc.want, "did you mean") {
				t.Errorf("a suggestion where none is near, or none where one is:\n%s", stderr)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the server got %d requests before the refusal", n)
			}
		})
	}
}
