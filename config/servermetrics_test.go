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
		// Values of parameters named like credentials are hidden, the
		// others and the order kept.
		"http://h/m?name[]=x&api_key=sk-1&Token=t2&sig=a%2Fb&n": "http://h/m?name[]=x&api_key=xxxxx&Token=xxxxx&sig=xxxxx&n",
		"http://u:p@h/m?access%5Ftoken=z&a=1":                   "http://u:xxxxx@h/m?access%5Ftoken=xxxxx&a=1",
		"http://h/m?%zz=leak":                                   "http://h/m?%zz=xxxxx",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestQuerySecretsHidden: a credential in a server_metrics query, an OAuth2
// token_url query or endpoint_params shows in neither the rendered config
// (as /config serves it: Redacted, then the redactor) nor redacted text.
func TestQuerySecretsHidden(t *testing.T) {
	const (
		inQuery  = "sm-query-secret-1a2b"
		inToken  = "tokenurl-secret-3c4d"
		inParams = "assertion-secret-5e6f"
	)
	c, err := Parse([]byte(`
targets:
  - name: a
    url: http://127.0.0.1:8000
    backend: openai-chat
    modules: [m]
    server_metrics: ["http://127.0.0.1:8000/metrics?access_token=` + inQuery + `&x=1"]
    http_client_config:
      oauth2:
        client_id: c
        client_secret: s3cr3t-0000
        token_url: "http://127.0.0.1:9/token?api-key=` + inToken + `"
        endpoint_params:
          client_assertion: ` + inParams + `
          audience: public-audience
modules:
  m: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	red := NewRedactor(c)
	shown := red.Redact(string(out))
	for _, s := range []string{inQuery, inToken, inParams} {
		if strings.Contains(shown, s) {
			t.Errorf("the rendered config shows %q:\n%s", s, shown)
		}
		line := `Get "http://127.0.0.1/?k=` + s + `": connection refused`
		if got := red.Redact(line); strings.Contains(got, s) {
			t.Errorf("Redact(%q) = %q", line, got)
		}
	}
	if !strings.Contains(shown, "public-audience") {
		t.Errorf("the rendered config hides a parameter that is not a credential:\n%s", shown)
	}
	if _, err := Parse([]byte(shown)); err != nil {
		t.Errorf("Parse(rendered config) = %v", err)
	}
}

func TestRedactorWithHeaders(t *testing.T) {
	red := (*Redactor)(nil).WithHeaders(map[string]string{"Authorization": "Bearer sk-bench-9876", "X-Trace": "visible-value"})
	for in, want := range map[string]string{
		"you sent: Authorization: Bearer sk-bench-9876": "you sent: Authorization: <secret>",
		"bad key sk-bench-9876":                         "bad key <secret>",
		"trace visible-value":                           "trace visible-value",
	} {
		if got := red.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
