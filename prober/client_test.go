package prober

import (
	"net/http"
	"testing"

	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/config"
)

func TestNewClientTunesTransport(t *testing.T) {
	tgt := &config.Target{Name: "t", HTTPClientConfig: promconfig.DefaultHTTPClientConfig}
	c, err := NewClient(tgt, ClientOptions{Concurrency: 4096, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("Transport = %T, want *http.Transport", c.Transport)
	}
	if tr.MaxIdleConnsPerHost < 4096 || tr.MaxConnsPerHost != 0 || !tr.DisableCompression || tr.DisableKeepAlives {
		t.Errorf("transport: idle/host %d, conns/host %d, compression off %v, keep-alives off %v; want >= 4096, 0, true, false",
			tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost, tr.DisableCompression, tr.DisableKeepAlives)
	}
	if tr.Protocols == nil || !tr.Protocols.UnencryptedHTTP2() {
		t.Error("H2C: unencrypted HTTP/2 not enabled")
	}

	// With auth the transport is wrapped; h2c is refused rather than ignored.
	auth := &config.Target{Name: "a", HTTPClientConfig: promconfig.HTTPClientConfig{BearerToken: "secret"}}
	if _, err := NewClient(auth, ClientOptions{H2C: true}); err == nil {
		t.Error("NewClient(auth, H2C) succeeded, want an error")
	}
}
