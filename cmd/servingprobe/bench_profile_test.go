package main

import (
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/simulator"
)

// TestBenchProfile: --profile asks the server to start its profiler
// before the run and stop it after; a server that answers 404 (one
// without a profiler) gets a warning, and the run goes on and prints its
// table, as bench_serving's does.
func TestBenchProfile(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	bench := func(t *testing.T, h http.Handler) (int, string, string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return runCLI(t, "bench", "--backend", "sglang", "--base-url", "http://"+ln.Addr().String(), "--profile",
			"--dataset-name", "random", "--num-prompts", "3", "--random-input-len", "16", "--random-output-len", "4",
			"--tokenizer", "../../tokenizer/testdata/qwen3", "--disable-tqdm", "--output-file", filepath.Join(t.TempDir(), "out.jsonl"))
	}
	done := regexp.MustCompile(`(?m)^Successful requests:\s+3\s*$`)

	t.Run("simulator", func(t *testing.T) {
		code, stdout, stderr := bench(t, sim.Handler())
		if code != 0 || !done.MatchString(stdout) {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		if starts, stops := sim.ProfileCalls(); starts != 1 || stops != 1 {
			t.Errorf("profile calls: %d starts, %d stops, want 1 and 1", starts, stops)
		}
		if strings.Contains(stderr, "Profiler not") {
			t.Errorf("a warning though the simulator profiles:\n%s", stderr)
		}
		// The simulator decodes a token a step, not speculatively: no
		// accept length, as sglang without speculative decoding.
		if strings.Contains(stdout, "Accept length:") {
			t.Errorf("an accept length from a server that does not decode speculatively:\n%s", stdout)
		}
	})
	t.Run("404", func(t *testing.T) {
		noProfiler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "_profile") {
				http.NotFound(w, r)
				return
			}
			sim.Handler().ServeHTTP(w, r)
		})
		code, stdout, stderr := bench(t, noProfiler)
		if code != 0 || !done.MatchString(stdout) {
			t.Fatalf("a server without a profiler stopped the run: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, "Profiler not started") || !strings.Contains(stderr, "Profiler not stopped") || !strings.Contains(stderr, "404") {
			t.Errorf("no warning of the refused profiler calls:\n%s", stderr)
		}
	})
}
