package simulator

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLiveOffByDefault(t *testing.T) {
	s, err := New(DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{http.MethodGet, http.MethodPut} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(m, "/admin/live", strings.NewReader(`{"fail_ratio":1}`)))
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s /admin/live without --sim.admin: status %d, want 404", m, rec.Code)
		}
	}
	if got := s.Live(); got != (Live{}) {
		t.Errorf("live settings changed without the admin endpoint: %+v", got)
	}
}

func TestLiveEndpoint(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Admin = true
	cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 100*time.Millisecond, 0, 10*time.Millisecond, 0
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func(body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/admin/live", strings.NewReader(body)))
		return rec
	}
	for _, bad := range []string{`{"ttft_factor":-1}`, `{"fail_ratio":1.5}`, `{"ttft_factor":1e9}`, `{"nope":1}`, `{`} {
		if rec := put(bad); rec.Code != http.StatusBadRequest {
			t.Errorf("PUT %s: status %d, want 400", bad, rec.Code)
		}
	}
	if got := s.Live(); got != (Live{}) {
		t.Fatalf("a refused PUT changed the settings: %+v", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if d := s.ttftDelay(rng, 0); d != 100*time.Millisecond {
		t.Errorf("TTFT before any change = %v, want 100ms", d)
	}
	if rec := put(`{"ttft_factor":3,"itl_factor":2,"fail_ratio":1}`); rec.Code != http.StatusOK {
		t.Fatalf("PUT: status %d: %s", rec.Code, rec.Body)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/live", nil))
	if want := `{"ttft_factor":3,"itl_factor":2,"fail_ratio":1}`; strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("GET = %s, want %s", rec.Body, want)
	}
	if d := s.ttftDelay(rng, 0); d != 300*time.Millisecond {
		t.Errorf("TTFT with factor 3 = %v, want 300ms", d)
	}
	if d := s.stepDelay(rng, 1); d != 20*time.Millisecond {
		t.Errorf("decode step with factor 2 = %v, want 20ms", d)
	}
	f, apiErr := s.pickFault(httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil), rng)
	if apiErr != nil || f != Fault503 {
		t.Errorf("fault with fail_ratio 1 = %q, %v; want 503", f, apiErr)
	}
}
