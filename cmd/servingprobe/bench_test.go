package main

import (
	"bytes"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/simulator"
)

// parseBenchFlags parses a bench command line into its flags, as run does.
func parseBenchFlags(t *testing.T, args ...string) (*benchFlags, error) {
	t.Helper()
	app := kingpin.New("servingprobe", "")
	app.Terminate(nil)
	var f *benchFlags
	cmd := app.Command("bench", "")
	f = addBenchFlags(cmd)
	nameFlagErrors(app)
	_, err := app.Parse(append([]string{"bench"}, args...))
	return f, err
}

func noEnv(string) string { return "" }

// TestBenchFlagDefaults checks every default of bench_serving's argument parser.
func TestBenchFlagDefaults(t *testing.T) {
	f, err := parseBenchFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.benchSpec(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	o := datasets.DefaultOptions()
	o.GSPGroupDistribution = "uniform"
	want := runner.Spec{
		Params: bench.Params{
			Backend: "sglang", Dataset: "sharegpt", Options: o, NumPrompts: 1000, RequestRate: math.Inf(1),
			Stats: bench.StatsExact,
			// No details are kept by default; were they, without texts.
			DetailsNoTexts: true,
		},
		BaseURL:    "http://0.0.0.0:30000",
		Burstiness: 1, Seed: 42, WarmupRequests: 1,
		Temperature: 0, TopP: 1, LogprobStartLen: -1,
		LoRADistribution: "uniform", LoRAZipfAlpha: 1.5,
		FlushCacheTimeout: 60 * time.Second, ReadyCheckTimeout: 60 * time.Second,
		// Ours: bench_serving has no per-request timeout (its aiohttp
		// session allows 6 h).
		RequestTimeout: runner.DefaultRequestTimeout,
		Profile:        runner.Profile{Activities: []string{"CPU", "GPU"}, StartStep: -1, Steps: -1, NumSteps: -1},
		// Ours: one run, as bench_serving makes (--runs).
		Runs: 1, RunsPause: runner.DefaultRunsPause,
	}
	if diff := cmp.Diff(want, s, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(datasets.Options{}, "ChatTemplate")); diff != "" {
		t.Errorf("defaults differ from bench_serving's (-want +got):\n%s", diff)
	}
	// Individual defaults that are easy to get wrong, named by their flags.
	for _, tc := range []struct {
		flag string
		got  any
		want any
	}{
		{"--random-input-len", s.RandomInputLen, 1024},
		{"--random-output-len", s.RandomOutputLen, 1024},
		{"--random-range-ratio", s.RandomRangeRatio, 0.0},
		{"--gsp-range-ratio", s.GSPRangeRatio, 1.0},
		{"--gsp-num-groups", s.GSPNumGroups, 64},
		{"--gsp-prompts-per-group", s.GSPPromptsPerGroup, 16},
		{"--gsp-system-prompt-len", s.GSPSystemPromptLen, 2048},
		{"--gsp-question-len", s.GSPQuestionLen, 128},
		{"--gsp-output-len", s.GSPOutputLen, 256},
		{"--image-resolution", s.ImageResolution, "1080p"},
		{"--image-format", s.ImageFormat, "jpeg"},
		{"--image-content", s.ImageContent, "random"},
		{"--image-count", s.ImageCount, 1},
		{"--mooncake-workload", f.mooncakeWorkload, "conversation"},
		{"--mooncake-slowdown-factor", s.MooncakeSlowdownFactor, 1.0},
		{"--mooncake-num-rounds", s.MooncakeNumRounds, 1},
		{"--speed-bench-output-len", s.SpeedBenchOutputLen, 512},
		{"--host", f.host, "0.0.0.0"},
		{"--seed", s.Seed, int64(42)},
		{"--warmup-requests", s.WarmupRequests, 1},
		{"--ready-check-timeout-sec", s.ReadyCheckTimeout, 60 * time.Second},
		{"--flush-cache-timeout", s.FlushCacheTimeout, 60 * time.Second},
		{"--top-logprobs-num", s.TopLogprobsNum, 0},
		{"--logprob-start-len", s.LogprobStartLen, -1},
		{"--burstiness", s.Burstiness, 1.0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s default = %v, want %v", tc.flag, tc.got, tc.want)
		}
	}
	if s.DisableIgnoreEOS || s.DisableStream {
		t.Error("ignore_eos and streaming must be on by default")
	}
}

func TestBenchDefaultPorts(t *testing.T) {
	for backend, port := range map[string]int{
		"sglang": 30000, "sglang-native": 30000, "sglang-oai": 30000, "sglang-oai-chat": 30000,
		"vllm": 8000, "vllm-chat": 30000, "lmdeploy": 23333, "lmdeploy-chat": 30000,
		"trt": 8000, "truss": 8080,
	} {
		args := []string{"--backend", backend}
		if backend == "trt" || backend == "truss" {
			args = append(args, "--model", "m")
		}
		f, err := parseBenchFlags(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.benchSpec(noEnv)
		if err != nil {
			t.Fatalf("--backend %s: %v", backend, err)
		}
		if want := "http://0.0.0.0:" + strconv.Itoa(port); s.BaseURL != want {
			t.Errorf("--backend %s: base URL %s, want %s", backend, s.BaseURL, want)
		}
	}
}

func TestBenchFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // in the parse or spec error
	}{
		{"cost per hour", []string{"--cost-per-hour=-1"}, "--cost-per-hour: must be a finite number of USD at least 0, got -1"},
		{"gserver", []string{"--backend", "gserver"}, "--backend gserver is not supported: NotImplementedError (bench_serving's gserver request function raises it; there is no gserver client)"},
		{"unknown backend", []string{"--backend", "tgi"}, `--backend "tgi": unknown backend (one of anthropic, lmdeploy,`},
		{"unknown flag", []string{"--num-prompt", "3"}, "unknown long flag '--num-prompt'"},
		{"stray argument", []string{"foo"}, `unexpected argument "foo"`},
		{"tokenize prompt", []string{"--backend", "vllm", "--tokenize-prompt", "--dataset-name", "random"}, "--tokenize-prompt: works only with a backend that sends input_ids: sglang"},
		{"extra body", []string{"--extra-request-body", "[1]"}, "--extra-request-body: must be a JSON object, got an array"},
		{"extra body null", []string{"--extra-request-body", "null"}, "--extra-request-body: must be a JSON object, got null"},
		{"extra body trailing", []string{"--extra-request-body", `{"a":1} {}`}, "--extra-request-body: must be one JSON object, got more after it"},
		{"backend typo", []string{"--backend", "vlm"}, `--backend "vlm": unknown backend; did you mean vllm? (one of anthropic,`},
		{"dataset typo", []string{"--dataset-name", "sharegtp"}, `--dataset-name "sharegtp": unknown dataset; did you mean sharegpt? (one of agentic-trace,`},
		{"unknown dataset", []string{"--dataset-name", "nosuch"}, `--dataset-name "nosuch": unknown dataset (one of agentic-trace,`},
		{"header", []string{"--header", "novalue"}, `--header "novalue": want K=V`},
		{"compat", []string{"--compat", "bogus"}, `unknown compat switch "bogus"`},
		{"goodput", []string{"--goodput", "ttft"}, "invalid goodput"},
		{"ramp without rates", []string{"--ramp-up-strategy", "linear"}, "--ramp-up-start-rps"},
		{"rate", []string{"--request-rate=-1"}, "--request-rate: must be > 0"},
		{"concurrency", []string{"--max-concurrency", "0"}, "--max-concurrency: must be at least 1"},
		{"trt needs model", []string{"--backend", "trt"}, "--model: backend trt requires a model"},
		{"lora skewed", []string{"--lora-name", "a", "--lora-request-distribution", "skewed"}, "needs at least 2 names"},
		{"modelscope", []string{}, "SGLANG_USE_MODELSCOPE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := noEnv
			if tc.name == "modelscope" {
				env = func(k string) string {
					if k == "SGLANG_USE_MODELSCOPE" {
						return "true"
					}
					return ""
				}
			}
			f, err := parseBenchFlags(t, tc.args...)
			if err == nil {
				_, err = f.benchSpec(env)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("bench %v: error %v, want it to contain %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestBenchCacheCostFlags: --cache-report and --cost-per-hour bind into the
// Spec and its bench.Params, and --help no longer calls --cache-report
// unsupported.
func TestBenchCacheCostFlags(t *testing.T) {
	f, err := parseBenchFlags(t, "--cache-report", "--cost-per-hour", "2.5")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.benchSpec(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !s.CacheReport || s.CostPerHour != 2.5 {
		t.Errorf("spec cache_report %v, cost_per_hour %v; want true, 2.5", s.CacheReport, s.CostPerHour)
	}
	if p := s.RunParams(); !p.CacheReport || p.CostPerHour != 2.5 {
		t.Errorf("params %+v; want cache report and 2.5", p.CacheCostParams)
	}
}

func TestBenchListFlags(t *testing.T) {
	f, err := parseBenchFlags(t, "--lora-name", "a", "b", "--num-prompts", "5", "--lora-name", "c",
		"--header", "X-A=1", "X-B=2", "--profile-activities", "MEM", "--goodput", "ttft:100", "tpot:10")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.benchSpec(func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-test"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, s.LoRANames); diff != "" {
		t.Errorf("--lora-name (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"X-A": "1", "X-B": "2", "Authorization": "Bearer sk-test"}, s.Headers); diff != "" {
		t.Errorf("--header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"MEM"}, s.Profile.Activities); diff != "" {
		t.Errorf("--profile-activities replaces the default (-want +got):\n%s", diff)
	}
	if s.NumPrompts != 5 || len(s.Goodput) != 2 || s.Goodput["tpot"] != 10 {
		t.Errorf("num prompts %d, goodput %v", s.NumPrompts, s.Goodput)
	}
}

// tableInt reads the integer after a table label in bench's output.
func tableInt(t *testing.T, stdout, label string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + `\s*(\d+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no %q line in:\n%s", label, stdout)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// startSimulator serves the in-process simulator on loopback.
func startSimulator(t testing.TB, cfg simulator.Config) string {
	t.Helper()
	_, base := serveSimulator(t, cfg)
	return base
}

// serveSimulator is startSimulator for a test that reads the simulator's
// own truths or scrapes too.
func serveSimulator(t testing.TB, cfg simulator.Config) (*simulator.Server, string) {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sim, "http://" + ln.Addr().String()
}

// tableLabels are every label of bench_serving's table for a text dataset.
var tableLabels = []string{
	"Backend:", "Traffic request rate:", "Max request concurrency:", "Successful requests:",
	"Benchmark duration (s):", "Total input tokens:", "Total input text tokens:", "Total generated tokens:",
	"Total generated tokens (retokenized):", "Request throughput (req/s):", "Input token throughput (tok/s):",
	"Output token throughput (tok/s):", "Peak output token throughput (tok/s):", "Peak concurrent requests:",
	"Total token throughput (tok/s):", "Concurrency:",
	"Mean E2E Latency (ms):", "Median E2E Latency (ms):", "P90 E2E Latency (ms):", "P95 E2E Latency (ms):", "P99 E2E Latency (ms):",
	"Mean TTFT (ms):", "Median TTFT (ms):", "P90 TTFT (ms):", "P95 TTFT (ms):", "P99 TTFT (ms):",
	"Mean TPOT (ms):", "Median TPOT (ms):", "P90 TPOT (ms):", "P95 TPOT (ms):", "P99 TPOT (ms):",
	"Mean ITL (ms):", "Median ITL (ms):", "P90 ITL (ms):", "P95 ITL (ms):", "P99 ITL (ms):", "Max ITL (ms):",
}

// benchE2E runs bench against baseURL with 200 random prompts at 50 req/s
// and concurrency 16, and checks the counts, the table and the JSONL.
func benchE2E(t *testing.T, baseURL string, extra ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := append([]string{"bench", "--backend", "vllm", "--base-url", baseURL,
		"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--random-input-len", "64", "--random-output-len", "16", "--random-range-ratio", "0.5",
		"--num-prompts", "200", "--request-rate", "50", "--max-concurrency", "16",
		"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10", "--output-details"}, extra...)
	datasetInput := slices.Contains(extra, "--compat=dataset-input-tokens")
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	intAfter := func(label string) int { return tableInt(t, stdout, label) }
	// The random prompts are streamed: those that are cheap are made
	// before the run (a time budget decides how many), the rest while it
	// sends; their totals, printed before, must be what the run sent
	// (checked below).
	if !regexp.MustCompile(`Prompts (were all made before the run|are made as the run sends them, the first before it)`).MatchString(stderr) {
		t.Errorf("the random dataset's prompts were not streamed:\n%s", stderr)
	}
	wantIn, wantOut := intAfter("#Input tokens:"), intAfter("#Output tokens:")
	for _, l := range tableLabels {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(l) + ` +\S`).MatchString(stdout) {
			t.Errorf("table lacks %q:\n%s", l, stdout)
		}
	}
	if n := intAfter("Successful requests:"); n != 200 {
		t.Errorf("Successful requests: %d, want 200", n)
	}
	// ignore_eos is on, so the server generates exactly what was asked.
	if n := intAfter("Total generated tokens:"); n != wantOut {
		t.Errorf("Total generated tokens: %d, want the dataset's %d", n, wantOut)
	}
	totalIn := intAfter("Total input tokens:")
	if datasetInput && totalIn != wantIn {
		t.Errorf("Total input tokens: %d, want the dataset's %d under --compat dataset-input-tokens", totalIn, wantIn)
	}
	if n := intAfter("Peak concurrent requests:"); n > 16 {
		t.Errorf("Peak concurrent requests: %d, above --max-concurrency 16", n)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("JSONL does not parse: %v\n%s", err, b)
	}
	for k, want := range map[string]float64{"completed": 200, "total_output_tokens": float64(wantOut), "total_input_tokens": float64(totalIn), "request_rate": 50, "max_concurrency": 16} {
		if rec[k] != want {
			t.Errorf("JSONL %s = %v, want %v", k, rec[k], want)
		}
	}
	// By default the total is the server's prompt counts, so the
	// per-request input_lens add up to it.
	lens, _ := rec["input_lens"].([]any)
	sum := 0.0
	for _, v := range lens {
		sum += v.(float64)
	}
	if len(lens) != 200 {
		t.Errorf("JSONL input_lens has %d entries, want 200", len(lens))
	} else if !datasetInput && sum != float64(totalIn) {
		t.Errorf("JSONL input_lens sum to %v, total_input_tokens is %d: they must agree", sum, totalIn)
	}
	// 200 requests at 50/s: the last is scheduled at about 4 s.
	if d, _ := rec["duration"].(float64); d < 3 || d > 30 {
		t.Errorf("JSONL duration = %v s, want about 4 (tolerance 3..30 on a shared machine)", d)
	}
}

func TestBenchEndToEndSimulator(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	url := startSimulator(t, cfg)
	benchE2E(t, url)
	benchE2E(t, url, "--compat=dataset-input-tokens")
}

// TestBenchJSONLInfinity checks the default JSONL's bare Infinity (as
// bench_serving writes it) and --strict-json.
func TestBenchJSONLInfinity(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	url := startSimulator(t, cfg)
	for _, strict := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		args := []string{"bench", "--backend", "vllm-chat", "--base-url", url, "--dataset-name", "random",
			"--tokenizer", "../../tokenizer/testdata/qwen3", "--random-input-len", "16", "--random-output-len", "4",
			"--num-prompts", "5", "--output-file", out, "--disable-tqdm"}
		if strict {
			args = append(args, "--strict-json")
		}
		if code, stdout, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		err = json.Unmarshal(b, &rec)
		if strict {
			if err != nil || rec["request_rate"] != "inf" {
				t.Errorf("--strict-json: err %v, request_rate %v, want \"inf\"", err, rec["request_rate"])
			}
			continue
		}
		if !bytes.Contains(b, []byte(`"request_rate": Infinity`)) {
			t.Errorf("default JSONL lacks bench_serving's bare Infinity:\n%s", b)
		}
		// The default is Python's json.dumps; readers that accept Infinity
		// (Python, pandas) parse it, and so does this substitution.
		fixed := bytes.ReplaceAll(b, []byte(": Infinity"), []byte(`: "Infinity"`))
		if err := json.Unmarshal(fixed, &rec); err != nil || rec["completed"] != 5.0 {
			t.Errorf("default JSONL with Infinity handled: err %v, completed %v", err, rec["completed"])
		}
	}
}

func TestBenchNoTokenizer(t *testing.T) {
	// A server with no /model_info (the simulator names its tokenizer
	// there), so that nothing tells the bench which tokenizer to use.
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/model_info" {
			http.NotFound(w, r)
			return
		}
		sim.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	url := srv.URL
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	code, _, stderr := runCLI(t, "bench", "--backend", "vllm", "--base-url", url, "--dataset-name", "random", "--num-prompts", "2", "--disable-tqdm")
	if code != 1 || !strings.Contains(stderr, "no tokenizer: set --tokenizer") {
		t.Errorf("exit %d, stderr %q; want a clear tokenizer error", code, stderr)
	}
}
