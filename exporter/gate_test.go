package exporter

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// countingTarget is an inference server on loopback that counts the
// requests reaching it and answers each with an error: the count is what
// the tests read.
func countingTarget(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.Error(w, "counted", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// serveGated serves a daemon (its probe loops not running, so only /probe
// sends requests) whose one target is a counting target, with a bench-like
// POST and DELETE registered through Handle; it returns the daemon's base
// URL, the target's request count and the count of requests that reached
// the bench-like handlers.
func serveGated(t *testing.T) (base string, target, bench *atomic.Int64) {
	t.Helper()
	srv, n := countingTarget(t)
	path := filepath.Join(t.TempDir(), "c.yml")
	cfg := strings.Replace(serverConfig, "http://127.0.0.1:1", srv.URL, 1)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{ConfigFile: path, BuildProbe: testBuilder(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	bench = &atomic.Int64{}
	count := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { bench.Add(1) })
	d.Handle("POST /api/v1/benches", count, "", "")
	d.Handle("DELETE /api/v1/benches/{id}", count, "", "")
	d.Handle("GET /api/v1/benches", count, "", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := d.NewServer(DefaultServerLimits)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = hs.Close()
		<-done
	})
	return "http://" + ln.Addr().String(), n, bench
}

// The gate: every route that makes load refuses a browser's cross-site
// request, whatever its method, with a JSON 403, and starts nothing; the
// same requests from curl, from Prometheus, from the daemon's own pages or
// from a typed URL pass. Read-only routes stay open.
func TestLoadGate(t *testing.T) {
	base, target, bench := serveGated(t)
	crossImg := map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
	// What Prometheus sends with a scrape: no Origin, no Sec-Fetch-*.
	prometheus := map[string]string{
		"Accept":                              "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1",
		"Accept-Encoding":                     "gzip",
		"User-Agent":                          "Prometheus/3.0.0",
		"X-Prometheus-Scrape-Timeout-Seconds": "10",
	}
	const probe = "/probe?target=a&module=short"
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		want                     int
		// sends: the request reaches the target (/probe) or the
		// bench-like handler.
		sends bool
	}{
		{"cross-site <img> GET /probe", "GET", probe, "", crossImg, 403, false},
		{"cross-site HEAD /probe", "HEAD", probe, "", crossImg, 403, false},
		{"same-site GET /probe", "GET", probe, "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, false},
		{"foreign Origin, no fetch metadata", "GET", probe, "", map[string]string{"Origin": "http://evil.example"}, 403, false},
		{"Origin null", "GET", probe, "", map[string]string{"Origin": "null"}, 403, false},
		{"curl GET /probe", "GET", probe, "", nil, 200, true},
		{"curl HEAD /probe", "HEAD", probe, "", nil, 200, true},
		{"Prometheus scrape of /probe", "GET", probe, "", prometheus, 200, true},
		{"landing page link (same-origin)", "GET", probe + "&debug=true", "", map[string]string{"Sec-Fetch-Site": "same-origin"}, 200, true},
		{"typed URL (none)", "GET", probe, "", map[string]string{"Sec-Fetch-Site": "none"}, 200, true},
		{"same Origin, no fetch metadata", "GET", probe, "", map[string]string{"Origin": base}, 200, true},
		{"cross-site pprof profile", "GET", "/debug/pprof/profile?seconds=1", "", crossImg, 403, false},
		{"cross-site pprof index", "GET", "/debug/pprof/", "", map[string]string{"Origin": "http://evil.example"}, 403, false},
		{"curl pprof index", "GET", "/debug/pprof/", "", nil, 200, false},
		{"cross-site reload", "POST", "/-/reload", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, false},
		{"curl reload", "POST", "/-/reload", "", nil, 200, false},
		{"cross-site bench POST", "POST", "/api/v1/benches", `{}`, map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, 403, false},
		{"text/plain bench POST from another site", "POST", "/api/v1/benches", `{}`, map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403, false},
		{"text/plain bench POST", "POST", "/api/v1/benches", `{}`, map[string]string{"Content-Type": "text/plain"}, 415, false},
		{"form bench POST", "POST", "/api/v1/benches", `a=b`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, false},
		{"untyped bench POST body", "POST", "/api/v1/benches", `{}`, nil, 415, false},
		{"cross-site bench DELETE", "DELETE", "/api/v1/benches/x", "", map[string]string{"Origin": "http://evil.example"}, 403, false},
		{"json bench POST", "POST", "/api/v1/benches", `{}`, map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200, true},
		{"same-origin json bench POST", "POST", "/api/v1/benches", `{}`, map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}, 200, true},
		{"curl bench DELETE", "DELETE", "/api/v1/benches/x", "", nil, 200, true},
		{"cross-site read of the bench list", "GET", "/api/v1/benches", "", crossImg, 200, true},
		{"cross-site read of /metrics", "GET", "/metrics", "", crossImg, 200, false},
		{"cross-site read of the landing page", "GET", "/", "", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 200, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sentBefore := target.Load() + bench.Load()
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.body == "" {
				req.Body = http.NoBody
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s = %d %s, want %d", tc.method, tc.path, resp.StatusCode, b, tc.want)
			}
			if sent := target.Load()+bench.Load() > sentBefore; sent != tc.sends {
				t.Errorf("%s %s reached the target or handler: %v, want %v", tc.method, tc.path, sent, tc.sends)
			}
			if tc.want == 403 || tc.want == 415 {
				checkJSONError(t, resp, b, tc.method)
			}
		})
	}
}

// checkJSONError checks that an error answer is {"error": "..."} as
// docs/api.md says (a HEAD answer has the type but no body).
func checkJSONError(t *testing.T, resp *http.Response, body []byte, method string) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	if method == http.MethodHead {
		return
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		t.Errorf("error body %q is not {\"error\": \"...\"}: %v", body, err)
	}
}

// The done-when of the gate, as the attack runs: a page's 400 <img>
// elements pointing at /probe make 400 cross-site GETs, and not one request
// reaches the target; one request without a browser's headers does.
func TestCrossSiteProbeStartsNoRequest(t *testing.T) {
	base, target, _ := serveGated(t)
	for range 400 {
		req, _ := http.NewRequest("GET", base+"/probe?target=a&module=short", nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Sec-Fetch-Dest", "image")
		req.Header.Set("Referer", "http://evil.example/")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site GET /probe = %d, want 403", resp.StatusCode)
		}
	}
	if n := target.Load(); n != 0 {
		t.Fatalf("400 cross-site GETs of /probe sent %d requests to the target, want 0", n)
	}
	resp, err := http.Get(base + "/probe?target=a&module=short")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The probe runs within the answer: its request has reached the
	// target by the time /probe answers.
	if n := target.Load(); resp.StatusCode != 200 || n != 1 {
		t.Fatalf("a GET /probe without browser headers = %d and sent %d requests, want 200 and 1", resp.StatusCode, n)
	}
}

// Every route of the daemon has a class, and the gate holds each to it: a
// cross-site request to a route that makes load is refused, one to a
// read-only route is not. The routes that send traffic are the ones
// listed here; a new route joins the enumeration by being registered.
func TestEveryRouteIsClassified(t *testing.T) {
	d, addr := serveLimited(t, DefaultServerLimits, func(d *Daemon) {
		h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
		d.Handle("POST /api/v1/benches", h, "", "")
		d.Handle("DELETE /api/v1/benches/{id}", h, "", "")
		d.Handle("GET /api/v1/benches/{id}", h, "", "")
		d.Handle("/x/any-method", h, "", "")
	})
	wantLoad := map[string]bool{
		"GET /probe": true, "POST /-/reload": true,
		"GET /debug/pprof/": true, "GET /debug/pprof/profile": true, "GET /debug/pprof/symbol": true, "GET /debug/pprof/trace": true,
		"POST /api/v1/benches": true, "DELETE /api/v1/benches/{id}": true, "/x/any-method": true,
	}
	if len(d.classes) < len(wantLoad)+6 {
		t.Errorf("%d routes registered, want every one of the daemon's: %v", len(d.classes), d.classes)
	}
	for pattern, class := range d.classes {
		if (class == makesLoad) != wantLoad[pattern] {
			t.Errorf("route %q is %s, want makes load: %v", pattern, class, wantLoad[pattern])
		}
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			method, path = "PUT", pattern
		}
		path = strings.ReplaceAll(strings.ReplaceAll(path, "{id}", "x"), "{$}", "")
		req, _ := http.NewRequest(method, "http://"+addr+path, http.NoBody)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "http://evil.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if refused := resp.StatusCode == http.StatusForbidden; refused != (class == makesLoad) {
			t.Errorf("cross-site %s %s = %d; the route %s", method, path, resp.StatusCode, class)
		}
	}
}

func TestWriteError(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		status int
		want   string
	}{
		{"target parameter is missing", 400, `{"error":"target parameter is missing"}`},
		{`unsupported Content-Type "text/plain"`, 415, `{"error":"unsupported Content-Type \"text/plain\""}`},
		{"header <secret> & more", 500, `{"error":"header <secret> & more"}`},
	} {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Length", "3")
		WriteError(rec, tc.msg, tc.status)
		if rec.Code != tc.status || strings.TrimSpace(rec.Body.String()) != tc.want {
			t.Errorf("WriteError(%q, %d) = %d %s, want %d %s", tc.msg, tc.status, rec.Code, rec.Body, tc.status, tc.want)
		}
		h := rec.Header()
		if h.Get("Content-Type") != "application/json" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Length") != "" {
			t.Errorf("WriteError(%q) headers = %v, want JSON, nosniff and no stale Content-Length", tc.msg, h)
		}
	}
}
