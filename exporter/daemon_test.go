package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The planted secret: it must never come out of any endpoint.
const plantedToken = "sk-planted-SECRET-4242"

// wordTokenizer counts words; enough for the fixed dataset.
type wordTokenizer struct{}

func (wordTokenizer) Encode(s string, _ bool) ([]int, error) {
	return make([]int, len(strings.Fields(s))), nil
}
func (wordTokenizer) Decode([]int, bool) (string, error) { return "", errors.New("no decode") }
func (wordTokenizer) NumSpecialTokensToAdd() int         { return 0 }
func (wordTokenizer) VocabSize() int                     { return 0 }

// testBuilder builds probes as prober.NewProbeBuilder does in what these
// tests look at (the module's request options, the model detected when
// none is configured, errors redacted), with one fixed prompt and a word
// tokenizer, so that these tests load no dataset or tokenizer.
func testBuilder() ProbeBuilder {
	return func(t config.Target, name string, m config.Module) (prober.ProbeFunc, error) {
		info, err := prober.LookupBackend(t.Backend)
		if err != nil {
			return nil, err
		}
		client, err := prober.NewClient(&t, prober.ClientOptions{Concurrency: max(t.MaxInFlight, 1)})
		if err != nil {
			return nil, err
		}
		red := config.NewRedactor(&config.Config{Targets: []config.Target{t}, Modules: map[string]config.Module{name: m}})
		text := m.Prompt
		if text == "" {
			text = "hello there"
		}
		prompt := datasets.Prompt{Text: text, OutputLen: m.OutputLen}
		return func(ctx context.Context, _ log.Logger) prober.Result {
			p := prober.Prober{Client: client, Backend: info.New(), Name: t.Backend, Options: prober.ModuleOptions(t, m),
				Counter: prober.TokenizerCounter{Tokenizer: wordTokenizer{}}, Target: t.Name, Module: name,
				Limits: prober.Limits{MaxEventBytes: t.MaxEventBytes, MaxResponseBytes: t.MaxResponseBytes}}
			if t.Model == "" {
				p.Options.Model, _ = prober.DetectModel(ctx, client, t.URL)
			}
			r := p.Run(ctx, prompt, time.Time{})
			r.Err = red.Redact(r.Err)
			return r
		}, nil
	}
}

// startSim serves the simulator on loopback with fast, fixed latencies.
func startSim(t *testing.T) string {
	t.Helper()
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 5*time.Millisecond, 0, time.Millisecond, 0
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

const configTmpl = `
targets:
  - name: sim
    url: SIM_URL
    backend: vllm-chat
    model: servingprobe-sim
    modules: [short]
    interval: 200ms
    timeout: 2s
    http_client_config:
      authorization:
        credentials: PLANTED
  - name: down
    url: DOWN_URL
    backend: vllm
    model: m
    modules: [short]
    interval: 200ms
    timeout: 1s
EXTRA
modules:
  short:
    dataset: fixed
    prompt: "hello there"
    output_len: 4
probe_api:
  allow_adhoc_targets: ADHOC
  adhoc_url_allowlist: ['http://127\.0\.0\.1:\d+']
`

type fixture struct {
	t       *testing.T
	path    string
	simURL  string
	downURL string
	d       *Daemon
	srv     *httptest.Server
	cancel  context.CancelFunc
	done    chan error
}

func (f *fixture) write(extra string, adhoc bool) {
	f.t.Helper()
	s := strings.NewReplacer("SIM_URL", f.simURL, "DOWN_URL", f.downURL, "PLANTED", plantedToken,
		"EXTRA", extra, "ADHOC", map[bool]string{true: "true", false: "false"}[adhoc]).Replace(configTmpl)
	if err := os.WriteFile(f.path, []byte(s), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func newFixture(t *testing.T, adhoc bool) *fixture {
	t.Helper()
	return newFixtureAt(t, adhoc, startSim(t))
}

// newFixtureAt is newFixture with the sim target at simURL.
func newFixtureAt(t *testing.T, adhoc bool, simURL string) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "c.yml"), simURL: simURL, downURL: closedPort(t)}
	f.write("", adhoc)
	d, err := New(Options{ConfigFile: f.path, BuildProbe: testBuilder(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.d = d
	f.srv = httptest.NewServer(d.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.done = make(chan error, 1)
	go func() { f.done <- d.Run(ctx) }()
	t.Cleanup(f.stop)
	return f
}

func (f *fixture) stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	if err := <-f.done; err != nil {
		f.t.Errorf("Run = %v", err)
	}
	f.cancel = nil
	f.srv.Close()
}

func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *fixture) post(path string) (int, string) {
	f.t.Helper()
	resp, err := http.Post(f.srv.URL+path, "", nil)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond; real sockets are involved, and a loaded machine under
// -race may take many seconds, so this waits up to a minute: the bound only
// ends a broken test, it asserts nothing about speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDaemonProbesAndSurvivesDownTarget: the simulator target succeeds,
// the closed port counts as connect_error, and both keep being probed.
func TestDaemonProbesAndSurvivesDownTarget(t *testing.T) {
	f := newFixture(t, false)
	m := f.d.Metrics()
	ok := func() float64 {
		return testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "success"))
	}
	down := func() float64 {
		return testutil.ToFloat64(m.requests.WithLabelValues("down", "short", "m", "probe", "connect_error"))
	}
	waitFor(t, "3 successes and 3 connect errors", func() bool { return ok() >= 3 && down() >= 3 })
	if got := testutil.ToFloat64(m.probeSuccess.WithLabelValues("down", "short", "m")); got != 0 {
		t.Errorf("probe_success of the down target = %v, want 0", got)
	}
	if got := testutil.ToFloat64(m.probeSuccess.WithLabelValues("sim", "short", "servingprobe-sim")); got != 1 {
		t.Errorf("probe_success of the simulator = %v, want 1", got)
	}
	if code, body := f.get("/-/ready"); code != 200 {
		t.Errorf("/-/ready = %d %q", code, body)
	}
	// The history keeps both, with the failure's error.
	_, body := f.get("/api/v1/results?target=down")
	var res struct{ Results []HistoryEntry }
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 || res.Results[0].Outcome != "connect_error" || res.Results[0].Error == "" {
		t.Errorf("history of the down target = %+v, want connect_error entries with an error", res.Results)
	}
	code, page := f.get("/")
	if code != 200 || !strings.Contains(page, "Recent results") || !strings.Contains(page, "connect_error") {
		t.Errorf("landing page (%d) lacks the recent results", code)
	}
	problems, err := testutil.GatherAndLint(f.d.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint %s: %s", p.Metric, p.Text)
	}
}

func TestReload(t *testing.T) {
	f := newFixture(t, false)
	m := f.d.Metrics()
	waitFor(t, "first probes", func() bool {
		return testutil.ToFloat64(m.requests.WithLabelValues("down", "short", "m", "probe", "connect_error")) >= 1
	})

	// Unchanged file: skipped.
	if code, body := f.post("/-/reload"); code != 200 || !strings.Contains(body, "unchanged") {
		t.Errorf("reload of an unchanged file = %d %q", code, body)
	}

	// Bad file: rejected, old config kept, gauge 0, the error names the file and the field.
	good, _ := os.ReadFile(f.path)
	if err := os.WriteFile(f.path, []byte(strings.Replace(string(good), "backend: vllm-chat", "backend: no-such-backend", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, body := f.post("/-/reload")
	if code != http.StatusInternalServerError || !strings.Contains(body, f.path) || !strings.Contains(body, "targets[0]") {
		t.Errorf("bad reload = %d %q, want 500 naming %s and targets[0]", code, body, f.path)
	}
	if got := testutil.ToFloat64(m.reloadSuccess); got != 0 {
		t.Errorf("reload gauge after a bad reload = %v, want 0", got)
	}
	if len(f.d.Config().Targets) != 2 {
		t.Errorf("running config changed by a bad reload")
	}

	// Good file removing "down" and adding "extra": series of "down" go away.
	before := testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "success"))
	f.write(`  - name: extra
    url: `+f.simURL+`
    backend: sglang
    model: servingprobe-sim
    modules: [short]
    interval: 200ms
`, false)
	cfg, _ := os.ReadFile(f.path)
	// Drop the "down" target block.
	s := string(cfg)
	i, j := strings.Index(s, "  - name: down"), strings.Index(s, "  - name: extra")
	if err := os.WriteFile(f.path, []byte(s[:i]+s[j:]), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := f.post("/-/reload"); code != 200 {
		t.Fatalf("good reload = %d %q", code, body)
	}
	// The reload has returned, so the loop of "down" should have exited:
	// any entry it adds to the history from here on has a higher ID.
	var lastID uint64
	for _, e := range f.d.History().List() {
		lastID = max(lastID, e.ID)
	}
	simAfterReload := testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "success"))
	if got := testutil.ToFloat64(m.reloadSuccess); got != 1 {
		t.Errorf("reload gauge after a good reload = %v, want 1", got)
	}
	_, metrics := f.get("/metrics")
	if strings.Contains(metrics, `target="down"`) {
		t.Errorf("series of the removed target are still exposed")
	}
	waitFor(t, "the added target to succeed", func() bool {
		return testutil.ToFloat64(m.requests.WithLabelValues("extra", "short", "servingprobe-sim", "probe", "success")) >= 1
	})
	// The unchanged target kept its loop: its counter was not reset.
	if got := testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "success")); got < before {
		t.Errorf("unchanged target's successes went from %v to %v", before, got)
	}
	// "down" probed on the same 200 ms interval as "sim": by the time
	// "sim" has finished three more probes (two intervals), a loop of
	// "down" still running would have probed and recorded again.
	waitFor(t, "three more probes of the unchanged target", func() bool {
		return testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "success")) >= simAfterReload+3
	})
	for _, e := range f.d.History().List() {
		if e.Target == "down" && e.ID > lastID {
			t.Errorf("the removed target was probed after the reload returned: %+v", e)
			break
		}
	}
	// A late result of "down" must not re-create its series.
	if _, metrics := f.get("/metrics"); strings.Contains(metrics, `target="down"`) {
		t.Errorf("series of the removed target came back")
	}
}

func TestSecretsRedacted(t *testing.T) {
	f := newFixture(t, false)
	code, cfg := f.get("/config")
	if code != 200 || !strings.Contains(cfg, "<secret>") || !strings.Contains(cfg, "servingprobe-sim") {
		t.Errorf("/config = %d %q, want the config with <secret>", code, cfg)
	}
	code, debug := f.get("/probe?target=sim&debug=true")
	if code != 200 || !strings.Contains(debug, "servingprobe_probe_success 1") || !strings.Contains(debug, "Logs for the probe") {
		t.Errorf("/probe?debug=true = %d %q", code, debug)
	}
	if code, body := f.get("/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ = %d %.80q", code, body)
	}
	if code, _ := f.get("/debug/pprof/cmdline"); code == 200 {
		t.Errorf("/debug/pprof/cmdline is served; the command line is not exposed")
	}
	waitFor(t, "a history entry", func() bool { return len(f.d.History().List()) > 2 })
	for _, path := range []string{"/config", "/probe?target=sim&debug=true", "/probe?target=down&debug=true", "/api/v1/results", "/", "/metrics"} {
		if _, body := f.get(path); strings.Contains(body, plantedToken) {
			t.Errorf("%s leaks the planted bearer token", path)
		}
	}
	// The redactor itself, on text a library might produce.
	red := config.NewRedactor(f.d.Config())
	if got := red.Redact("Authorization: Bearer " + plantedToken); strings.Contains(got, plantedToken) {
		t.Errorf("redact() = %q", got)
	}
}

func TestProbeEndpoint(t *testing.T) {
	f := newFixture(t, true)
	tests := []struct {
		name, query string
		code        int
		want        string
	}{
		{"configured target", "target=sim&module=short", 200, "servingprobe_probe_success 1"},
		{"configured target, default module", "target=sim", 200, "servingprobe_probe_success 1"},
		{"down target", "target=down", 200, "servingprobe_probe_success 0"},
		{"down target outcome", "target=down", 200, `servingprobe_probe_outcome{outcome="connect_error"} 1`},
		{"ad-hoc URL allowed", "target=" + f.simURL + "&backend=sglang&module=short&model=servingprobe-sim", 200, "servingprobe_probe_success 1"},
		{"ad-hoc URL not allowed", "target=http://10.0.0.1:8000&backend=vllm&module=short", 403, "adhoc_url_allowlist"},
		{"ad-hoc URL with credentials", "target=http://u:p@127.0.0.1:1&backend=vllm&module=short", 403, "credentials"},
		{"ad-hoc URL without backend", "target=" + f.simURL + "&module=short", 400, "backend"},
		{"unknown module", "target=sim&module=nope", 400, "unknown module"},
		{"no target", "", 400, "target parameter is missing"},
		{"unknown name", "target=nope", 400, "unknown target"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := f.get("/probe?" + tc.query)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("/probe?%s = %d %q, want %d containing %q", tc.query, code, body, tc.code, tc.want)
			}
		})
	}
}

func TestProbeAdhocDisabled(t *testing.T) {
	f := newFixture(t, false)
	code, body := f.get("/probe?target=" + f.simURL + "&backend=vllm&module=short")
	if code != http.StatusForbidden || !strings.Contains(body, "allow_adhoc_targets") {
		t.Errorf("ad-hoc probe with the API off = %d %q, want 403", code, body)
	}
}

func TestHistoryKeepsFailures(t *testing.T) {
	h := NewHistory(3)
	h.Add(HistoryEntry{Target: "f1", Success: false})
	for range 5 {
		h.Add(HistoryEntry{Target: "ok", Success: true})
	}
	got := h.List()
	if len(got) != 4 || got[3].Target != "f1" || got[0].ID != 6 {
		t.Errorf("List() = %+v, want 3 recent successes (newest first) and the old failure", got)
	}
}

// TestQuerySecretsRedacted: credentials in a query string (a server_metrics
// URL, an OAuth2 token_url) or in OAuth2 endpoint_params show in neither
// /config nor /probe?debug=true nor the history, where the failed token
// request's error quotes the token URL.
func TestQuerySecretsRedacted(t *testing.T) {
	const (
		inMetrics = "sm-token-PLANTED-q1"
		inToken   = "tokenurl-PLANTED-q2"
		inParams  = "assertion-PLANTED-q3"
	)
	f := newFixture(t, false)
	f.write(`  - name: qs
    url: `+f.simURL+`
    backend: vllm-chat
    model: servingprobe-sim
    modules: [short]
    interval: 1h
    timeout: 2s
    server_metrics: ["`+f.simURL+`/metrics?access_token=`+inMetrics+`"]
    http_client_config:
      oauth2:
        client_id: c
        client_secret: oauth-client-secret-q4
        token_url: "`+f.downURL+`/token?api_key=`+inToken+`"
        endpoint_params:
          client_assertion: `+inParams+`
          audience: public-audience
`, false)
	if code, body := f.post("/-/reload"); code != 200 {
		t.Fatalf("reload = %d %q", code, body)
	}
	code, cfg := f.get("/config")
	if code != 200 || !strings.Contains(cfg, "access_token=xxxxx") || !strings.Contains(cfg, "public-audience") {
		t.Errorf("/config = %d, want the server_metrics query hidden and the audience shown:\n%s", code, cfg)
	}
	if code, debug := f.get("/probe?target=qs&debug=true"); code != 200 || !strings.Contains(debug, "outcome: connect_error") {
		t.Errorf("/probe?debug=true = %d, want the failed token request:\n%s", code, debug)
	}
	if _, results := f.get("/api/v1/results?target=qs"); !strings.Contains(results, `api_key=\u003csecret\u003e`) {
		t.Errorf("/api/v1/results has no token request error with the key hidden:\n%s", results)
	}
	for _, path := range []string{"/config", "/probe?target=qs&debug=true", "/api/v1/results", "/"} {
		_, body := f.get(path)
		if i := strings.Index(body, "PLANTED"); i >= 0 {
			t.Errorf("%s shows a query secret: …%s…", path, body[max(0, i-80):min(len(body), i+30)])
		}
	}
}
