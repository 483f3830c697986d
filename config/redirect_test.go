package config

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
)

func TestCheckRedirect(t *testing.T) {
	check := CheckRedirect(3)
	for _, tc := range []struct {
		from, to string
		via      int
		want     error
	}{
		{"http://h:8000/v1/x", "http://h:8000/v2/x", 1, nil},
		{"http://H:8000/v1/x", "http://h:8000/v2/x", 1, nil},
		{"http://h/v1/x", "https://h/v1/x", 1, nil},           // upgrade, default ports
		{"http://h:8443/v1/x", "https://h:8443/v1/x", 1, nil}, // upgrade, same port
		{"https://h/v1/x", "http://h/v1/x", 1, ErrRedirectOffHost},
		{"http://h:8000/v1/x", "http://h:8001/v1/x", 1, ErrRedirectOffHost},
		{"http://h:8000/v1/x", "http://evil:8000/v1/x", 1, ErrRedirectOffHost},
		{"http://h/v1/x", "http://h.evil/v1/x", 1, ErrRedirectOffHost},
		{"http://h:8000/v1/x", "http://h:8000/v1/x", 3, ErrTooManyRedirects},
	} {
		from, _ := url.Parse(tc.from)
		to, _ := url.Parse(tc.to)
		via := make([]*http.Request, tc.via)
		for i := range via {
			via[i] = &http.Request{URL: from}
		}
		if err := check(&http.Request{URL: to}, via); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("CheckRedirect(%s -> %s, %d before) = %v, want %v", tc.from, tc.to, tc.via, err, tc.want)
		}
	}
}
