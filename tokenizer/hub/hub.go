package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/servingprobe/servingprobe/internal/envflag"
)

// RepoType is the kind of hub repository.
type RepoType string

// Repository kinds. Their URLs and cache folders differ.
const (
	Model   RepoType = "model"
	Dataset RepoType = "dataset"
)

// DefaultEndpoint is the public hub.
const DefaultEndpoint = "https://huggingface.co"

// ErrNotFound is returned (wrapped) when the hub answers 404 for a file.
var ErrNotFound = errors.New("not found on the hub")

// ErrOffline is returned (wrapped) when offline mode is on and the file is
// not in the cache.
var ErrOffline = errors.New("not in the hub cache and HF_HUB_OFFLINE is set")

// Client downloads hub files into the cache. The zero value is not useful;
// use FromEnv or set the fields.
type Client struct {
	HTTP     *http.Client
	Endpoint string // base URL, no trailing slash
	CacheDir string // the hub cache, e.g. ~/.cache/huggingface/hub
	Token    string // sent as "Authorization: Bearer"; empty for none
	Offline  bool   // serve from the cache only
}

// FromEnv configures a client as huggingface_hub does: HF_ENDPOINT,
// HF_HUB_CACHE (else $HF_HOME/hub, else ~/.cache/huggingface/hub),
// HF_TOKEN (else the token file $HF_HOME/token), HF_HUB_OFFLINE.
func FromEnv(client *http.Client) *Client {
	if client == nil {
		client = http.DefaultClient
	}
	c := &Client{HTTP: client, Endpoint: DefaultEndpoint}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		c.Endpoint = strings.TrimSuffix(e, "/")
	}
	home := os.Getenv("HF_HOME")
	if home == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			if h, err := os.UserHomeDir(); err == nil {
				base = filepath.Join(h, ".cache")
			}
		}
		home = filepath.Join(base, "huggingface")
	}
	c.CacheDir = os.Getenv("HF_HUB_CACHE")
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(home, "hub")
	}
	c.Token = os.Getenv("HF_TOKEN")
	if c.Token == "" {
		if b, err := os.ReadFile(filepath.Join(home, "token")); err == nil {
			c.Token = strings.TrimSpace(string(b))
		}
	}
	c.Offline = envflag.Truthy(os.Getenv("HF_HUB_OFFLINE"))
	return c
}

var (
	commitRe = regexp.MustCompile(`^[0-9a-f]{40}$`)
	repoRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)
)

// ValidRepoID reports whether id looks like a hub repository id ("gpt2",
// "Qwen/Qwen3-0.6B").
func ValidRepoID(id string) bool { return repoRe.MatchString(id) && !strings.Contains(id, "..") }

// RepoDir is the cache folder of a repository: models--org--name or
// datasets--org--name.
func (c *Client) RepoDir(t RepoType, repoID string) string {
	return filepath.Join(c.CacheDir, string(t)+"s--"+strings.ReplaceAll(repoID, "/", "--"))
}

// Download returns the local path of filename in repoID at revision
// ("" means "main"), fetching it into the cache unless it is there for the
// revision's current commit. Without network, or in offline mode, a cached
// copy is used; offline mode without one is ErrOffline.
func (c *Client) Download(ctx context.Context, t RepoType, repoID, revision, filename string) (string, error) {
	if t != Model && t != Dataset {
		return "", fmt.Errorf("hub: unsupported repo type %q", t)
	}
	if !ValidRepoID(repoID) {
		return "", fmt.Errorf("hub: invalid repo id %q", repoID)
	}
	if filename == "" || strings.HasPrefix(filename, "/") || strings.Contains(filename, "..") {
		return "", fmt.Errorf("hub: invalid filename %q", filename)
	}
	if revision == "" {
		revision = "main"
	}
	if c.Offline {
		if p, ok := c.cached(t, repoID, revision, filename); ok {
			return p, nil
		}
		return "", fmt.Errorf("hub: %s %s@%s %s: %w (cache %s)", t, repoID, revision, filename, ErrOffline, c.CacheDir)
	}
	commit, etag, err := c.head(ctx, t, repoID, revision, filename)
	if err != nil {
		var se *StatusError
		if !errors.As(err, &se) {
			// Unreachable hub (not an HTTP error): use the cache, as
			// huggingface_hub does.
			if p, ok := c.cached(t, repoID, revision, filename); ok {
				return p, nil
			}
		}
		return "", err
	}
	repoDir := c.RepoDir(t, repoID)
	snap := filepath.Join(repoDir, "snapshots", commit, filepath.FromSlash(filename))
	blob := filepath.Join(repoDir, "blobs", etag)
	if _, err := os.Stat(blob); err != nil {
		if err := c.fetch(ctx, t, repoID, commit, filename, blob); err != nil {
			return "", err
		}
	}
	if err := linkSnapshot(blob, snap); err != nil {
		return "", fmt.Errorf("hub: %w", err)
	}
	if revision != commit {
		if err := writeRef(repoDir, revision, commit); err != nil {
			return "", fmt.Errorf("hub: %w", err)
		}
	}
	return snap, nil
}

// cached finds filename in the snapshot revision points to.
func (c *Client) cached(t RepoType, repoID, revision, filename string) (string, bool) {
	repoDir := c.RepoDir(t, repoID)
	commit := revision
	if !commitRe.MatchString(revision) {
		b, err := os.ReadFile(filepath.Join(repoDir, "refs", filepath.FromSlash(revision)))
		if err != nil {
			return "", false
		}
		commit = strings.TrimSpace(string(b))
	}
	p := filepath.Join(repoDir, "snapshots", commit, filepath.FromSlash(filename))
	if _, err := os.Stat(p); err != nil {
		return "", false
	}
	return p, true
}

func (c *Client) url(t RepoType, repoID, revision, filename string) string {
	prefix := ""
	if t == Dataset {
		prefix = "datasets/"
	}
	return c.Endpoint + "/" + prefix + repoID + "/resolve/" + url.PathEscape(revision) + "/" + filename
}

func (c *Client) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	req.Header.Set("User-Agent", "servingprobe")
	return req, nil
}

// head reads the commit and blob id of a file. It follows only relative
// redirects (renamed repos), as huggingface_hub does: an absolute redirect
// points at the CDN (LFS files), whose headers do not carry the metadata.
func (c *Client) head(ctx context.Context, t RepoType, repoID, revision, filename string) (commit, etag string, err error) {
	u := c.url(t, repoID, revision, filename)
	hc := *c.HTTP
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 10 || req.Response == nil {
			return http.ErrUseLastResponse
		}
		if loc, err := url.Parse(req.Response.Header.Get("Location")); err != nil || loc.IsAbs() || loc.Host != "" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	req, err := c.newRequest(ctx, http.MethodHead, u)
	if err != nil {
		return "", "", fmt.Errorf("hub: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("hub: %w", err)
	}
	resp.Body.Close()
	if err := statusErr(resp, t, repoID, revision, filename); err != nil {
		return "", "", err
	}
	commit = resp.Header.Get("X-Repo-Commit")
	etag = resp.Header.Get("X-Linked-Etag") // LFS files: the sha256 of the content
	if etag == "" {
		etag = resp.Header.Get("ETag")
	}
	etag = strings.Trim(strings.TrimPrefix(etag, "W/"), `"`)
	if !commitRe.MatchString(commit) || etag == "" || strings.ContainsAny(etag, `/\`) || strings.Contains(etag, "..") {
		return "", "", fmt.Errorf("hub: %s: response lacks a valid X-Repo-Commit or ETag", u)
	}
	return commit, etag, nil
}

// StatusError is an HTTP error answer from the hub.
type StatusError struct {
	Code     int
	Type     RepoType
	RepoID   string
	Revision string
	Filename string
}

func (e *StatusError) Error() string {
	hint := ""
	switch e.Code {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (gated or private repository? set HF_TOKEN)"
	case http.StatusNotFound:
		hint = " (not found)"
	}
	return fmt.Sprintf("hub: %s %s@%s %s: HTTP %d%s", e.Type, e.RepoID, e.Revision, e.Filename, e.Code, hint)
}

// Is makes errors.Is(err, ErrNotFound) true for a 404.
func (e *StatusError) Is(target error) bool {
	return target == ErrNotFound && e.Code == http.StatusNotFound
}

func statusErr(resp *http.Response, t RepoType, repoID, revision, filename string) error {
	if resp.StatusCode < 400 {
		return nil
	}
	return &StatusError{Code: resp.StatusCode, Type: t, RepoID: repoID, Revision: revision, Filename: filename}
}

// fetch downloads into blob atomically (temp file, then rename).
func (c *Client) fetch(ctx context.Context, t RepoType, repoID, commit, filename, blob string) error {
	req, err := c.newRequest(ctx, http.MethodGet, c.url(t, repoID, commit, filename))
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer resp.Body.Close()
	if err := statusErr(resp, t, repoID, commit, filename); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(blob), filepath.Base(blob)+".*.incomplete")
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	tmp := f.Name()
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && resp.ContentLength >= 0 {
		if fi, serr := os.Stat(tmp); serr == nil && fi.Size() != resp.ContentLength {
			err = fmt.Errorf("short download: %d of %d bytes", fi.Size(), resp.ContentLength)
		}
	}
	if err == nil {
		err = os.Rename(tmp, blob)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: download %s: %w", filename, err)
	}
	return nil
}

// linkSnapshot points snapshots/<commit>/<file> at the blob with a relative
// symlink, as huggingface_hub does; where symlinks fail it copies.
func linkSnapshot(blob, snap string) error {
	if _, err := os.Stat(snap); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(snap), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(snap), blob)
	if err == nil && os.Symlink(rel, snap) == nil {
		return nil
	}
	src, err := os.Open(blob)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(snap)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func writeRef(repoDir, revision, commit string) error {
	p := filepath.Join(repoDir, "refs", filepath.FromSlash(revision))
	if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
