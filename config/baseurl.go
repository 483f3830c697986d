package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// NormalizeBaseURL is the one rule for a server's base URL, the daemon's
// target url and the CLI's --url and --base-url alike: an http(s) URL with
// a host and no query or fragment. It returns the base that backends
// append their paths to: without a trailing slash and without a trailing
// /v1. OpenAI's SDKs, vLLM's and ollama's documentation give the base URL
// with its API version (http://host:8000/v1), while every path here is
// written from the server's root (/v1/chat/completions), so the version
// would be doubled and the server would answer a bare 404.
//
// Its errors say what is wrong without quoting raw, which may carry a
// credential; the caller names the field or flag.
func NormalizeBaseURL(raw string) (string, error) {
	if err := checkHTTPURL(raw); err != nil {
		return "", err
	}
	if u, _ := url.Parse(raw); u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		// Backends append their paths to the base URL, so a query would
		// end up inside the path; and a key in a query would show
		// wherever the URL does.
		return "", errors.New("must not contain a query or fragment: paths are appended to a base URL; send an API key as a header (http_client_config)")
	}
	return strings.TrimSuffix(strings.TrimRight(raw, "/"), "/v1"), nil
}

// checkHTTPURL says what keeps raw from being an http(s) URL with a host,
// in words that quote nothing of it but a scheme, or a corrected spelling
// of a URL without credentials or query.
func checkHTTPURL(raw string) error {
	if raw == "" {
		return errors.New("must be set")
	}
	if !strings.Contains(raw, "://") {
		// 127.0.0.1:8000 or vllm:8000: url.Parse reads "vllm" as a scheme,
		// or fails on the colon; either way the scheme is what is missing.
		fixed := "http://" + raw
		if u, err := url.Parse(fixed); err == nil && u.Host != "" && u.User == nil && u.RawQuery == "" && !strings.ContainsAny(raw, "@?#") {
			return fmt.Errorf("missing scheme, write %s", fixed)
		}
		return errors.New("missing scheme and host, write a URL such as http://127.0.0.1:8000")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Not the parser's message: it quotes the whole URL, which may
		// carry a credential. Its kind of fault is kept, without the
		// quoted part ("invalid port", "missing ']' in host").
		kind := err.Error()
		if ue, ok := errors.AsType[*url.Error](err); ok {
			kind = ue.Err.Error()
		}
		kind, _, _ = strings.Cut(kind, `"`)
		return fmt.Errorf("not a valid URL (%s)", strings.TrimSpace(strings.TrimPrefix(kind, "net/url: ")))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("must include a host")
	}
	return nil
}

// baseURL applies k.BaseURL, or NormalizeBaseURL when k has none.
func (k Checks) baseURL(backend, raw string) (string, error) {
	if k.BaseURL != nil {
		return k.BaseURL(backend, raw)
	}
	return NormalizeBaseURL(raw)
}
