package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/servingprobe/servingprobe/tokenizer/hub"
)

// Resolve turns a --tokenizer value into a tokenizer. spec is, in order:
//   - DefaultName ("embedded:qwen3"): the tokenizer built into the binary;
//   - an existing file or directory: loaded with Load;
//   - a hub model id, optionally with a revision ("Qwen/Qwen3-0.6B",
//     "gpt2@main"): tokenizer.json and, if the repo has one,
//     tokenizer_config.json are fetched through h (nil means hub.FromEnv)
//     and loaded from the cache.
//
// "server" (the target's /tokenize endpoint) is not resolved here: it needs
// a target; use NewServer.
func Resolve(ctx context.Context, spec string, h *hub.Client) (*Tokenizer, error) {
	if spec == "" {
		return nil, errors.New("tokenizer: empty spec")
	}
	if spec == DefaultName {
		return Default()
	}
	path, err := localPath(ctx, spec, h)
	if err != nil {
		return nil, err
	}
	return Load(path)
}

// localPath is the local file or directory spec names: spec itself when it
// exists, else the tokenizer.json of a hub model, downloaded through h.
func localPath(ctx context.Context, spec string, h *hub.Client) (string, error) {
	if _, err := os.Stat(spec); err == nil {
		return spec, nil
	}
	repo, rev, _ := strings.Cut(spec, "@")
	if !hub.ValidRepoID(repo) || strings.HasPrefix(spec, ".") || filepath.IsAbs(spec) {
		return "", fmt.Errorf("tokenizer %q: no such file or directory, and not a hub id", spec)
	}
	if h == nil {
		h = hub.FromEnv(nil)
	}
	tokPath, err := h.Download(ctx, hub.Model, repo, rev, TokenizerFile)
	if err != nil {
		return "", fmt.Errorf("tokenizer %q: %w", spec, err)
	}
	// tokenizer_config.json is optional; Load picks it up next to
	// tokenizer.json in the snapshot.
	if _, err := h.Download(ctx, hub.Model, repo, rev, TokenizerConfigFile); err != nil && !errors.Is(err, hub.ErrNotFound) && !errors.Is(err, hub.ErrOffline) {
		return "", fmt.Errorf("tokenizer %q: %w", spec, err)
	}
	return tokPath, nil
}
