package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestBenchEmbeddingDataset runs the embedding dataset end to end against
// a loopback /v1/embeddings that answers as vLLM's EmbeddingResponse (one
// embedding per input, usage.prompt_tokens): each row is one request whose
// "input" is the row's string or list, as written, with the row's other
// keys; the table and the record say the same inputs per request; and a
// backend that sends no embeddings refuses the dataset before any request.
func TestBenchEmbeddingDataset(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r) // /server_info
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		var req struct {
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 1
		var list []string
		if json.Unmarshal(req.Input, &list) == nil {
			n = len(list)
		}
		var data []string
		for i := range n {
			data = append(data, `{"object":"embedding","embedding":[0.1,0.2],"index":`+strconv.Itoa(i)+`}`)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[`+strings.Join(data, ",")+`],"model":"m","usage":{"prompt_tokens":`+
			strconv.Itoa(3*n)+`,"total_tokens":`+strconv.Itoa(3*n)+`}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "embed.jsonl")
	rows := `{"input": ["tea", "coffee", "water"], "encoding_format": "float"}
{"input": "one text"}
{"input": ["a", "b"]}
{"input": "never sent: past --num-prompts"}
`
	if err := os.WriteFile(path, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	args := func(backend string) []string {
		return []string{"bench", "--backend", backend, "--base-url", srv.URL, "--model", "m", "--dataset-name", "embedding",
			"--dataset-path", path, "--num-prompts", "3", "--tokenizer", "../../tokenizer/testdata/qwen3",
			"--ready-check-timeout-sec", "0", "--warmup-requests", "0", "--disable-tqdm", "--output-file", out}
	}
	code, stdout, stderr := runCLI(t, args("sglang-embedding")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The handlers wrote bodies on the server's goroutines: the race
	// detector sees no order through the socket, so it is read locked.
	mu.Lock()
	slices.Sort(bodies)
	mu.Unlock()
	want := []string{
		`{"model":"m","input":"one text"}`,
		`{"model":"m","input":["a","b"]}`,
		`{"model":"m","input":["tea","coffee","water"],"encoding_format":"float"}`,
	}
	slices.Sort(want)
	if !slices.Equal(bodies, want) {
		t.Errorf("request bodies = %q, want %q", bodies, want)
	}
	// 6 inputs over 3 requests; the server counted 3 tokens per input.
	for _, re := range []string{`(?m)^Successful requests:\s+3\s*$`, `(?m)^Total input tokens:\s+18\s*$`,
		`(?m)^Inputs per request \(mean/max\):\s+2\.00/3\s*$`} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("table lacks %s:\n%s", re, stdout)
		}
	}
	line, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), `"embedding_batch": {"requests": 3, "inputs": 6, "mean": 2.0, "max": 3}`) {
		t.Errorf("record lacks the batch of the table:\n%s", line)
	}

	bodies = nil
	code, stdout, stderr = runCLI(t, args("vllm")...)
	if code == 0 || !strings.Contains(stderr, "embedding needs an embedding backend: ") || len(bodies) != 0 {
		t.Errorf("--backend vllm with the embedding dataset: exit %d, %d requests sent\n%s\n%s", code, len(bodies), stdout, stderr)
	}
}
