package exporter

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-kit/log"
)

// TestV1TargetURLProbes: a target url written as OpenAI's SDKs and vLLM's
// docs write it (http://host:8000/v1) probes the server, as the CLI's
// --url does: the /v1 is the daemon's to append. /probe?debug=true names
// the path it requested, beside the base URL. The second target has no
// model: detection also reads from the base URL.
func TestV1TargetURLProbes(t *testing.T) {
	sim := startSim(t)
	for _, tc := range []struct{ name, url string }{
		{"v1", sim + "/v1"},
		{"v1 slash", sim + "/v1/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureAt(t, false, tc.url)
			f.write("  - {name: auto, url: \""+tc.url+"\", backend: openai-chat, modules: [short], interval: 1h}", false)
			if code, body := f.post("/-/reload"); code != http.StatusOK {
				t.Fatalf("reload = %d %q", code, body)
			}
			if got := f.d.Config().Targets[0].URL; got != sim {
				t.Errorf("loaded url = %q, want the base %q", got, sim)
			}
			for _, target := range []string{"sim", "auto"} {
				code, body := f.get("/probe?target=" + target + "&module=short&debug=true")
				if code != http.StatusOK || !strings.Contains(body, "outcome: success (HTTP 200)") {
					t.Errorf("/probe?target=%s = %d, want a success:\n%s", target, code, body)
				}
				if !strings.Contains(body, "request_path: /v1/chat/completions\n") {
					t.Errorf("/probe?target=%s&debug=true does not name the path requested:\n%s", target, body)
				}
			}
		})
	}
}

// syncBuffer is a bytes.Buffer the daemon's goroutines may log into.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBrokenReloadHidesSecrets: a reload of a file whose error sits on a
// credential's line (a syntax error there, a token of the wrong type)
// answers 500 with the line and the path, and neither the answer nor the
// log holds the token.
func TestBrokenReloadHidesSecrets(t *testing.T) {
	sim := startSim(t)
	good := strings.NewReplacer("SIM_URL", sim, "DOWN_URL", closedPort(t), "PLANTED", plantedToken,
		"EXTRA", "", "ADHOC", "false").Replace(configTmpl)
	for _, tc := range []struct {
		name, broken, want string
	}{
		{"syntax error", "        credentials: " + plantedToken + "\n       type: Bearer", "line 12: YAML syntax error"},
		{"wrong type", "        credentials: [" + plantedToken + "]", "line 12: targets[0].http_client_config.authorization.credentials: must be text"},
		{"unclosed quote", "        credentials: \"" + plantedToken, "YAML syntax error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yml")
			if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			d, err := New(Options{ConfigFile: path, BuildProbe: testBuilder(), Logger: log.NewLogfmtLogger(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(d.Handler())
			defer srv.Close()
			broken := strings.Replace(good, "        credentials: "+plantedToken, tc.broken, 1)
			if broken == good {
				t.Fatal("the template has no credentials line to break")
			}
			if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
				t.Fatal(err)
			}
			resp, err := http.Post(srv.URL+"/-/reload", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body.String(), tc.want) {
				t.Errorf("reload = %d %q, want 500 with %q", resp.StatusCode, body.String(), tc.want)
			}
			if strings.Contains(body.String(), plantedToken) {
				t.Errorf("reload's answer holds the token:\n%s", body.String())
			}
			if l := logs.String(); !strings.Contains(l, "Config reload failed") || strings.Contains(l, plantedToken) {
				t.Errorf("log = %q, want the failed reload without the token", l)
			}
		})
	}
}
