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

	"github.com/servingprobe/servingprobe/benchrun"
)

// E2EPoint is one end-to-end run of the real bench command.
type E2EPoint struct {
	Requests, Streams int
	Stats             string // exact or sketch
	// Dataset is random (the default) or random-ids; InputLen its prompt
	// tokens (default 128).
	Dataset  string
	InputLen int
	// Compat is a --compat value for the bench child ("" for none):
	// random-lengths gives random-ids prompts as bench_serving makes them,
	// the measure of what exact lengths cost.
	Compat string
	// StartOnly stops the run after a second of requests (--max-duration):
	// the point measures how soon the first request goes out, not the run.
	StartOnly bool
}

func (p E2EPoint) dataset() string {
	if p.Dataset == "" {
		return "random"
	}
	return p.Dataset
}

// label names the point's prompts in the table: the dataset, and its
// --compat value if any.
func (p E2EPoint) label() string {
	if p.Compat != "" {
		return p.dataset() + " --compat " + p.Compat
	}
	return p.dataset()
}

func (p E2EPoint) inputLen() int {
	if p.InputLen == 0 {
		return 128
	}
	return p.InputLen
}

// E2EResult is what one point measured: the bench child's whole-process
// resource use (getrusage of the child, which covers everything it did:
// preparing prompts, the run, the summary, the JSONL) and how long after
// its start the measured run began.
type E2EResult struct {
	Wall, CPU time.Duration
	// FirstRequest is from the child's start to its "Benchmark started"
	// log line, less bench_serving's fixed pause before the measured run
	// (benchrun.WarmupPause): resolving the server and tokenizer, and
	// preparing the prompts, or the first of them when they are made on
	// demand.
	FirstRequest time.Duration
	MaxRSS       int64 // bytes
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
	args := []string{"bench", "--backend", "vllm", "--base-url", base, "--model", simModel,
		"--dataset-name", p.dataset(), "--random-input-len", strconv.Itoa(p.inputLen()), "--random-output-len", strconv.Itoa(outputTokens),
		"--random-range-ratio", "1", "--num-prompts", strconv.Itoa(p.Requests), "--max-concurrency", strconv.Itoa(p.Streams),
		"--request-rate", "inf", "--warmup-requests", "0", "--stats", p.Stats, "--strict-json",
		"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10"}
	if p.StartOnly {
		args = append(args, "--max-duration", "1s")
	}
	if p.Compat != "" {
		args = append(args, "--compat", p.Compat)
	}
	cmd := h.command(ctx, "0", args...)
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
			first = time.Since(start) - benchrun.WarmupPause
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
