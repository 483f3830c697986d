package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/servingprobe/servingprobe/testkit/external"
)

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs `servingprobe args...` in-process until the test ends,
// and fails the test if it does not exit 0 on cancellation.
func startServe(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var stderr bytes.Buffer
	go func() {
		defer close(done)
		if code := run(ctx, args, strings.NewReader(""), io.Discard, &stderr); code != 0 {
			t.Errorf("servingprobe %v exited %d: %s", args, code, stderr.String())
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("serve did not stop within 10 s of cancellation")
		}
	})
}

type client struct {
	t          *testing.T
	base       string
	user, pass string
}

func (c client) do(method, path string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitMetric polls /metrics until it contains want (real sockets: 20 s).
func (c client) waitMetric(want string) string {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := c.do("GET", "/metrics")
		if code == 200 && strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no %q in /metrics after 20 s (last status %d)", want, code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeBasicAuth: with --web.config.file requiring basic auth, every
// route refuses an unauthenticated request, including the ones that
// generate load on targets.
func TestServeBasicAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret-pass"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webCfg, []byte("basic_auth_users:\n  admin: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startServe(t, "serve", "--demo", "--web.listen-address="+addr, "--web.config.file="+webCfg)
	anon := client{t: t, base: "http://" + addr}
	authed := client{t: t, base: "http://" + addr, user: "admin", pass: "s3cret-pass"}
	authed.waitMetric(`servingprobe_requests_total{mode="probe",model="servingprobe-sim",module="chat-short",outcome="success",target="sim-vllm-chat"} 1`)

	for _, r := range []struct{ method, path string }{
		{"GET", "/metrics"}, {"GET", "/"}, {"GET", "/config"}, {"GET", "/probe?target=sim-vllm-chat"},
		{"GET", "/api/v1/results"}, {"POST", "/-/reload"}, {"GET", "/-/healthy"},
	} {
		if code, _ := anon.do(r.method, r.path); code != http.StatusUnauthorized {
			t.Errorf("unauthenticated %s %s = %d, want 401", r.method, r.path, code)
		}
	}
	wrong := client{t: t, base: "http://" + addr, user: "admin", pass: "nope"}
	if code, _ := wrong.do("GET", "/metrics"); code != http.StatusUnauthorized {
		t.Errorf("wrong password on /metrics = %d, want 401", code)
	}
	if code, body := authed.do("GET", "/probe?target=sim-vllm-chat&module=chat-short"); code != 200 || !strings.Contains(body, "servingprobe_probe_success 1") {
		t.Errorf("authenticated /probe = %d %q", code, body)
	}
}

// TestServeDemoPromtool: a full scrape of the demo passes `promtool check
// metrics` without a single complaint.
func TestServeDemoPromtool(t *testing.T) {
	promtool := external.Program(t, "promtool")
	addr := freeAddr(t)
	startServe(t, "serve", "--demo", "--web.listen-address="+addr)
	c := client{t: t, base: "http://" + addr}
	body := c.waitMetric(`outcome="success",target="sim-sglang"} 1`)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	if code, _ := c.do("GET", "/-/ready"); code != 200 {
		t.Errorf("/-/ready = %d", code)
	}
}

func TestDaemonGCPercent(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if pct, ok := daemonGCPercent(env(nil)); !ok || pct != daemonGOGC || pct >= 100 {
		t.Errorf("GOGC unset: got %d, %v; want %d (below Go's 100), true", pct, ok, daemonGOGC)
	}
	for _, v := range []string{"100", "off", ""} {
		if pct, ok := daemonGCPercent(env(map[string]string{"GOGC": v})); ok {
			t.Errorf("GOGC=%q: serve would override it with %d", v, pct)
		}
	}
}

// TestServePortTaken: a taken port is reported against the flag that
// chose it, once, not as "serve: serve: listen tcp ...".
func TestServePortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := runCLI(t, "serve", "--demo", "--web.listen-address="+ln.Addr().String())
	if code == 0 {
		t.Fatal("serve exited 0 on a taken port")
	}
	want := "servingprobe serve: --web.listen-address=" + ln.Addr().String() + ": listen tcp"
	if !strings.Contains(stderr, want) || strings.Contains(stderr, "serve: serve:") {
		t.Errorf("stderr lacks %q (or repeats serve:):\n%s", want, stderr)
	}
}

// TestServeWithoutConfigPointsAtDemo: serve with no config file says how
// to try it without one, instead of a bare "no such file".
func TestServeWithoutConfigPointsAtDemo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "servingprobe.yml")
	code, _, stderr := runCLI(t, "serve", "--config.file", missing, "--web.listen-address", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "no such file") || !strings.Contains(stderr, "serve --demo") {
		t.Errorf("exit %d, want a failure that points at serve --demo:\n%s", code, stderr)
	}
}
