package exporter

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestServerMetricsConfigReload: a target's server_metrics take effect on
// reload, /config shows them with the password hidden, and a bad value is
// refused with its path while the running config keeps the old one.
func TestServerMetricsConfigReload(t *testing.T) {
	const password = "pa55-metrics"
	good := "http://scraper:" + password + "@127.0.0.1:9/metrics"
	f := newFixture(t, false)
	m := f.d.Metrics()

	f.write(`    server_metrics: ["`+good+`"]`, false)
	if code, body := f.post("/-/reload"); code != http.StatusOK {
		t.Fatalf("reload with server_metrics = %d %q", code, body)
	}
	down, _ := f.d.Config().Target("down")
	if got := down.ServerMetricsURLs(); !slices.Equal(got, []string{good}) {
		t.Fatalf("server_metrics after reload = %q, want [%q]", got, good)
	}
	_, cfg := f.get("/config")
	if strings.Contains(cfg, password) || !strings.Contains(cfg, "http://scraper:xxxxx@127.0.0.1:9/metrics") {
		t.Errorf("/config does not show the server_metrics URL with its password hidden:\n%s", cfg)
	}

	f.write(`    server_metrics: ["ftp://127.0.0.1:9/metrics"]`, false)
	code, body := f.post("/-/reload")
	if code != http.StatusInternalServerError || !strings.Contains(body, f.path) ||
		!strings.Contains(body, `targets[1].server_metrics[0]: scheme must be http or https, got "ftp"`) {
		t.Errorf("reload with a bad server_metrics = %d %q, want 500 naming %s and the field", code, body, f.path)
	}
	if got := testutil.ToFloat64(m.reloadSuccess); got != 0 {
		t.Errorf("reload gauge after a bad reload = %v, want 0", got)
	}
	down, _ = f.d.Config().Target("down")
	if got := down.ServerMetricsURLs(); !slices.Equal(got, []string{good}) {
		t.Errorf("server_metrics after a bad reload = %q, want the old [%q] kept", got, good)
	}
}
