package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestServerMetricsParsed: a target's server_metrics decode in order,
// no_server_metrics on its own is valid, and absent keys leave both unset
// (a bench then tries the target URL's /metrics).
func TestServerMetricsParsed(t *testing.T) {
	c, err := Parse([]byte(`
targets:
  - name: named
    url: http://127.0.0.1:8000
    backend: vllm
    modules: [m]
    server_metrics: [http://127.0.0.1:8000/metrics, "https://engine-1:9100/metrics?x=1"]
  - name: off
    url: http://127.0.0.1:8001
    backend: vllm
    modules: [m]
    no_server_metrics: true
  - name: default
    url: http://127.0.0.1:8002
    backend: vllm
    modules: [m]
modules:
  m: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	named, _ := c.Target("named")
	if diff := cmp.Diff([]string{"http://127.0.0.1:8000/metrics", "https://engine-1:9100/metrics?x=1"}, named.ServerMetricsURLs()); diff != "" {
		t.Errorf("named.ServerMetricsURLs() mismatch (-want +got):\n%s", diff)
	}
	off, _ := c.Target("off")
	if !off.NoServerMetrics || off.ServerMetricsURLs() != nil {
		t.Errorf("off = %v/%v, want no_server_metrics and no URLs", off.NoServerMetrics, off.ServerMetricsURLs())
	}
	def, _ := c.Target("default")
	if def.NoServerMetrics || def.ServerMetricsURLs() != nil {
		t.Errorf("default = %v/%v, want neither set", def.NoServerMetrics, def.ServerMetricsURLs())
	}
}

// TestServerMetricsPasswordRedacted: a password in a server_metrics URL
// (the reads' only way to carry credentials) never shows in /config's
// rendering nor passes the redactor, and the rendering still loads.
func TestServerMetricsPasswordRedacted(t *testing.T) {
	const secret = "s3cret-metrics-pw"
	c, err := Parse([]byte(`
targets:
  - name: a
    url: http://127.0.0.1:8000
    backend: vllm
    modules: [m]
    server_metrics: ["http://scraper:` + secret + `@127.0.0.1:8000/metrics"]
modules:
  m: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Targets[0].ServerMetricsURLs()[0]; !strings.Contains(got, secret) {
		t.Fatalf("ServerMetricsURLs()[0] = %q, want the password kept in memory for the reads", got)
	}
	out, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), secret) {
		t.Errorf("Redacted() leaks the server_metrics password:\n%s", out)
	}
	if !strings.Contains(string(out), "http://scraper:xxxxx@127.0.0.1:8000/metrics") {
		t.Errorf("Redacted() does not show the URL with its password as xxxxx:\n%s", out)
	}
	if _, err := Parse(out); err != nil {
		t.Errorf("Parse(Redacted()) = %v", err)
	}
	line := "Server metrics not read url=http://scraper:" + secret + "@127.0.0.1:8000/metrics"
	if got := NewRedactor(c).Redact(line); strings.Contains(got, secret) {
		t.Errorf("Redact(%q) = %q, the password passes", line, got)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:p4ss@h:1/metrics": "http://u:xxxxx@h:1/metrics",
		"http://u@h/metrics":        "http://u@h/metrics",
		"http://h/metrics?a=b":      "http://h/metrics?a=b",
		"http://[::1":               "<unparseable URL>",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
