package main

import (
	"encoding/json"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/simulator"
)

// TestBenchTraceIDs: every bench request (warm-up included) carries one
// valid W3C traceparent with a trace id of its own; the record's
// trace_ids (--output-details) and the --print-requests end lines hold,
// for the measured requests, exactly the ids the server saw. With
// --no-traceparent nothing is sent and the record has no trace_ids.
func TestBenchTraceIDs(t *testing.T) {
	w3c := regexp.MustCompile(`^00-([0-9a-f]{32})-[0-9a-f]{16}-01$`)
	for _, off := range []bool{false, true} {
		t.Run("no-traceparent="+strconv.FormatBool(off), func(t *testing.T) {
			cfg := simulator.DefaultConfig()
			cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
			sim, err := simulator.New(cfg, log.NewNopLogger())
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu   sync.Mutex
				seen = map[string]int{}
				sent int // POSTs
				bad  []string
			)
			h := sim.Handler()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					vs := r.Header.Values("traceparent")
					mu.Lock()
					sent++
					if len(vs) == 1 && w3c.MatchString(vs[0]) {
						seen[w3c.FindStringSubmatch(vs[0])[1]]++
					} else if len(vs) > 0 || !off {
						bad = append(bad, vs...)
					}
					mu.Unlock()
				}
				h.ServeHTTP(w, r)
			})}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
			base := "http://" + ln.Addr().String()

			const prompts, warmup = 6, 2
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := []string{"bench", "--backend", "sglang-oai-chat", "--base-url", base,
				"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
				"--random-input-len", "16", "--random-output-len", "4",
				"--num-prompts", strconv.Itoa(prompts), "--warmup-requests", strconv.Itoa(warmup),
				"--request-rate", "inf", "--max-concurrency", "3",
				"--output-file", out, "--output-details", "--strict-json", "--disable-tqdm", "--ready-check-timeout-sec", "10", "--print-requests"}
			if off {
				args = append(args, "--no-traceparent")
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("bench exited %d\n%s", code, stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				TraceIDs []string `json:"trace_ids"`
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			printed := map[string]bool{}
			for _, m := range regexp.MustCompile(`(?m)message="request end" .* trace_id=([0-9a-f]{32})$`).FindAllStringSubmatch(stdout, -1) {
				printed[m[1]] = true
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bad) > 0 {
				t.Errorf("traceparent headers not in the W3C format: %q", bad)
			}
			if off {
				if len(seen) != 0 || rec.TraceIDs != nil || len(printed) != 0 {
					t.Errorf("--no-traceparent: server saw %d trace ids, record %q, printed %d; want none", len(seen), rec.TraceIDs, len(printed))
				}
				return
			}
			if sent != prompts+warmup || len(seen) != sent {
				t.Errorf("server saw %d distinct trace ids over %d requests, want %d, one each", len(seen), sent, prompts+warmup)
			}
			if len(rec.TraceIDs) != prompts {
				t.Fatalf("record trace_ids = %q, want %d", rec.TraceIDs, prompts)
			}
			for _, id := range rec.TraceIDs {
				if seen[id] != 1 || !printed[id] {
					t.Errorf("record trace id %q: seen by the server %d times, printed %t; want once and printed", id, seen[id], printed[id])
				}
			}
			if len(printed) != prompts+warmup {
				t.Errorf("%d trace ids on the end lines, want %d (warm-up included)", len(printed), prompts+warmup)
			}
		})
	}
}

// TestProbeShowsServerTTFT: against a simulator that states its timing in
// vLLM's shape, probe prints the server's TTFT and the rest under TTFT,
// and --json carries the same split, adding up to ttft_seconds, with the
// request's trace id.
func TestProbeShowsServerTTFT(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 5*time.Millisecond, 0, time.Millisecond, 0
	cfg.StateMetrics = true
	base := startSimulator(t, cfg)
	code, stdout, stderr := runCLI(t, "probe", "--url", base, "--backend", "vllm-chat", "--model", cfg.Model, "--max-tokens", "4")
	if code != 0 {
		t.Fatalf("probe exited %d: %s", code, stderr)
	}
	for _, want := range []string{"server's TTFT", "outside the server", "Trace id"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("probe output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI(t, "probe", "--json", "--url", base, "--backend", "vllm-chat", "--model", cfg.Model, "--max-tokens", "4")
	if code != 0 {
		t.Fatalf("probe --json exited %d: %s", code, stderr)
	}
	var out struct {
		TTFT    *float64 `json:"ttft_seconds"`
		Server  *float64 `json:"server_ttft_seconds"`
		Outside *float64 `json:"outside_server_ttft_seconds"`
		TraceID string   `json:"trace_id"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.TTFT == nil || out.Server == nil || out.Outside == nil || *out.Server < cfg.TTFT.Seconds() ||
		math.Abs(*out.Server+*out.Outside-*out.TTFT) > 1e-9 || len(out.TraceID) != 32 {
		t.Errorf("probe --json: ttft %v, server %v, outside %v, trace %q; want the server's at least %v and the two adding up",
			out.TTFT, out.Server, out.Outside, out.TraceID, cfg.TTFT)
	}
}
