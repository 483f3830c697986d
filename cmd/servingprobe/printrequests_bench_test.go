package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/simulator"
)

// BenchmarkPrintRequestsP99TTFT measures what --print-requests costs the
// requests: each iteration runs the same bench against the in-process
// simulator twice, without and with the flag (order alternating, so that
// drift falls on both), and reports both runs' P99 TTFT and how many
// request lines the flagged run wrote. The lines are written by the
// request log's own goroutine; a request only queues a value, so the two
// P99s should differ by no more than run-to-run noise. The figures are in
// BENCHMARKS.md; the P99s are a measurement, not a pass/fail test, but a
// flagged run whose lines are not bench_serving's two for each request
// (warm-up included) fails it, as TestPrintRequestsLines checks.
//
//	go test -run '^$' -bench PrintRequestsP99TTFT -benchtime 5x ./cmd/servingprobe/
func BenchmarkPrintRequestsP99TTFT(b *testing.B) {
	base := startSimulator(b, simulator.DefaultConfig())
	dir := b.TempDir()

	const prompts, warmup = 400, 1
	once := func(print bool, i int) (p99 float64, lines int) {
		out := filepath.Join(dir, "run"+strconv.Itoa(i)+strconv.FormatBool(print)+".jsonl")
		args := []string{"bench", "--backend", "sglang-oai-chat", "--base-url", base,
			"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
			"--random-input-len", "128", "--random-output-len", "32",
			"--num-prompts", strconv.Itoa(prompts), "--warmup-requests", strconv.Itoa(warmup),
			"--request-rate", "200", "--max-concurrency", "64",
			"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10", "--seed", strconv.Itoa(i)}
		if print {
			args = append(args, "--print-requests")
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			b.Fatalf("bench exited %d\n%s", code, stderr.String())
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			b.Fatal(err)
		}
		var rec struct {
			Completed int     `json:"completed"`
			P99TTFTMs float64 `json:"p99_ttft_ms"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			b.Fatal(err)
		}
		if rec.Completed != prompts {
			b.Fatalf("%d of %d requests completed", rec.Completed, prompts)
		}
		if print {
			lines = checkRequestLines(b, stdout.String(), base+"/v1/chat/completions", prompts+warmup)
		} else if o := stdout.String(); strings.HasPrefix(o, "rid=") || strings.Contains(o, "\nrid=") {
			b.Fatalf("a run without --print-requests wrote request lines")
		}
		return rec.P99TTFTMs, lines
	}
	var off, on []float64
	lines := 0
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			p, _ := once(false, i)
			q, n := once(true, i)
			off, on, lines = append(off, p), append(on, q), n
		} else {
			q, n := once(true, i)
			p, _ := once(false, i)
			off, on, lines = append(off, p), append(on, q), n
		}
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(median(off), "p99_ttft_ms_without")
	b.ReportMetric(median(on), "p99_ttft_ms_with")
	b.ReportMetric(float64(lines), "lines_with")
	b.Logf("P99 TTFT ms without --print-requests %v, with %v", off, on)
}

// requestLine* are bench_serving's --print-requests lines (see
// bench/requestlog.go, which quotes the Python that writes them): a
// version 4 UUID rid, Python floats, and the request function's input and
// output as reprs, one line each (repr escapes every newline).
var (
	requestLineStart = regexp.MustCompile(`^rid=([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}) time=\d+\.\d+(?:e[-+]\d\d)? message="request start" request_func_input="RequestFuncInput\(prompt=.*, api_url='([^']*)', prompt_len=\d+, output_len=\d+, model='[^']*', .*\)"$`)
	requestLineEnd   = regexp.MustCompile(`^rid=([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}) time=\d+\.\d+(?:e[-+]\d\d)? time_delta=-?\d+\.\d+(?:e[-+]\d\d)? message="request end" output="RequestFuncOutput\(generated_text=.*, success=(True|False), latency=.*\)"(?: trace_id=[0-9a-f]{32})?$`)
)

// checkRequestLines holds the request lines of a bench's stdout (those
// starting "rid=") to bench_serving's format: exactly a start line and
// then an end line, with success=True, for each of requests distinct
// rids, the start naming apiURL. It returns how many lines there were.
func checkRequestLines(tb testing.TB, stdout, apiURL string, requests int) int {
	tb.Helper()
	seen := map[string]int{} // rid -> 1 after its start line, 2 after its end
	lines, bad := 0, 0
	for _, line := range strings.Split(stdout, "\n") {
		if !strings.HasPrefix(line, "rid=") {
			continue
		}
		lines++
		if m := requestLineStart.FindStringSubmatch(line); m != nil {
			if seen[m[1]] != 0 || m[2] != apiURL {
				bad++
				tb.Errorf("a second start line for rid %s, or api_url %q is not %q: %q", m[1], m[2], apiURL, line)
			}
			seen[m[1]] = 1
			continue
		}
		if m := requestLineEnd.FindStringSubmatch(line); m != nil {
			if seen[m[1]] != 1 || m[2] != "True" {
				bad++
				tb.Errorf("an end line without its start line before it, or not a success: %q", line)
			}
			seen[m[1]] = 2
			continue
		}
		bad++
		if bad <= 5 {
			tb.Errorf("not a request line of bench_serving's: %q", line)
		}
	}
	for rid, st := range seen {
		if st != 2 {
			tb.Errorf("rid %s has no end line", rid)
		}
	}
	if lines != 2*requests || len(seen) != requests {
		tb.Fatalf("%d request lines for %d rids, want %d lines: a start and an end line for each of %d requests (warm-up included)",
			lines, len(seen), 2*requests, requests)
	}
	return lines
}

// TestPrintRequestsLines: a bench with --print-requests against the
// simulator writes, among its stdout, exactly bench_serving's two lines
// for each request, the warm-up requests' included: 2 × (requests +
// warm-up requests) lines, a start then an end for each rid; and each
// measured request's TTFT, prompt and output length on its end line are
// the record's (--output-details), which the bench computes elsewhere.
func TestPrintRequestsLines(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	base := startSimulator(t, cfg)
	const prompts, warmup = 9, 3
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, stdout, stderr := runCLI(t, "bench", "--backend", "sglang-oai-chat", "--base-url", base,
		"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--random-input-len", "16", "--random-output-len", "4",
		"--num-prompts", strconv.Itoa(prompts), "--warmup-requests", strconv.Itoa(warmup),
		"--request-rate", "inf", "--max-concurrency", "4",
		"--output-file", out, "--output-details", "--strict-json",
		"--disable-tqdm", "--ready-check-timeout-sec", "10", "--print-requests")
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkRequestLines(t, stdout, base+"/v1/chat/completions", prompts+warmup)
	if !regexp.MustCompile(`(?m)^Successful requests: +` + strconv.Itoa(prompts) + ` *$`).MatchString(stdout) {
		t.Errorf("the table does not say %d successful requests:\n%s", prompts, stdout)
	}

	// The end lines' numbers are the record's: each measured request's
	// TTFT, prompt and output length is on one end line, and the warm-up
	// requests' lines are the only others.
	type nums struct {
		ttft        float64
		prompt, out int
	}
	lines := map[nums]int{}
	endNums := regexp.MustCompile(`, ttft=([^,]+), .*, prompt_len=(\d+), error=.*, output_len=(\d+), `)
	for _, m := range endNums.FindAllStringSubmatch(stdout, -1) {
		ttft, err1 := strconv.ParseFloat(m[1], 64)
		in, err2 := strconv.Atoi(m[2])
		o, err3 := strconv.Atoi(m[3])
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("end line numbers %q: %v", m[0], err)
		}
		lines[nums{ttft, in, o}]++
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		TTFTs   []float64 `json:"ttfts"`
		Inputs  []int     `json:"input_lens"`
		Outputs []int     `json:"output_lens"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.TTFTs) != prompts || len(rec.Inputs) != prompts || len(rec.Outputs) != prompts {
		t.Fatalf("record details: %d ttfts, %d input_lens, %d output_lens; want %d each", len(rec.TTFTs), len(rec.Inputs), len(rec.Outputs), prompts)
	}
	for i := range prompts {
		k := nums{rec.TTFTs[i], rec.Inputs[i], rec.Outputs[i]}
		if lines[k] == 0 {
			t.Errorf("request %d of the record (ttft %v s, prompt_len %d, output_len %d) is on no end line", i, k.ttft, k.prompt, k.out)
			continue
		}
		lines[k]--
	}
	left := 0
	for _, n := range lines {
		left += n
	}
	if left != warmup {
		t.Errorf("%d end lines are not the record's requests, want the %d warm-up requests'", left, warmup)
	}
}
