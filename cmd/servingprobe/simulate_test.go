package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestSimulateChatStream runs the simulate subcommand on a real loopback port
// and reads a chat stream as any client would. Real sockets, so the timing
// checks are floors only.
func TestSimulateChatStream(t *testing.T) {
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"simulate", "--web.listen-address=" + addr,
			"--sim.ttft=200ms", "--sim.ttft-jitter=0s", "--sim.prefill-per-token=0s",
			"--sim.itl=20ms", "--sim.itl-jitter=0s"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("simulate exited %d: %s", code, stderr.String())
		}
	}()
	url := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/v1/models")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("simulator did not come up: %v; stderr: %s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	const maxTokens = 25
	body := fmt.Sprintf(`{"model":"servingprobe-sim","messages":[{"role":"user","content":"hello there"}],"max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, maxTokens)
	sent := time.Now()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var arrivals []time.Time
	var usage struct {
		CompletionTokens int `json:"completion_tokens"`
	}
	sawDone := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			sawDone = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		if chunk.Usage != nil {
			usage.CompletionTokens = chunk.Usage.CompletionTokens
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			arrivals = append(arrivals, time.Now())
		}
	}
	if !sawDone {
		t.Error("stream ended without [DONE]")
	}
	if len(arrivals) != maxTokens || usage.CompletionTokens != maxTokens {
		t.Fatalf("got %d content chunks and usage %d, want %d of each", len(arrivals), usage.CompletionTokens, maxTokens)
	}
	// The flags reached the server: its defaults (50 ms TTFT, 10 ms ITL)
	// would come in well under these floors, which a busy machine can
	// only exceed, never undercut (a little slack for clock granularity).
	// No ceiling: how much later a shared machine delivers says nothing
	// about the wiring. The pace itself is simulator's (TestLatencyModel
	// checks it exactly in a synctest bubble, and TestAddFlags the
	// flags' values).
	ttft := arrivals[0].Sub(sent)
	if ttft < 195*time.Millisecond {
		t.Errorf("TTFT = %v, want at least the configured 200ms", ttft)
	}
	meanITL := arrivals[len(arrivals)-1].Sub(arrivals[0]) / time.Duration(len(arrivals)-1)
	if meanITL < 18*time.Millisecond {
		t.Errorf("mean ITL = %v, want at least the configured 20ms", meanITL)
	}
}
