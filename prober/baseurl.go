package prober

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/servingprobe/servingprobe/config"
)

// NormalizeBaseURL checks that raw is an http(s) URL and returns the base
// that backends append their paths to: without a trailing slash, and
// without a trailing /v1. OpenAI's and ollama's documentation give the
// base URL with its API version (http://host:11434/v1), while every path
// here is written from the server's root (/v1/chat/completions), so the
// version would be doubled and the server would answer a bare 404.
func NormalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q: want an http(s) URL such as http://127.0.0.1:8000", quoteURL(raw))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: a base URL takes no query or fragment", quoteURL(raw))
	}
	s := strings.TrimRight(raw, "/")
	s = strings.TrimSuffix(s, "/v1")
	return s, nil
}

// quoteURL is raw as an error may show it: redacted (a query may carry a
// key, userinfo a password). A string that does not parse is shown as it
// is, the typo being the point of the message (127.0.0.1:8000 without a
// scheme), unless it has a query or userinfo.
func quoteURL(raw string) string {
	if _, err := url.Parse(raw); err != nil && !strings.ContainsAny(raw, "?@") {
		return raw
	}
	return config.RedactURL(raw)
}
