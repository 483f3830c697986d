package prober

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/servingprobe/servingprobe/config"
)

// NormalizeBaseURL is config.NormalizeBaseURL, the one base-URL rule of
// the daemon's targets and the CLI's --url and --base-url, with its error
// quoting raw as a flag's error may (redacted): it checks that raw is an
// http(s) URL and returns the base that backends append their paths to,
// without a trailing slash and without a trailing /v1.
func NormalizeBaseURL(raw string) (string, error) {
	u, err := config.NormalizeBaseURL(raw)
	if err != nil {
		return "", fmt.Errorf("%q: %w", quoteURL(raw), err)
	}
	return u, nil
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
