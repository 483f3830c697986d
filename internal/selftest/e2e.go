package selftest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// E2EPoint is one end-to-end run of the real bench command.
type E2EPoint struct {
	Requests, Streams int
	Stats             string // exact or sketch
}

// E2EResult is what one point measured: the bench child's whole-process
// resource use (getrusage of the child, which covers everything it did:
// preparing prompts, the run, the summary, the JSONL) and how long after
// its start the measured run began.
type E2EResult struct {
	Wall, CPU    time.Duration
	FirstRequest time.Duration // child start to the "Benchmark started" log line
	MaxRSS       int64         // bytes
	OutputTokens int
	Completed    int
}

// e2e runs `servingprobe bench` as a user would, pinned like the client
// children, against a coalescing simulator child: 128 prompt and OutputTokens
// output tokens per request, every request at once under the concurrency
// cap, no warm-up (bench_serving's fixed 1 s pause after warm-up remains,
// inside FirstRequest).
func (h *harness) e2e(ctx context.Context, p E2EPoint, outputTokens int) (E2EResult, error) {
	base, stop, err := h.server(ctx, ServerSpec{Coalesce: true})
	if err != nil {
		return E2EResult{}, err
	}
	defer stop()
	dir, err := os.MkdirTemp("", "selftest-e2e-")
	if err != nil {
		return E2EResult{}, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out.jsonl")
	cmd := h.command(ctx, "0", "bench", "--backend", "vllm", "--base-url", base, "--model", simModel,
		"--dataset-name", "random", "--random-input-len", "128", "--random-output-len", strconv.Itoa(outputTokens),
		"--random-range-ratio", "1", "--num-prompts", strconv.Itoa(p.Requests), "--max-concurrency", strconv.Itoa(p.Streams),
		"--request-rate", "inf", "--warmup-requests", "0", "--stats", p.Stats, "--strict-json",
		"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return E2EResult{}, err
	}
	cmd.Stdout = io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return E2EResult{}, err
	}
	var first time.Duration
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if first == 0 && strings.Contains(line, `msg="Benchmark started"`) {
			first = time.Since(start)
		}
		fmt.Fprintln(h.log, line)
	}
	if err := cmd.Wait(); err != nil {
		return E2EResult{}, fmt.Errorf("bench child: %w", err)
	}
	r := E2EResult{Wall: time.Since(start), FirstRequest: first}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPU = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
		r.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return r, err
	}
	var rec struct {
		Completed         int `json:"completed"`
		TotalOutputTokens int `json:"total_output_tokens"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return r, fmt.Errorf("bench record: %w", err)
	}
	r.Completed, r.OutputTokens = rec.Completed, rec.TotalOutputTokens
	return r, nil
}
