package selftest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// TestScenariosInProcess runs each client scenario, briefly, against a
// simulator in this process: the harness works end to end. It asserts
// counts and shapes, never timings.
func TestScenariosInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	for _, c := range []struct {
		server ServerSpec
		client ClientSpec
		check  func(t *testing.T, r ClientResult)
	}{
		{ServerSpec{Coalesce: true}, ClientSpec{Scenario: "capacity", Streams: 2, Duration: 100 * time.Millisecond, OutputTokens: 16},
			func(t *testing.T, r ClientResult) {
				if r.Requests == 0 || r.Failed != 0 || r.Tokens != int64(16*r.Requests) {
					t.Errorf("capacity: %d requests, %d failed, %d tokens", r.Requests, r.Failed, r.Tokens)
				}
			}},
		{ServerSpec{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, TruthSize: fidelityTruthSize(3, 2)},
			ClientSpec{Scenario: "fidelity", Streams: 3, Requests: 2, OutputTokens: 5, StaggerOver: 9 * time.Millisecond}, checkFidelity},
		{ServerSpec{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, TruthSize: fidelityTruthSize(3, 2)},
			ClientSpec{Scenario: "fidelity", Streams: 3, Requests: 2, OutputTokens: 5, Start: StartBurst}, checkFidelity},
		{ServerSpec{TTFT: time.Minute}, ClientSpec{Scenario: "memory", Streams: 5, OutputTokens: 4},
			func(t *testing.T, r ClientResult) {
				if r.Open != 5 || r.RSSOpen == 0 {
					t.Errorf("memory: %+v", r)
				}
			}},
		{ServerSpec{Coalesce: true}, ClientSpec{Scenario: "arrival", Rate: 200, Duration: 250 * time.Millisecond, OutputTokens: 2},
			func(t *testing.T, r ClientResult) {
				if r.Requests != 50 || r.Failed != 0 || r.Lag.N != 50 || len(r.HeapAfterGC) != 2 {
					t.Errorf("arrival: %+v", r)
				}
			}},
	} {
		t.Run(c.client.Scenario+c.client.Start, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stdinR, stdinW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- Serve(ctx, c.server, stdinR, outW) }()
			line, err := bufio.NewReader(outR).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			c.client.BaseURL = "http://" + strings.TrimPrefix(strings.TrimSpace(line), "listening ")
			var buf bytes.Buffer
			if err := RunClient(ctx, c.client, &buf); err != nil {
				t.Fatal(err)
			}
			var r ClientResult
			if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
				t.Fatalf("%v: %s", err, buf.String())
			}
			if r.Err != "" {
				t.Fatal(r.Err)
			}
			c.check(t, r)
			stdinW.Close()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
}

// checkFidelity: every measured request is matched to its truth, and the
// selftest server's stamped connections fill the decomposition (a read and
// a write stamp for each request and token chunk) and report its CPU.
func checkFidelity(t *testing.T, r ClientResult) {
	t.Helper()
	if r.Requests != 6 || r.Failed != 0 || r.Mismatched != 0 || r.TTFTErr.N != 6 || r.ITLErr.N != 6*4 || r.OldITLErr.N != 6*4 {
		t.Errorf("fidelity: %+v", r)
	}
	if r.ReqPath.N != 6 || r.Send.N != 6 || r.HandlerLag.N != 6 || r.FirstDelivery.N != 6 || r.Delivery.N != 6*5 || r.StampLag.N != 6*5 {
		t.Errorf("fidelity decomposition: %+v", r)
	}
	if r.LoadWall <= 0 || r.ClientCPU <= 0 || r.ServerCPU <= 0 {
		t.Errorf("fidelity load %v, client CPU %v, server CPU %v; want all > 0", r.LoadWall, r.ClientCPU, r.ServerCPU)
	}
	// The measured requests' events at least; lead-in and tail add theirs.
	if r.Events < 6*5 || r.Events%5 != 0 {
		t.Errorf("fidelity load events = %d, want a multiple of 5 and at least 30", r.Events)
	}
}
