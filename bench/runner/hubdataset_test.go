package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
	"github.com/servingprobe/servingprobe/tokenizer/hub"
)

// fakeHub serves files at their hub paths ("/datasets/<repo>/resolve/main/
// <file>") with the headers the hub sends, and records every path asked.
type fakeHub struct {
	files map[string]string
	mu    sync.Mutex
	asked []string
}

const fakeCommit = "0123456789abcdef0123456789abcdef01234567"

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.asked = append(h.asked, r.Method+" "+r.URL.Path)
	h.mu.Unlock()
	body, ok := h.files[strings.Replace(r.URL.Path, "/resolve/"+fakeCommit+"/", "/resolve/main/", 1)]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Repo-Commit", fakeCommit)
	w.Header().Set("ETag", `"blob-`+strings.NewReplacer("/", "-", ".", "-").Replace(r.URL.Path[len("/datasets/"):])+`"`)
	if r.Method == http.MethodGet {
		w.Write([]byte(body))
	}
}

// TestDatasetFromHub: with no --dataset-path, sharegpt and longbench-v2 (by
// either name) load the file bench_serving loads from the hub, through the
// hub client and its cache; with a path the hub is never asked.
func TestDatasetFromHub(t *testing.T) {
	tok, err := tokenizer.Load("../../tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	// LongBench-v2's data.json is a JSON array, pretty-printed.
	rows := []map[string]string{
		{"_id": "x1", "context": "Tides follow the moon.", "question": "What drives tides?", "choice_A": "Wind", "choice_B": "The moon", "choice_C": "Fish", "choice_D": "Salt", "answer": "B"},
		{"_id": "x2", "context": "Bees make honey from nectar.", "question": "What do bees use?", "choice_A": "Nectar", "choice_B": "Sand", "choice_C": "Rain", "choice_D": "Bark", "answer": "A"},
	}
	dataJSON, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var wantLong []string
	for _, r := range rows {
		wantLong = append(wantLong, r["context"]+"\n\nQuestion: "+r["question"]+"\nA. "+r["choice_A"]+"\nB. "+r["choice_B"]+"\nC. "+r["choice_C"]+"\nD. "+r["choice_D"]+"\nAnswer:")
	}
	shareGPT, err := os.ReadFile("../../datasets/testdata/sharegpt.json")
	if err != nil {
		t.Fatal(err)
	}
	longPath := "/datasets/" + datasets.LongBenchV2Repo + "/resolve/main/" + datasets.LongBenchV2File
	sharePath := "/datasets/" + shareGPTRepo + "/resolve/main/" + shareGPTFile
	if longPath != "/datasets/THUDM/LongBench-v2/resolve/main/data.json" {
		t.Fatalf("LongBench-v2 is fetched from %s; sglang's load_dataset(\"THUDM/LongBench-v2\", split=\"train\") reads data.json", longPath)
	}
	for _, tc := range []struct {
		name    string
		dataset string
		files   map[string]string
		want    []string // the prompts' texts, in any order; nil: only count them
		wantN   int
		wantErr string
	}{
		{name: "longbench-v2", dataset: "longbench-v2", files: map[string]string{longPath: string(dataJSON)}, want: wantLong, wantN: 2},
		{name: "longbench_v2", dataset: "longbench_v2", files: map[string]string{longPath: string(dataJSON)}, want: wantLong, wantN: 2},
		// The local file has 4 conversations that pass ShareGPT's filters.
		{name: "sharegpt", dataset: "sharegpt", files: map[string]string{sharePath: string(shareGPT)}, wantN: 4},
		{name: "longbench-v2 not on the hub", dataset: "longbench-v2", files: map[string]string{}, wantErr: "--dataset-path is unset and the LongBench-v2 download failed: hub: dataset THUDM/LongBench-v2@main data.json: HTTP 404"},
		{name: "sharegpt not on the hub", dataset: "sharegpt", files: map[string]string{}, wantErr: "--dataset-path is unset and the ShareGPT download failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fh := &fakeHub{files: tc.files}
			srv := httptest.NewServer(fh)
			defer srv.Close()
			s := DefaultSpec()
			s.Dataset, s.NumPrompts = tc.dataset, 10
			env := Env{Logger: log.NewNopLogger(), Hub: &hub.Client{HTTP: srv.Client(), Endpoint: srv.URL, CacheDir: t.TempDir()}}
			src, err := buildPrompts(context.Background(), s, tok, env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("buildPrompts(%s) error %v, want %q", tc.dataset, err, tc.wantErr)
				}
				if !errors.Is(err, hub.ErrNotFound) {
					t.Errorf("buildPrompts(%s) error %v does not wrap hub.ErrNotFound", tc.dataset, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("buildPrompts(%s): %v", tc.dataset, err)
			}
			var got []string
			for _, p := range src.Prompts() {
				got = append(got, p.Text)
			}
			if len(got) != tc.wantN {
				t.Fatalf("buildPrompts(%s) made %d prompts, want %d", tc.dataset, len(got), tc.wantN)
			}
			if tc.want != nil && !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tc.want))) {
				t.Errorf("buildPrompts(%s) prompts %q, want %q", tc.dataset, got, tc.want)
			}
			var path string
			for p := range tc.files {
				path = p
			}
			if wantAsked := []string{"HEAD " + path, "GET " + strings.Replace(path, "/main/", "/"+fakeCommit+"/", 1)}; !slices.Equal(fh.asked, wantAsked) {
				t.Errorf("the hub was asked %q, want %q", fh.asked, wantAsked)
			}

			// With --dataset-path the file is read and the hub is not asked.
			fh.asked = nil
			local := t.TempDir() + "/rows"
			if err := os.WriteFile(local, []byte(tc.files[path]), 0o600); err != nil {
				t.Fatal(err)
			}
			s.Options.DatasetPath = local
			src, err = buildPrompts(context.Background(), s, tok, env)
			if err != nil {
				t.Errorf("buildPrompts(%s, --dataset-path): %v", tc.dataset, err)
			} else if src.Len() != tc.wantN {
				t.Errorf("buildPrompts(%s, --dataset-path) made %d prompts, want %d", tc.dataset, src.Len(), tc.wantN)
			}
			if len(fh.asked) != 0 {
				t.Errorf("with --dataset-path the hub was asked %q", fh.asked)
			}
		})
	}
}
