package runner

import (
	"bytes"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
)

// TestReadyCheckSaysWhy: nothing listening gives "connection refused" in
// the error, not the check's own deadline, and a line saying what is
// being waited for.
func TestReadyCheckSaysWhy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var logs bytes.Buffer
	err = readyCheck(t.Context(), &http.Client{}, "http://"+addr, "vllm", 1500*time.Millisecond, nil, nil, log.NewLogfmtLogger(&logs))
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "/v1/models") {
		t.Errorf("readyCheck error = %v, want the URL and connection refused", err)
	}
	if !strings.Contains(logs.String(), `msg="Waiting for the server"`) || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("no waiting line with the reason:\n%s", logs.String())
	}
}
