package prober

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
)

// headerRecorder is a server that records the headers of every request
// and answers with a good stream.
type headerRecorder struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.seen = append(h.seen, r.Header.Clone())
	h.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
}

func (h *headerRecorder) requests() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen
}

// TestRedirectKeepsCredentialsOnHost: a target that answers 307 to another
// host must not get that host a request carrying the configured bearer
// token, http_headers secret or module header; the probe is an http_4xx
// that says why. A redirect on the same host is still followed, with them.
func TestRedirectKeepsCredentialsOnHost(t *testing.T) {
	const bearer, apiKey, custom = "sk-bearer-redirect-1", "sk-apikey-redirect-2", "custom-header-value-3"
	other := &headerRecorder{}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	same := &headerRecorder{}
	mux := http.NewServeMux()
	mux.HandleFunc("/away/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherSrv.URL+"/v1/chat/completions?x=1", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/moved/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/here/v1/chat/completions", http.StatusTemporaryRedirect)
	})
	mux.Handle("/here/", same)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	hc := promconfig.DefaultHTTPClientConfig
	hc.Authorization = &promconfig.Authorization{Type: "Bearer", Credentials: bearer}
	hc.HTTPHeaders = &promconfig.Headers{Headers: map[string]promconfig.Header{"X-Api-Key": {Secrets: []promconfig.Secret{apiKey}}}}
	for _, tc := range []struct {
		path       string
		wantOther  int
		wantSame   int
		wantResult Outcome
	}{
		{"/away", 0, 0, OutcomeHTTP4xx},
		{"/moved", 0, 1, OutcomeSuccess},
	} {
		t.Run(tc.path, func(t *testing.T) {
			before := len(same.requests())
			tgt := &config.Target{Name: "t", URL: srv.URL + tc.path, HTTPClientConfig: hc}
			c, err := NewClient(tgt, ClientOptions{Concurrency: 1})
			if err != nil {
				t.Fatal(err)
			}
			info, _ := LookupBackend("openai-chat")
			p := Prober{Client: c, Backend: info.New(), Name: "openai-chat",
				Options: RequestOptions{BaseURL: tgt.URL, Model: "m", Stream: true, Headers: map[string]string{"X-Custom": custom}}}
			res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 1}, time.Time{})
			if res.Outcome != tc.wantResult {
				t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Err, tc.wantResult)
			}
			if got := len(other.requests()); got != tc.wantOther {
				t.Errorf("the other host got %d requests, want %d: %v", got, tc.wantOther, other.requests())
			}
			if got := len(same.requests()) - before; got != tc.wantSame {
				t.Fatalf("the same host's new path got %d requests, want %d", got, tc.wantSame)
			}
			if tc.wantSame > 0 {
				h := same.requests()[before]
				if h.Get("Authorization") != "Bearer "+bearer || h.Get("X-Api-Key") != apiKey || h.Get("X-Custom") != custom {
					t.Errorf("a same-host redirect lost the configured headers: %v", h)
				}
			}
			if tc.wantOther == 0 && tc.wantSame == 0 {
				if !strings.Contains(res.Err, config.ErrRedirectOffHost.Error()) {
					t.Errorf("error %q does not say the redirect to another host was not followed", res.Err)
				}
			}
		})
	}
}
