package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// llmdSim returns llm-d-inference-sim v0.10.2 as the prober's test finds
// it: $SERVINGPROBE_LLMD_SIM, or built from the tools module (2-4 minutes
// the first time; the Go build cache makes later builds fast).
func llmdSim(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SERVINGPROBE_LLMD_SIM"); p != "" {
		return p
	}
	if testing.Short() {
		t.Skip("-short: not building llm-d-inference-sim (set SERVINGPROBE_LLMD_SIM to run this test)")
	}
	bin := filepath.Join(t.TempDir(), "llm-d-inference-sim")
	cmd := exec.Command("go", "build", "-C", filepath.Join("..", "..", "tools"), "-o", bin, "github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build llm-d-inference-sim: %v\n%s", err, out)
	}
	return bin
}

// TestBenchEndToEndLLMD runs the same bench as TestBenchEndToEndSimulator
// against a third-party vLLM simulator.
func TestBenchEndToEndLLMD(t *testing.T) {
	bin := llmdSim(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cmd := exec.CommandContext(ctx, bin, "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--port", strconv.Itoa(port),
		"--mode", "random", "--time-to-first-token", "20ms", "--inter-token-latency", "2ms",
		"--force-dummy-tokenizer", "--max-num-seqs", "64")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/models")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("llm-d-inference-sim not ready after 60 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	benchE2E(t, base)
}
