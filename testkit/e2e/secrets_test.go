package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/hostile"
)

// The planted secrets. Each has a distinctive word so that any part of one
// that leaks is found, and the basic-auth one is also looked for in the
// base64 form it takes in an Authorization header.
const (
	plantedBearer = "bearer-PLANTED-7f3a9c21"
	plantedBasic  = "basicpw-PLANTED-55e1d0"
	plantedAPIKey = "apikey-PLANTED-c0ffee99"
	// escapedToken is the bearer token of the targets that echo it back
	// \u-escaped, minus two characters and across the history's cut
	// (hostile.SecretEcho); any 8 bytes of it in an output are a leak.
	escapedToken = "sk-echo-5d8e0c7b1a9f3e6d2c4b0a8"
)

// TestSecretsNeverLeak runs the binary with debug logging and secrets in
// the config, against targets that echo the credentials they receive back
// in error bodies, stream errors and server info; exercises every endpoint;
// and greps every output channel: stdout, stderr, every HTTP body and every
// file in the results directory.
func TestSecretsNeverLeak(t *testing.T) {
	hs := hostile.NewServer()
	defer hs.Close()
	sim, stopSim, err := hostile.StartSimulator()
	if err != nil {
		t.Fatal(err)
	}
	defer stopSim()
	echo := hostile.NewSecretEcho(escapedToken)
	defer echo.Close()
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	bearer := "    http_client_config:\n      authorization:\n        type: Bearer\n        credentials: " + plantedBearer + "\n"
	basic := "    http_client_config:\n      basic_auth:\n        username: prober\n        password: " + plantedBasic + "\n"
	echoBearer := "    http_client_config:\n      authorization:\n        type: Bearer\n        credentials: " + escapedToken + "\n"
	apikey := "    http_client_config:\n      http_headers:\n        X-Api-Key:\n          secrets: [" + plantedAPIKey + "]\n"
	targets := []hostile.Target{
		{Name: "bearer_echo_401", URL: hs.URL(hostile.EchoAuth), Interval: 300 * time.Millisecond, Extra: bearer},
		{Name: "basic_echo_stream", URL: hs.URL(hostile.EchoAuthStream), Interval: 300 * time.Millisecond, Extra: basic},
		{Name: "apikey_echo_401", URL: hs.URL(hostile.EchoAuth), Interval: 300 * time.Millisecond, Extra: apikey},
		{Name: "apikey_echo_stream", URL: hs.URL(hostile.EchoAuthStream), Interval: 300 * time.Millisecond, Extra: apikey},
		{Name: "bearer_echo_info", URL: hs.URL(hostile.EchoAuthInfo), Interval: 300 * time.Millisecond, Extra: bearer},
		{Name: "basic_sim", URL: sim, Model: hostile.SimModel, Interval: 300 * time.Millisecond, Extra: basic},
		// No model configured: the daemon asks GET /v1/models, whose answer
		// names the model after the credentials, and the stream's
		// finish_reason echoes them too.
		{Name: "bearer_echo_models", URL: hs.URL(hostile.EchoAuthModels), DetectModel: true, Interval: 300 * time.Millisecond, Extra: bearer},
		{Name: "apikey_echo_models", URL: hs.URL(hostile.EchoAuthModels), DetectModel: true, Interval: 300 * time.Millisecond, Extra: apikey},
		// The token \u-escaped in server info, minus two characters as the
		// model id, and across byte 512 of the generated text.
		{Name: "escaped_echo_models", URL: echo.URL(), DetectModel: true, Interval: 300 * time.Millisecond, Extra: echoBearer},
		{Name: "escaped_echo_info", URL: echo.URL(), Interval: 300 * time.Millisecond, Extra: echoBearer},
	}
	extra := fmt.Sprintf("bench:\n  results_dir: %q\n  max_duration: 30s\nprobe_api:\n  allow_adhoc_targets: true\n  adhoc_url_allowlist: ['http://127\\.0\\.0\\.1:\\d+/f/ok']\n", results)
	cfgPath := filepath.Join(dir, "servingprobe.yml")
	if err := os.WriteFile(cfgPath, []byte(hostile.ConfigWithTokenizer(targets, extra, testTokenizer(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startDaemon(t, cfgPath, "--log.level=debug")
	defer func() {
		if p.cmd.ProcessState == nil {
			p.kill()
		}
	}()
	time.Sleep(1500 * time.Millisecond) // a few probes of every target

	var bodies []string
	get := func(method, path, body string) (int, string) {
		code, b := do(t, method, p.url(path), body)
		bodies = append(bodies, fmt.Sprintf("%s %s -> %d\n%s", method, path, code, b))
		return code, b
	}
	for _, path := range []string{"/", "/metrics", "/config", "/api/v1/results", "/-/healthy", "/-/ready",
		"/api/v1/results?outcome=http_4xx", "/probe?target=" + hs.URL(hostile.EchoAuth) + "&backend=openai-chat&debug=true"} {
		get("GET", path, "")
	}
	for _, tg := range targets {
		get("GET", "/probe?target="+tg.Name+"&debug=true", "")
		get("GET", "/probe?target="+tg.Name, "")
	}
	get("POST", "/-/reload", "")
	get("POST", "/api/v1/benches", `{"target":"bearer_echo_401","nope":1}`)
	get("POST", "/api/v1/benches", `{"target":"`+plantedBearer+`"}`) // a secret sent by a caller is echoed back to that caller only
	ids := map[string]string{}
	for _, target := range []string{"bearer_echo_401", "basic_echo_stream", "bearer_echo_info", "escaped_echo_info"} {
		code, b := get("POST", "/api/v1/benches", `{"target":"`+target+`","num_prompts":3,"request_rate":50,"warmup_requests":1,"max_duration":"10s"}`)
		if code != 202 {
			t.Fatalf("POST /api/v1/benches for %s: %d %s", target, code, b)
		}
		var v struct{ ID string }
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Fatal(err)
		}
		ids[target] = v.ID
		waitBench(t, p, v.ID, get)
	}
	get("GET", "/api/v1/benches", "")
	for _, id := range ids {
		get("GET", "/api/v1/benches/"+id, "")
		get("DELETE", "/api/v1/benches/"+id, "")
	}
	get("GET", "/", "")
	_, resultsAPI := get("GET", "/api/v1/results", "")
	_, metrics := get("GET", "/metrics", "")
	p.stop(t)

	// The echoing targets were measured, under model="" (the echoed id is
	// no model name), and their finish reason shows as "other".
	for _, name := range []string{"bearer_echo_models", "apikey_echo_models", "escaped_echo_models"} {
		re := regexp.MustCompile(`servingprobe_requests_total\{mode="probe",model="",module="probe",outcome="success",target="` + name + `"\} [1-9]`)
		if !re.MatchString(metrics) {
			t.Errorf("/metrics has no successful probe of %s under model=\"\"", name)
		}
	}
	if !strings.Contains(resultsAPI, `"finish_reason": "other"`) {
		t.Errorf("/api/v1/results shows no finish_reason \"other\" for the echoed one")
	}

	// The echoes must have carried the secrets, or the test proves nothing.
	if !hs.SawAuthorization(plantedBearer) || !hs.SawAuthorization("Basic ") {
		t.Fatal("the hostile server never saw the planted credentials")
	}
	if n := hs.Stats(hostile.EchoAuthModels).Requests; n < 4 {
		t.Fatalf("the model-echoing server answered %d requests, want at least 4 (model lists and probes)", n)
	}
	if info, models, streams, saw := echo.Served(); info < 1 || models < 1 || streams < 4 || !saw {
		t.Fatalf("the escaping server answered %d server infos, %d model lists, %d streams (token seen: %v); want 1, 1, 4 and true", info, models, streams, saw)
	}
	// The escaped echo reached the record, redacted: the test saw it.
	if b := bodiesOf(bodies, "/api/v1/benches/"+ids["escaped_echo_info"]); !strings.Contains(b, `Bearer \u003csecret\u003e`) && !strings.Contains(b, `Bearer <secret>`) {
		t.Errorf("GET /api/v1/benches/%s shows no redacted server_info echo", ids["escaped_echo_info"])
	}
	channels := map[string]string{"stdout": p.stdout.String(), "stderr": p.stderr.String(), "http": strings.Join(bodies, "\n\n")}
	files, _ := filepath.Glob(filepath.Join(results, "*"))
	hidden, _ := filepath.Glob(filepath.Join(results, ".*"))
	if len(files) < len(ids) {
		t.Errorf("results dir holds %d files, want at least %d", len(files), len(ids))
	}
	for _, f := range append(files, hidden...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		channels["file "+filepath.Base(f)] = string(b)
	}
	basic64 := base64.StdEncoding.EncodeToString([]byte("prober:" + plantedBasic))
	// The caller's own bench body naming a planted string as its target is
	// echoed back to that caller in the 400: not a leak of the config.
	channels["http"] = strings.ReplaceAll(channels["http"], `no configured target \"`+plantedBearer+`\"`, "")
	secrets := []string{plantedBearer, plantedBasic, plantedAPIKey, basic64, "PLANTED"}
	for i := 0; i+8 <= len(escapedToken); i++ {
		secrets = append(secrets, escapedToken[i:i+8]) // every 8-byte run of it
	}
	for name, text := range channels {
		for _, secret := range secrets {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%s holds planted secret %q: …%s…", name, secret, text[max(0, i-200):min(len(text), i+len(secret)+80)])
				break
			}
		}
	}
	if !strings.Contains(channels["stderr"], "level=debug") {
		t.Errorf("stderr has no debug line; the test did not run at debug level")
	}
}

func waitBench(t *testing.T, p *daemonProc, id string, get func(string, string, string) (int, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, b := do(t, "GET", p.url("/api/v1/benches/"+id), "")
		var v struct {
			Ended *time.Time `json:"ended"`
		}
		if json.Unmarshal([]byte(b), &v) == nil && v.Ended != nil {
			get("GET", "/api/v1/benches/"+id, "")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("bench %s did not end in 30 s", id)
}

// bodiesOf joins the recorded answers to requests whose path ends with
// suffix.
func bodiesOf(bodies []string, suffix string) string {
	var b strings.Builder
	for _, x := range bodies {
		if first, _, _ := strings.Cut(x, "\n"); strings.Contains(first, suffix+" ->") {
			b.WriteString(x)
		}
	}
	return b.String()
}
