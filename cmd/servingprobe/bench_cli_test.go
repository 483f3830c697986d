package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/simulator"
)

func TestArgparseArgs(t *testing.T) {
	app := kingpin.New("servingprobe", "")
	addLogFlags(app)
	addBenchCommand(app)
	addProbeCommand(app)
	for _, tc := range []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{
			name: "bench_serving's docstring abbreviations",
			in:   "bench --backend sglang --num-prompt 10",
			want: "bench --backend sglang --num-prompts 10",
		},
		{
			name: "public scripts' --random-input and --random-output",
			in:   "bench --dataset-name random --num-prompts 3000 --random-input 1024 --random-output 1024 --random-range-ratio 0.5",
			want: "bench --dataset-name random --num-prompts 3000 --random-input-len 1024 --random-output-len 1024 --random-range-ratio 0.5",
		},
		{
			name: "the = form",
			in:   "bench --num-prom=5 --rand=x",
			// --rand is ambiguous whatever its value.
			wantErr: "ambiguous option: --rand could match --random-input-len, --random-output-len, --random-range-ratio, --random-audio-count, --random-image-count, --random-image-num-images, --random-image-resolution, --random-batch-size, --random-prefix-len, --random-mm-base-items-per-request, --random-mm-num-mm-items-range-ratio, --random-mm-limit-mm-per-prompt, --random-mm-bucket-config",
		},
		{
			name:    "a value that is not the flag's number type names the flag, as argparse does",
			in:      "bench --num-prompts=abc",
			wantErr: "argument --num-prompts: invalid int value: 'abc'",
		},
		{
			name:    "a float flag",
			in:      "bench --request-rate abc",
			wantErr: "argument --request-rate: invalid float value: 'abc'",
		},
		{
			name:    "an abbreviated int flag",
			in:      "bench --max-conc x",
			wantErr: "argument --max-concurrency: invalid int value: 'x'",
		},
		{
			name: "a negative number is a value, as in argparse",
			in:   "bench --random-input-len -3 --logprob-start-len -1",
			want: "bench --random-input-len=-3 --logprob-start-len=-1",
		},
		{
			name: "inf is a float",
			in:   "bench --request-rate inf",
			want: "bench --request-rate inf",
		},
		{
			name: "an exact name wins over the longer names it prefixes",
			in:   "bench --profile --profile-steps 3",
			want: "bench --profile --profile-steps 3",
		},
		{
			// The flag's value takes the last itself (TestBenchArgparseCLI).
			name: "a repeated flag with a value is left to its value",
			in:   "bench --backend vllm --port 8000 --backend sglang",
			want: "bench --backend vllm --port 8000 --backend sglang",
		},
		{
			name: "a repeated bool flag is kept once",
			in:   "bench --disable-tqdm --seed 1 --disable-tqdm",
			want: "bench --seed 1 --disable-tqdm",
		},
		{
			name: "list flags keep every value, repeated or not",
			in:   "bench --lora-name a b --header K=V --lora-name c --header K2=V2",
			want: "bench --lora-name a b --header K=V --lora-name c --header K2=V2",
		},
		{
			name: "global flags after the command are known too",
			in:   "bench --log.lev debug --num-prompts 1",
			want: "bench --log.level debug --num-prompts 1",
		},
		{
			name:    "an unknown flag is refused with argparse's message",
			in:      "bench --nosuch 1",
			wantErr: "unrecognized arguments: --nosuch",
		},
		{
			name:    "a mistyped flag is refused with the flag meant",
			in:      "bench --num-promtps 1",
			wantErr: "unrecognized arguments: --num-promtps (did you mean --num-prompts?)",
		},
		{
			name: "kingpin's --no-X of a boolean is left to kingpin",
			in:   "bench --no-disable-tqdm",
			want: "bench --no-disable-tqdm",
		},
		{
			name: "other commands keep kingpin's rules",
			in:   "probe --max-tok 5",
			want: "probe --max-tok 5",
		},
		{
			name: "everything after -- is left alone",
			in:   "bench -- --num-prompt",
			want: "bench -- --num-prompt",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := argparseArgs(app, strings.Fields(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("argparseArgs(%q) error %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.Fields(tc.want), got); diff != "" {
				t.Errorf("argparseArgs(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestBenchArgparseCLI runs the rewritten command lines through the real
// parser: a repeated flag and abbreviations no longer fail.
func TestBenchArgparseCLI(t *testing.T) {
	code, _, stderr := runCLI(t, "bench", "--backend", "nosuch", "--backend", "sglang", "--num-prompt", "1",
		"--random-input", "4", "--random-output", "2", "--dataset-name", "random", "--base-url", "http://127.0.0.1:1",
		"--ready-check-timeout-sec", "0", "--tokenizer", "../../tokenizer/testdata/qwen3", "--disable-tqdm",
		"--output-file", t.TempDir()+"/out.jsonl", "--warmup-requests", "0")
	if strings.Contains(stderr, "cannot be repeated") || strings.Contains(stderr, "unknown long flag") {
		t.Fatalf("exit %d: argparse habits refused:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "nosuch") {
		t.Errorf("the first --backend was used, not the last:\n%s", stderr)
	}
}

// TestBenchFlagRanges: values argparse takes but that make no run are
// refused with the flag and its range, every problem at once.
func TestBenchFlagRanges(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--random-input-len", "0"}, []string{"--random-input-len: must be at least 1, got 0"}},
		{[]string{"--random-input-len", "-3", "--random-output-len", "0"}, []string{"--random-input-len: must be at least 1, got -3", "--random-output-len: must be at least 1, got 0"}},
		{[]string{"--num-prompts", "0"}, []string{"--num-prompts: must be at least 1"}},
		{[]string{"--request-rate", "0"}, []string{"--request-rate: must be > 0"}},
		{[]string{"--random-range-ratio", "1.5"}, []string{"--random-range-ratio: must be between 0 and 1, got 1.5"}},
		{[]string{"--dataset-name", "random", "--num-prompts", "1000000000"}, []string{"--num-prompts 1000000000: the prompts would need about"}},
	} {
		args := append([]string{"bench", "--base-url", "http://127.0.0.1:1"}, tc.args...)
		code, _, stderr := runCLI(t, args...)
		if code == 0 {
			t.Errorf("%v: exit 0, want a refusal", tc.args)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
	}
}

// TestBenchServingUsageLines runs bench_serving's own documented command
// lines, unchanged but for the simulator's port, a local tokenizer and,
// for ShareGPT (downloaded from the hub by default), a local file, and
// scaled down. They must run as they do under Python.
func TestBenchServingUsageLines(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	u, err := url.Parse(startSimulator(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	local := []string{"--port", u.Port(), "--tokenizer", "../../tokenizer/testdata/qwen3", "--disable-tqdm"}
	for _, tc := range []struct {
		line string
		want int
	}{
		// The module docstring's first example. The local file has 4
		// conversations that pass ShareGPT's length filter, and as in
		// bench_serving a short file gives fewer prompts.
		{"--backend sglang --num-prompt 10 --dataset-path ../../datasets/testdata/sharegpt.json", 4},
		// Its random example, 3000 x 1024/1024 scaled down.
		{"--backend sglang --dataset-name random --num-prompts 30 --random-input 64 --random-output 8 --random-range-ratio 0.5", 30},
		// A script that appends its own flags to a default command line.
		{"--backend vllm --dataset-name random --num-prompts 5 --random-input-len 16 --random-output-len 4 --backend sglang --num-prompts 6", 6},
	} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		args := slices.Concat([]string{"bench"}, strings.Fields(tc.line), local, []string{"--output-file", out})
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s", tc.line, code, stderr)
			continue
		}
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^Successful requests:\s+%d\s*$`, tc.want)).MatchString(stdout) {
			t.Errorf("%s: want %d successful requests:\n%s", tc.line, tc.want, stdout)
		}
		if !regexp.MustCompile(`(?m)^Backend:\s+sglang\s*$`).MatchString(stdout) {
			t.Errorf("%s: want backend sglang (the last --backend):\n%s", tc.line, stdout)
		}
	}
}

// TestBenchNewConnectionEndToEnd: --compat new-connection works with a
// bearer token and headers (it always failed: the user agent made
// prometheus/common wrap the transport), and opens one TCP connection per
// request; without it the bench reuses its connections.
func TestBenchNewConnectionEndToEnd(t *testing.T) {
	sim, err := simulator.New(func() simulator.Config {
		c := simulator.DefaultConfig()
		c.TTFT, c.ITL = time.Millisecond, time.Millisecond
		return c
	}(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	const prompts = 12
	for _, tc := range []struct {
		compat  bool
		atLeast int64
		atMost  int64
	}{
		{compat: true, atLeast: prompts + 1},   // every measured request and the warmup, at least
		{compat: false, atLeast: 1, atMost: 4}, // the pool, sized by --max-concurrency 2, plus a spare
	} {
		var conns atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer sk-test" || r.Header.Get("X-Team") != "llm" {
				http.Error(w, "missing credentials or header", http.StatusUnauthorized)
				return
			}
			sim.Handler().ServeHTTP(w, r)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		args := []string{"bench", "--backend", "vllm", "--base-url", srv.URL, "--dataset-name", "random",
			"--random-input-len", "8", "--random-output-len", "4", "--num-prompts", strconv.Itoa(prompts),
			"--max-concurrency", "2", "--tokenizer", "../../tokenizer/testdata/qwen3", "--disable-tqdm",
			"--header", "Authorization=Bearer sk-test", "--header", "X-Team=llm",
			"--output-file", filepath.Join(t.TempDir(), "out.jsonl")}
		if tc.compat {
			args = append(args, "--compat", "new-connection")
		}
		code, stdout, stderr := runCLI(t, args...)
		srv.Close()
		if code != 0 {
			t.Fatalf("compat %v: exit %d\n%s\n%s", tc.compat, code, stdout, stderr)
		}
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^Successful requests:\s+%d\s*$`, prompts)).MatchString(stdout) {
			t.Errorf("compat %v: want %d successes:\n%s", tc.compat, prompts, stdout)
		}
		got := conns.Load()
		if got < tc.atLeast || (tc.atMost > 0 && got > tc.atMost) {
			t.Errorf("compat new-connection %v: %d TCP connections, want %d..%d", tc.compat, got, tc.atLeast, tc.atMost)
		}
	}
}

// stallServer answers the first fast requests with a short stream and
// holds every later one open after its first chunk until the client goes.
func stallServer(t *testing.T, fast int64, onStall ...func()) string {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r) // /server_info and friends
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := `data: {"choices":[{"index":0,"text":" tok","finish_reason":null}]}` + "\n\n"
		if n.Add(1) <= fast {
			io.WriteString(w, chunk+chunk+`data: {"choices":[{"index":0,"text":"","finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		io.WriteString(w, chunk)
		w.(http.Flusher).Flush()
		for _, f := range onStall {
			f()
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func stallBenchArgs(url, out string, extra ...string) []string {
	return append([]string{"bench", "--backend", "vllm", "--base-url", url, "--model", "m", "--dataset-name", "random",
		"--random-input-len", "8", "--random-output-len", "2", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--ready-check-timeout-sec", "0", "--warmup-requests", "0", "--disable-tqdm", "--output-file", out}, extra...)
}

// TestBenchRequestTimeout: a server that stalls mid-stream no longer hangs
// the bench: each request ends at --request-timeout-sec as a timeout.
func TestBenchRequestTimeout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, stdout, stderr := runCLI(t, stallBenchArgs(stallServer(t, 0), out, "--num-prompts", "2", "--request-timeout-sec", "0.5")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^\s+timeout:\s+2\s*$`).MatchString(stdout) {
		t.Errorf("want 2 requests ended as timeout:\n%s", stdout)
	}
}

// TestBenchInterrupted: Ctrl-C mid-run prints and appends what finished,
// marked as interrupted, and still exits non-zero.
func TestBenchInterrupted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	// The interrupt comes when the first request stalls, after the fast
	// ones finished: a Ctrl-C in the middle of a run, whatever the
	// machine's speed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, stallBenchArgs(stallServer(t, 3, cancel), out, "--num-prompts", "6", "--request-rate", "20"), strings.NewReader(""), &stdout, &stderr)
	if code == 0 {
		t.Fatalf("exit 0 after an interrupt\n%s", stdout.String())
	}
	for _, want := range []string{"Successful requests:", "Stopped early:                           interrupted"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("partial table lacks %q:\n%s\n%s", want, stdout.String(), stderr.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no JSONL after an interrupt: %v", err)
	}
	if !strings.Contains(string(b), `"stopped": "interrupted"`) {
		t.Errorf("JSONL not marked interrupted: %s", b)
	}
}

// TestBenchWithoutTokenizerFlag: the README's simulate + bench example
// needs no --tokenizer: the simulator names its tokenizer at /model_info,
// where bench (like bench_serving) looks.
func TestBenchWithoutTokenizerFlag(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	u, err := url.Parse(startSimulator(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "bench", "--backend", "sglang", "--host", u.Hostname(), "--port", u.Port(),
		"--dataset-name", "random", "--num-prompts", "5", "--random-input-len", "32", "--random-output-len", "8",
		"--disable-tqdm", "--output-file", filepath.Join(t.TempDir(), "out.jsonl"))
	if code != 0 || !regexp.MustCompile(`(?m)^Successful requests:\s+5\s*$`).MatchString(stdout) {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}
