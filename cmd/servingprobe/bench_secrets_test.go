package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestBenchRedactsEchoedKey: a server that echoes the request's headers, in
// a 401 body or as its model id, gets OPENAI_API_KEY from bench; the key
// must show in neither the printed error, the log (debug), the request log
// nor the JSONL, as probe and the daemon already hide it.
func TestBenchRedactsEchoedKey(t *testing.T) {
	const key = "sk-PLANTED-bench-4e2f"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("HF_HUB_OFFLINE", "1")
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/models-echo/v1/models" {
			// A bare key has the shape of a model id: only knowing the
			// secret tells it apart.
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":[{"id":"`+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}]}`)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "unauthorized; you sent:\n")
		_ = r.Header.Write(w)
	}))
	defer echo.Close()
	tok, err := filepath.Abs("../../tokenizer/testdata/metaspace-legacy")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		args       []string
		want       string // in stdout or stderr: the run failed for the right reason
	}{
		{"warmup 401", "", []string{"--model", "m"}, "every warmup request failed: HTTP 401"},
		{"detect 401", "", nil, "detect model: HTTP 401"},
		{"requests 401", "", []string{"--model", "m", "--warmup-requests", "0", "--print-requests"}, "Authorization: <secret>"},
		{"ready check 401", "", []string{"--model", "m", "--ready-check-timeout-sec", "1"}, "server not ready after 1s"},
		{"model id is the key", "/models-echo", nil, "holds a configured credential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := append([]string{"--log.level=debug", "bench", "--backend", "vllm", "--base-url", echo.URL + tc.path,
				"--tokenizer", tok, "--num-prompts", "2", "--dataset-name", "random", "--random-input-len", "8",
				"--random-output-len", "4", "--ready-check-timeout-sec", "0", "--output-file", out}, tc.args...)
			_, stdout, stderr := runCLI(t, args...)
			if !strings.Contains(stdout+stderr, tc.want) {
				t.Fatalf("the output does not say %q:\n%s\n%s", tc.want, stdout, stderr)
			}
			file, _ := os.ReadFile(out)
			for name, text := range map[string]string{"stdout": stdout, "stderr": stderr, "jsonl": string(file)} {
				if i := strings.Index(text, "PLANTED"); i >= 0 {
					t.Errorf("%s shows the key: …%s…", name, text[max(0, i-120):min(len(text), i+40)])
				}
			}
		})
	}
}

// TestBenchRedirectStaysOnHost: bench sends OPENAI_API_KEY on every
// request (a header of its own transport); a server that answers 307 to
// another host must not get that host a request, and the run says why.
func TestBenchRedirectStaysOnHost(t *testing.T) {
	// No 8-character run of the key may be a word of the message the test
	// looks for: the sanitizer redacts any such run of a secret.
	const key = "sk-PLANTED-9c1d7e2f-a0b4"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("HF_HUB_OFFLINE", "1")
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	tok, err := filepath.Abs("../../tokenizer/testdata/metaspace-legacy")
	if err != nil {
		t.Fatal(err)
	}
	_, stdout, stderr := runCLI(t, "bench", "--backend", "vllm", "--base-url", srv.URL, "--model", "m",
		"--tokenizer", tok, "--num-prompts", "2", "--dataset-name", "random", "--random-input-len", "8",
		"--random-output-len", "4", "--ready-check-timeout-sec", "0", "--output-file", filepath.Join(t.TempDir(), "o.jsonl"))
	if !strings.Contains(stdout+stderr, "redirect to another host not followed") {
		t.Errorf("the output does not say the redirect was refused:\n%s\n%s", stdout, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("the other host got %d requests: %q", len(leaked), leaked)
	}
}
