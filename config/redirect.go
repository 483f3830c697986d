package config

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Errors of CheckRedirect. Both are an HTTP answer (a 3xx not followed),
// not a connection failure.
var (
	// ErrRedirectOffHost: a redirect to another host, or from https to http.
	ErrRedirectOffHost = errors.New("redirect to another host not followed")
	// ErrTooManyRedirects: more redirects than allowed (a loop).
	ErrTooManyRedirects = errors.New("too many redirects")
)

// CheckRedirect is the redirect policy of every client that carries
// configured credentials or headers (targets, bench, server_metrics reads),
// for http.Client.CheckRedirect. It follows at most maxRedirects redirects, and only
// on the host of the first request: net/http drops Authorization and
// Cookie on a redirect to another domain, but re-sends every other header
// of the request, and a RoundTripper that adds credentials
// (prometheus/common's authorization, basic_auth, http_headers and oauth2)
// adds them to the redirected request too, whatever its host. An https
// request redirected to http would send them in clear, so that is refused
// as well.
func CheckRedirect(maxRedirects int) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, len(via))
		}
		if len(via) > 0 && !sameHost(via[0].URL, req.URL) {
			// net/http's error names the new location.
			return fmt.Errorf("%w (configured credentials and headers would go with it; point the URL at that host)", ErrRedirectOffHost)
		}
		return nil
	}
}

// sameHost reports whether to is on from's host: the same host name
// (case-insensitive) and port, where an http to https upgrade may move
// from the default port 80 to the default port 443. https to http is not.
func sameHost(from, to *url.URL) bool {
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	fs, ts := strings.ToLower(from.Scheme), strings.ToLower(to.Scheme)
	switch {
	case fs == ts:
		return effectivePort(from) == effectivePort(to)
	case fs == "http" && ts == "https":
		return effectivePort(from) == effectivePort(to) || (effectivePort(from) == "80" && effectivePort(to) == "443")
	default:
		return false
	}
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
