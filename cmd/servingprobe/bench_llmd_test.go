package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/internal/testing/llmtest"
)

func llmdSim(t *testing.T) string { return llmtest.LLMDSim(t) }

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
