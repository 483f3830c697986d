package runner

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// gaugeTransport answers every request with vLLM's queue gauges and
// counts them: no socket, so a look that bypassed it could not succeed.
type gaugeTransport struct {
	running string
	calls   atomic.Int32
}

func (g *gaugeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	g.calls.Add(1)
	body := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running " + g.running +
		"\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 0\n"
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain; version=0.0.4"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// TestIdleLookUsesTheRunsClient: the idle wait reads the server's queue
// gauges through the client the run reads its metrics with
// (Env.ServerMetrics.Client), and tells a busy server from an idle one by
// them, without a probe request.
func TestIdleLookUsesTheRunsClient(t *testing.T) {
	for _, tc := range []struct {
		running string
		want    idleState
	}{{"0", idleYes}, {"3", idleBusy}} {
		tr := &gaugeTransport{running: tc.running}
		iw := &idleWatch{p: &Prepared{Spec: Spec{ServerMetrics: []string{"http://metrics.invalid/metrics"}}}, client: &http.Client{Transport: tr}}
		if got := iw.look(t.Context()); got != tc.want || tr.calls.Load() != 1 {
			t.Errorf("running %s: look = %v after %d reads through the run's client, want %v after 1", tc.running, got, tr.calls.Load(), tc.want)
		}
	}
}
