package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/simulator"
)

// BenchmarkPrintRequestsP99TTFT measures what --print-requests costs the
// requests: each iteration runs the same bench against the in-process
// simulator twice, without and with the flag (order alternating, so that
// drift falls on both), and reports both runs' P99 TTFT and how many
// request lines the flagged run wrote. The lines are written by the
// request log's own goroutine; a request only queues a value, so the two
// P99s should differ by no more than run-to-run noise. The figures are in
// BENCHMARKS.md; this is a measurement, not a pass/fail test.
//
//	go test -run '^$' -bench PrintRequestsP99TTFT -benchtime 5x ./cmd/servingprobe/
func BenchmarkPrintRequestsP99TTFT(b *testing.B) {
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()
	dir := b.TempDir()

	const prompts = 400
	once := func(print bool, i int) (p99 float64, lines int) {
		out := filepath.Join(dir, "run"+strconv.Itoa(i)+strconv.FormatBool(print)+".jsonl")
		args := []string{"bench", "--backend", "sglang-oai-chat", "--base-url", base,
			"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
			"--random-input-len", "128", "--random-output-len", "32",
			"--num-prompts", strconv.Itoa(prompts), "--request-rate", "200", "--max-concurrency", "64",
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
		return rec.P99TTFTMs, strings.Count(stdout.String(), `message="request `)
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
