package servermetrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/servingprobe/servingprobe/config"
)

// TestFetchRedirectStaysOnHost: a server_metrics endpoint whose URL carries
// credentials and that redirects to another host does not get that host a
// request; a redirect on its own host is followed.
func TestFetchRedirectStaysOnHost(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		otherHits.Add(1)
		_, _ = w.Write([]byte("up 1\n"))
	}))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/metrics", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("up 1\n")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	withCreds := strings.Replace(srv.URL, "http://", "http://scraper:pw-redirect-0001@", 1)

	_, err := Fetch(t.Context(), nil, withCreds+"/away", 0)
	if !errors.Is(err, config.ErrRedirectOffHost) {
		t.Errorf("Fetch(/away) = %v, want ErrRedirectOffHost", err)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other host got %d requests, want 0", n)
	}
	if _, err := Fetch(t.Context(), nil, withCreds+"/moved", 0); err != nil {
		t.Errorf("Fetch(/moved) = %v, want the same-host redirect followed", err)
	}
}
