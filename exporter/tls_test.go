package exporter

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestTLSExpiryFollowsEndpoint: the TLS expiry gauge describes the
// certificate chain of the endpoint that sent it. A reload that keeps the
// endpoint keeps it; one that turns the target from https to http (which
// never sends another) or points it at another host deletes it; a target
// reloaded back to https gets it again from its next response over TLS.
func TestTLSExpiryFollowsEndpoint(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	series := func(endpoint string) []TargetSeries {
		return []TargetSeries{
			{Name: "t", Backend: "vllm", Model: "x", Modules: []string{"m"}, Endpoint: endpoint},
			{Name: "other", Backend: "vllm", Model: "x", Modules: []string{"m"}, Endpoint: "https://other:443"},
		}
	}
	overTLS := func(target string) {
		r := successResult(target, "m", "x")
		r.TLSCertExpiry = t0.Add(30 * 24 * time.Hour)
		m.Observer(ModeProbe).Observe(r)
	}
	// targets lists the targets with an expiry series, without creating one.
	targets := func() map[string]bool {
		ch := make(chan prometheus.Metric, 8)
		m.tlsExpiry.Collect(ch)
		close(ch)
		out := map[string]bool{}
		for metric := range ch {
			var d dto.Metric
			if err := metric.Write(&d); err != nil {
				t.Fatal(err)
			}
			out[d.GetLabel()[0].GetValue()] = true
		}
		return out
	}

	m.SetTargets(series("https://vllm:443"))
	overTLS("t")
	overTLS("other")
	if n := testutil.CollectAndCount(m.tlsExpiry); n != 2 {
		t.Fatalf("after responses over TLS: %d expiry series, want 2", n)
	}
	for _, step := range []struct {
		name, endpoint string
		observe        bool
		wantT          bool
	}{
		{"same endpoint reloaded", "https://vllm:443", false, true},
		{"https to http", "http://vllm:8000", false, false},
		{"http answers without TLS", "http://vllm:8000", false, false},
		{"back to https, next response over TLS", "https://vllm:443", true, true},
		{"another https host", "https://vllm-b:443", false, false},
	} {
		m.SetTargets(series(step.endpoint))
		if step.observe {
			overTLS("t")
		}
		if got := targets(); got["t"] != step.wantT || !got["other"] {
			t.Errorf("%s: expiry series of %v, want t %v and other", step.name, got, step.wantT)
		}
	}
}
