package tokenizer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/tokenizer/hub"
)

func TestResolve(t *testing.T) {
	files := map[string]string{}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "metaspace-legacy", f))
		if err != nil {
			t.Fatal(err)
		}
		files["/org/tiny/resolve/main/"+f] = string(b)
	}
	files["/org/noconfig/resolve/main/tokenizer.json"] = files["/org/tiny/resolve/main/tokenizer.json"]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.Replace(r.URL.Path, "/resolve/"+strings.Repeat("a", 40)+"/", "/resolve/main/", 1)
		c, ok := files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Repo-Commit", strings.Repeat("a", 40))
		w.Header().Set("ETag", `"`+strings.TrimPrefix(strings.ReplaceAll(p, "/", "_"), "_")+`"`)
		w.Write([]byte(c))
	}))
	defer srv.Close()
	h := &hub.Client{HTTP: srv.Client(), Endpoint: srv.URL, CacheDir: t.TempDir()}
	ctx := context.Background()

	tok, err := Resolve(ctx, "org/tiny", h)
	if err != nil {
		t.Fatal(err)
	}
	if bos, ok := tok.BOS(); !ok || bos != 1 {
		t.Errorf("hub tokenizer BOS() = %d, %v: tokenizer_config.json not picked up", bos, ok)
	}
	if _, err := Resolve(ctx, "org/noconfig@main", h); err != nil {
		t.Errorf("Resolve(no tokenizer_config.json) = %v, want success", err)
	}
	if _, err := Resolve(ctx, "org/missing", h); !errors.Is(err, hub.ErrNotFound) {
		t.Errorf("Resolve(missing repo) error = %v, want not found", err)
	}
	if _, err := Resolve(ctx, "./nope/x.json", h); err == nil || !strings.Contains(err.Error(), "not a hub id") {
		t.Errorf("Resolve(bad path) error = %v", err)
	}
	local, err := Resolve(ctx, filepath.Join("testdata", "metaspace-legacy"), h)
	if err != nil || local.VocabSize() != tok.VocabSize() {
		t.Errorf("Resolve(local dir) = %v", err)
	}
	// Offline, from the cache filled above.
	h.Offline = true
	if _, err := Resolve(ctx, "org/tiny", h); err != nil {
		t.Errorf("offline Resolve(cached) = %v", err)
	}
	if _, err := Resolve(ctx, "org/other", h); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline Resolve(uncached) error = %v, want mention of HF_HUB_OFFLINE", err)
	}
}

// TestResolveAnyUnsupported: a tokenizer the pure-Go loader does not cover
// fails with ErrUnsupported, and without the hftokenizers tag the error
// says how to load it.
func TestResolveAnyUnsupported(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, TokenizerFile), []byte(`{"model":{"type":"Unigram","vocab":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ResolveAny(t.Context(), dir, nil)
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("ResolveAny(Unigram) = %v, want ErrUnsupported", err)
	}
	if hfLoad == nil && !strings.Contains(err.Error(), "-tags hftokenizers") {
		t.Errorf("error %q does not say how to load it", err)
	}
	if _, err := ResolveAny(t.Context(), "testdata/qwen3", nil); err != nil {
		t.Errorf("ResolveAny(qwen3) = %v", err)
	}
}
