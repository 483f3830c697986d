package selftest

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/servingprobe/servingprobe/bench/runner"
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
	// TTFT and ITL, when TTFT is set, make the simulator a timed one that
	// flushes every token (a latency point, in the second table) instead
	// of the 0 ms coalescing one; OutputLen, when set, replaces the
	// section's output tokens.
	TTFT, ITL time.Duration
	OutputLen int
	// Loaded runs a busy loop pinned to the client's core, at the
	// client's niceness, for the whole point: the client shares its core.
	Loaded bool
	// Warmup is --warmup-requests (0 when not set): a latency point warms
	// one connection a stream, so that every measured request starts on a
	// connection in use, whose start the kernel stamps.
	Warmup int
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
	// (runner.WarmupPause): resolving the server and tokenizer, and
	// preparing the prompts, or the first of them when they are made on
	// demand.
	FirstRequest time.Duration
	MaxRSS       int64 // bytes
	OutputTokens int
	Completed    int
	// From the bench record: output tokens per second and TTFT
	// percentiles (milliseconds), as the bench computed them.
	OutputThroughput          float64
	MedianTTFTMs, P99TTFTMs   float64
	MedianQueueMs, P99QueueMs float64
	Clocks                    map[string]int // results by the clock that stamped them
}

// e2e runs `servingprobe bench` as a user would, pinned like the client
// children, against a coalescing simulator child: 128 prompt and OutputTokens
// output tokens per request, every request at once under the concurrency
// cap, no warm-up (bench_serving's fixed 1 s pause after warm-up remains,
// inside FirstRequest).
func (h *harness) e2e(ctx context.Context, p E2EPoint, outputTokens int) (E2EResult, error) {
	spec := ServerSpec{Coalesce: true}
	if p.TTFT > 0 {
		spec = ServerSpec{TTFT: p.TTFT, ITL: p.ITL}
	}
	if p.OutputLen > 0 {
		outputTokens = p.OutputLen
	}
	base, stop, err := h.server(ctx, spec)
	if err != nil {
		return E2EResult{}, err
	}
	defer stop()
	if p.Loaded {
		stopLoad, err := h.busyLoop(ctx, "0")
		if err != nil {
			return E2EResult{}, err
		}
		defer stopLoad()
	}
	dir, err := os.MkdirTemp("", "selftest-e2e-")
	if err != nil {
		return E2EResult{}, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out.jsonl")
	args := []string{"bench", "--backend", "vllm", "--base-url", base, "--model", simModel,
		"--dataset-name", p.dataset(), "--random-input-len", strconv.Itoa(p.inputLen()), "--random-output-len", strconv.Itoa(outputTokens),
		"--random-range-ratio", "1", "--num-prompts", strconv.Itoa(p.Requests), "--max-concurrency", strconv.Itoa(p.Streams),
		"--request-rate", "inf", "--warmup-requests", strconv.Itoa(p.Warmup), "--stats", p.Stats, "--strict-json",
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
			first = time.Since(start) - runner.WarmupPause
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
		Completed         int     `json:"completed"`
		TotalOutputTokens int     `json:"total_output_tokens"`
		OutputThroughput  float64 `json:"output_throughput"`
		MedianTTFTMs      float64 `json:"median_ttft_ms"`
		P99TTFTMs         float64 `json:"p99_ttft_ms"`
		SP                struct {
			MedianQueueMs float64        `json:"median_client_queue_ms"`
			P99QueueMs    float64        `json:"p99_client_queue_ms"`
			Clocks        map[string]int `json:"clocks"`
		} `json:"servingprobe"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return r, fmt.Errorf("bench record: %w", err)
	}
	r.Completed, r.OutputTokens, r.OutputThroughput = rec.Completed, rec.TotalOutputTokens, rec.OutputThroughput
	r.MedianTTFTMs, r.P99TTFTMs = rec.MedianTTFTMs, rec.P99TTFTMs
	r.MedianQueueMs, r.P99QueueMs, r.Clocks = rec.SP.MedianQueueMs, rec.SP.P99QueueMs, rec.SP.Clocks
	return r, nil
}

// busyLoop starts a shell spinning on one core, pinned and niced as the
// children are, and returns a function that stops it: the load a point
// with Loaded puts beside the client.
func (h *harness) busyLoop(ctx context.Context, core string) (func(), error) {
	argv := []string{"sh", "-c", "while :; do :; done"}
	if h.pinned {
		argv = append([]string{"taskset", "-c", core}, argv...)
	}
	if h.o.Nice != 0 && h.niced {
		argv = append([]string{"nice", "-n", strconv.Itoa(h.o.Nice)}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("busy loop: %w", err)
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}, nil
}

// e2eLatency runs the latency points and prints their table: the bench's
// own figures from its record (output throughput, TTFT and client queue
// percentiles, the clocks that stamped the results), the client's core
// loaded by a busy loop or not.
func (h *harness) e2eLatency(ctx context.Context, out io.Writer, tw io.Writer, flush func(), pts []E2EPoint, tokens int) []error {
	p0 := pts[0]
	fmt.Fprintf(out, "e2e latency: the bench command against a simulator of TTFT %v and ITL %v that flushes every token, %d output\n"+
		"  tokens a request, every request at once under the cap after one warm-up request a stream; \"loaded\": a busy loop\n"+
		"  pinned to the client's core at its niceness. TTFT and client queue (Sent - Scheduled) from the bench's record, in ms.\n",
		p0.TTFT, p0.ITL, cmp.Or(p0.OutputLen, tokens))
	fmt.Fprintln(tw, "dataset\tstreams\trequests\tclient core\toutput tok/s\tTTFT p50\tTTFT p99\tqueue p50\tqueue p99\tclocks\t")
	var errs []error
	for _, p := range pts {
		core := "quiet"
		if p.Loaded {
			core = "loaded"
		}
		r, err := h.e2e(ctx, p, tokens)
		if err != nil {
			errs = append(errs, fmt.Errorf("e2e latency %s %d×%d %s: %w", p.label(), p.Requests, p.Streams, core, err))
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\terror: %v\t\t\t\t\t\t\n", p.label(), p.Streams, p.Requests, core, err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t\n", p.label(), p.Streams, r.Completed, core, r.OutputThroughput,
			r.MedianTTFTMs, r.P99TTFTMs, r.MedianQueueMs, r.P99QueueMs, clockCounts(r.Clocks))
	}
	flush()
	return errs
}

// clockCounts prints a record's clock counts in a stable order.
func clockCounts(c map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
