package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

// fakeHub serves /{prefix}{repo}/resolve/{rev}/{file} as the hub does: HEAD
// and GET carry X-Repo-Commit and an ETag; LFS files (big.json) redirect to
// a CDN path and carry X-Linked-Etag. Private repos need the token.
type fakeHub struct {
	srv   *httptest.Server
	files map[string]string // "models/org/name/file" or "datasets/..." -> content
	gets  atomic.Int32
	auth  atomic.Value // last Authorization header
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{files: map[string]string{
		"models/org/tok/tokenizer.json":         `{"model":{}}`,
		"models/org/tok/sub/dir/file.txt":       "nested",
		"datasets/anon/ShareGPT/big.json":       `[{"id":"x"}]`,
		"models/org/private/tokenizer.json":     "secret",
		"models/gpt2/tokenizer.json":            "gpt2",
		"models/org/tok/tokenizer_config.json":  "{}",
		"datasets/anon/ShareGPT/tokenizer.json": "not a model",
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("/cdn/{key...}", func(w http.ResponseWriter, r *http.Request) {
		content, ok := h.files[r.PathValue("key")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.gets.Add(1)
		w.Write([]byte(content))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.auth.Store(r.Header.Get("Authorization"))
		p := strings.TrimPrefix(r.URL.Path, "/")
		kind := "models/"
		if rest, ok := strings.CutPrefix(p, "datasets/"); ok {
			kind, p = "datasets/", rest
		}
		repo, rest, ok := strings.Cut(p, "/resolve/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		rev, file, _ := strings.Cut(rest, "/")
		if rev != "main" && rev != commit {
			http.NotFound(w, r)
			return
		}
		key := kind + repo + "/" + file
		content, ok := h.files[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.Contains(repo, "private") && r.Header.Get("Authorization") != "Bearer hf_secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		sum := sha256.Sum256([]byte(content))
		w.Header().Set("X-Repo-Commit", commit)
		if strings.HasSuffix(file, "big.json") { // an LFS file
			w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(sum[:])+`"`)
			w.Header().Set("ETag", `"cdn-etag"`)
			http.Redirect(w, r, h.srv.URL+"/cdn/"+key, http.StatusFound)
			return
		}
		w.Header().Set("ETag", `W/"`+hex.EncodeToString(sum[:20])+`"`)
		if r.Method == http.MethodGet {
			h.gets.Add(1)
			w.Write([]byte(content))
		}
	})
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *fakeHub) client(t *testing.T) *Client {
	return &Client{HTTP: h.srv.Client(), Endpoint: h.srv.URL, CacheDir: t.TempDir()}
}

func TestDownload(t *testing.T) {
	h := newFakeHub(t)
	c := h.client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		typ      RepoType
		repo     string
		file     string
		want     string
		wantPath string
	}{
		{"model", Model, "org/tok", "tokenizer.json", `{"model":{}}`, "models--org--tok/snapshots/" + commit + "/tokenizer.json"},
		{"nested", Model, "org/tok", "sub/dir/file.txt", "nested", "models--org--tok/snapshots/" + commit + "/sub/dir/file.txt"},
		{"dataset lfs", Dataset, "anon/ShareGPT", "big.json", `[{"id":"x"}]`, "datasets--anon--ShareGPT/snapshots/" + commit + "/big.json"},
		{"no org", Model, "gpt2", "tokenizer.json", "gpt2", "models--gpt2/snapshots/" + commit + "/tokenizer.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.Download(ctx, tc.typ, tc.repo, "", tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(c.CacheDir, filepath.FromSlash(tc.wantPath)); p != want {
				t.Errorf("Download() = %s, want %s", p, want)
			}
			b, err := os.ReadFile(p)
			if err != nil || string(b) != tc.want {
				t.Errorf("content = %q, %v, want %q", b, err, tc.want)
			}
			if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("snapshot file is not a symlink: %v", err)
			}
			ref, err := os.ReadFile(filepath.Join(c.RepoDir(tc.typ, tc.repo), "refs", "main"))
			if err != nil || string(ref) != commit {
				t.Errorf("refs/main = %q, %v, want %s", ref, err, commit)
			}
		})
	}
	// LFS blobs are named by the sha256 of the content (X-Linked-Etag).
	sum := sha256.Sum256([]byte(`[{"id":"x"}]`))
	if _, err := os.Stat(filepath.Join(c.RepoDir(Dataset, "anon/ShareGPT"), "blobs", hex.EncodeToString(sum[:]))); err != nil {
		t.Errorf("LFS blob not named by X-Linked-Etag: %v", err)
	}
	// A second download is served from the cache (HEAD only, no GET).
	before := h.gets.Load()
	if _, err := c.Download(ctx, Model, "org/tok", "main", "tokenizer.json"); err != nil {
		t.Fatal(err)
	}
	if got := h.gets.Load() - before; got != 0 {
		t.Errorf("cached download made %d GETs, want 0", got)
	}
}

func TestDownloadErrors(t *testing.T) {
	h := newFakeHub(t)
	c := h.client(t)
	ctx := context.Background()

	_, err := c.Download(ctx, Model, "org/tok", "", "missing.json")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing file: error = %v, want ErrNotFound", err)
	}
	_, err = c.Download(ctx, Model, "org/private", "", "tokenizer.json")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("private without token: error = %v, want 401 mentioning HF_TOKEN", err)
	}
	c.Token = "hf_secret"
	if _, err := c.Download(ctx, Model, "org/private", "", "tokenizer.json"); err != nil {
		t.Errorf("private with token: %v", err)
	}
	if got := h.auth.Load(); got != "Bearer hf_secret" {
		t.Errorf("Authorization = %v, want Bearer hf_secret", got)
	}
	for _, bad := range []struct{ repo, file string }{{"../x", "f"}, {"a/b/c", "f"}, {"org/tok", "../../etc/passwd"}, {"org/tok", ""}} {
		if _, err := c.Download(ctx, Model, bad.repo, "", bad.file); err == nil {
			t.Errorf("Download(%q, %q) succeeded, want error", bad.repo, bad.file)
		}
	}
	if _, err := c.Download(ctx, "space", "org/tok", "", "f"); err == nil {
		t.Error("unsupported repo type accepted")
	}
}

func TestOffline(t *testing.T) {
	h := newFakeHub(t)
	c := h.client(t)
	ctx := context.Background()
	c.Offline = true
	if _, err := c.Download(ctx, Model, "org/tok", "", "tokenizer.json"); !errors.Is(err, ErrOffline) {
		t.Fatalf("offline, empty cache: error = %v, want ErrOffline", err)
	}
	c.Offline = false
	online, err := c.Download(ctx, Model, "org/tok", "", "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	c.Offline = true
	for _, rev := range []string{"", "main", commit} {
		p, err := c.Download(ctx, Model, "org/tok", rev, "tokenizer.json")
		if err != nil || p != online {
			t.Errorf("offline rev %q: Download() = %s, %v, want %s", rev, p, err, online)
		}
	}
	// An unreachable hub falls back to the cache too.
	c.Offline = false
	h.srv.Close()
	if p, err := c.Download(ctx, Model, "org/tok", "", "tokenizer.json"); err != nil || p != online {
		t.Errorf("hub down: Download() = %s, %v, want cached %s", p, err, online)
	}
	if _, err := c.Download(ctx, Model, "org/tok", "", "tokenizer_config.json"); err == nil {
		t.Error("hub down, file not cached: want error")
	}
}

func TestFromEnv(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "token"), []byte("hf_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:9/")
	t.Setenv("HF_HUB_OFFLINE", "1")
	c := FromEnv(nil)
	if c.CacheDir != filepath.Join(home, "hub") || c.Token != "hf_file" || c.Endpoint != "http://127.0.0.1:9" || !c.Offline {
		t.Errorf("FromEnv() = %+v", c)
	}
	t.Setenv("HF_HUB_CACHE", "/x/cache")
	t.Setenv("HF_TOKEN", "hf_env")
	t.Setenv("HF_HUB_OFFLINE", "0")
	c = FromEnv(nil)
	if c.CacheDir != "/x/cache" || c.Token != "hf_env" || c.Offline {
		t.Errorf("FromEnv() = %+v", c)
	}
}
