package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/simulator"
)

// serveTranscript answers every request with a recorded ollama stream
// (written from ollama's own source, in prober/testdata), one line per
// write and flush, 5 ms apart, as ollama's streamResponse writes them.
func serveTranscript(t *testing.T, path string) *httptest.Server {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			time.Sleep(5 * time.Millisecond)
			_, _ = w.Write(append(sc.Bytes(), '\n'))
			_ = http.NewResponseController(w).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestProbeOllamaRecorded: `probe --backend ollama-chat` (and ollama) over
// real HTTP against recorded streams: the outcome, the server's token
// counts and its timings beside ours.
func TestProbeOllamaRecorded(t *testing.T) {
	for _, tc := range []struct {
		backend, file string
		code          int
		want          []string
	}{
		{"ollama-chat", "success", 0, []string{`Outcome\s+success \(HTTP 200\)`, `Tokens out\s+4 \(usage\), requested 4`, `Tokens in\s+13 \(usage\)`,
			`Finish reason\s+length`, `Server timings\s+load 11.87 ms, prompt eval 82.11 ms \(13 tokens\), eval 40.40 ms \(4 tokens, 10.10 ms/token\), total 135.90 ms`}},
		{"ollama-chat", "error_in_stream", 1, []string{`Outcome\s+server_error \(HTTP 200\)`, `an error was encountered while running the model`}},
		{"ollama-chat", "stop_early", 0, []string{`Outcome\s+success`, `Tokens out\s+3 \(usage\), requested 4`, `Finish reason\s+stop`}},
		{"ollama", "success", 0, []string{`Outcome\s+success`, `Tokens out\s+4 \(usage\)`, `Tokens in\s+7 \(usage\)`, `eval 40.40 ms \(4 tokens`}},
	} {
		t.Run(tc.backend+"/"+tc.file, func(t *testing.T) {
			srv := serveTranscript(t, filepath.Join("..", "..", "prober", "testdata", tc.backend, tc.file+".ndjson"))
			code, stdout, stderr := runCLI(t, "probe", "--url", srv.URL, "--backend", tc.backend, "--model", "m", "--max-tokens", "4")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(stdout) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestServeOllamaModules: daemon modules on both ollama backends probe the
// simulator's ollama API and count successes with the server's counts.
func TestServeOllamaModules(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	simURL := startSimulator(t, cfg)
	dir := t.TempDir()
	conf := writeShortModuleConfig(t, dir, cfg.Model, map[string]string{"ollama": simURL, "ollama-chat": simURL})
	addr := freeAddr(t)
	startServe(t, "serve", "--config.file="+conf, "--web.listen-address="+addr)
	c := client{t: t, base: "http://" + addr}
	for _, b := range []string{"ollama", "ollama-chat"} {
		// The series exist from the start at 0: wait for a success.
		success := regexp.MustCompile(fmt.Sprintf(`servingprobe_requests_total\{mode="probe",model="%s",module="short",outcome="success",target="sim-%s"\} [1-9]`, regexp.QuoteMeta(cfg.Model), b))
		tokens := regexp.MustCompile(fmt.Sprintf(`servingprobe_generation_tokens_total\{mode="probe",model="%s",module="short",target="sim-%s"\} (\d+)`, regexp.QuoteMeta(cfg.Model), b))
		deadline := time.Now().Add(20 * time.Second)
		var body string
		for {
			_, body = c.do("GET", "/metrics")
			if success.MatchString(body) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sim-%s: no successful probe after 20 s:\n%s", b, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The server's count of output tokens: 8 a probe.
		m := tokens.FindStringSubmatch(body)
		var n int
		if m != nil {
			fmt.Sscan(m[1], &n)
		}
		if n == 0 || n%8 != 0 {
			t.Errorf("sim-%s: %d generation tokens, want a positive multiple of the 8 each probe asks for", b, n)
		}
	}
}

// TestBenchOllamaServerTimings: `bench --output-details` over real HTTP
// against ollama's recorded streams (whose final object is written as
// ollama's source defines it, durations in nanoseconds) records, for every
// request, the timings that object states, in seconds, and the report
// draws them, from the live run and from the file; a run against a server
// that states none (the simulator's OpenAI API) has no server_timings key
// at all.
func TestBenchOllamaServerTimings(t *testing.T) {
	for _, tc := range []struct{ backend, path string }{{"ollama-chat", "/api/chat"}, {"ollama", "/api/generate"}} {
		t.Run(tc.backend, func(t *testing.T) {
			transcript, err := os.ReadFile(filepath.Join("..", "..", "prober", "testdata", tc.backend, "success.ndjson"))
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.Split(bytes.TrimSpace(transcript), []byte("\n"))
			var final map[string]any
			if err := json.Unmarshal(lines[len(lines)-1], &final); err != nil || final["done"] != true {
				t.Fatalf("the transcript's last line is not ollama's final object (%v): %s", err, lines[len(lines)-1])
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != tc.path {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/x-ndjson")
				for _, l := range lines {
					time.Sleep(2 * time.Millisecond)
					// Two writes: appending to l would write into the
					// transcript the concurrent requests share.
					_, _ = w.Write(l)
					_, _ = w.Write([]byte("\n"))
					_ = http.NewResponseController(w).Flush()
				}
			}))
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			out, live, again := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "live.html"), filepath.Join(dir, "again.html")
			code, stdout, stderr := runCLI(t, "bench", "--backend", tc.backend, "--base-url", srv.URL, "--model", "m",
				"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
				"--random-input-len", "16", "--random-output-len", "4", "--num-prompts", "3", "--request-rate", "inf",
				"--output-file", out, "--strict-json", "--output-details", "--disable-tqdm", "--ready-check-timeout-sec", "0",
				"--report", live)
			if code != 0 {
				t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			// The report draws them, from the live run and from the
			// record read back alike.
			if code, _, stderr := runCLI(t, "report", "-o", again, out); code != 0 {
				t.Fatalf("report exited %d: %s", code, stderr)
			}
			for _, html := range []string{live, again} {
				b, err := os.ReadFile(html)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range []string{"<h2>Server timings</h2>", "3 of the run&#39;s 3 successful requests stated timings",
					`<td>prompt eval</td><td class="num">3</td><td class="num">82.11</td>`} {
					if !bytes.Contains(b, []byte(w)) {
						t.Errorf("%s lacks %q", filepath.Base(html), w)
					}
				}
			}
			recs := readRecords(t, out)
			sts, ok := recs[0]["server_timings"].([]any)
			if !ok || len(sts) != 3 {
				t.Fatalf("server_timings = %v, want one entry for each of 3 requests", recs[0]["server_timings"])
			}
			for i, st := range sts {
				st, _ := st.(map[string]any)
				for _, k := range []string{"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"} {
					wire, _ := final[k].(float64)
					got, ok := st[k].(float64)
					if strings.HasSuffix(k, "_duration") {
						// Stated in nanoseconds; the details' times are seconds.
						got = math.Round(got * 1e9)
					}
					if !ok || got != wire {
						t.Errorf("request %d: server_timings.%s = %v, want the transcript's %v", i, k, st[k], final[k])
					}
				}
			}
		})
	}
	t.Run("openai", func(t *testing.T) {
		cfg := simulator.DefaultConfig()
		cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
		url := startSimulator(t, cfg)
		out := filepath.Join(t.TempDir(), "out.jsonl")
		code, stdout, stderr := runCLI(t, "bench", "--backend", "vllm-chat", "--base-url", url, "--model", cfg.Model,
			"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
			"--random-input-len", "16", "--random-output-len", "4", "--num-prompts", "3", "--request-rate", "inf",
			"--output-file", out, "--strict-json", "--output-details", "--disable-tqdm", "--ready-check-timeout-sec", "10")
		if code != 0 {
			t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		rec := readRecords(t, out)[0]
		if _, ok := rec["request_outcomes"]; !ok {
			t.Fatalf("the record has no details: %v", rec)
		}
		if v, ok := rec["server_timings"]; ok {
			t.Errorf("a server that states no timings gave server_timings %v", v)
		}
	})
}

// writeShortModuleConfig writes a daemon config with one target a backend,
// named sim-BACKEND, at the given URL, each probing every second with the
// module "short" (a fixed prompt, 8 output tokens), and returns its path.
func writeShortModuleConfig(t *testing.T, dir, model string, urls map[string]string) string {
	t.Helper()
	var targets strings.Builder
	for _, b := range slices.Sorted(maps.Keys(urls)) {
		fmt.Fprintf(&targets, "  - name: sim-%s\n    url: %s\n    backend: %s\n    model: %s\n    modules: [short]\n    interval: 1s\n", b, urls[b], b, model)
	}
	conf := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(conf, []byte("targets:\n"+targets.String()+`modules:
  short:
    dataset: fixed
    prompt: Tell me about the tide.
    output_len: 8
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return conf
}
