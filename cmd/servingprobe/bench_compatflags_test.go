package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/simulator"
)

// captured is one request a capturing server received.
type captured struct {
	path   string
	header http.Header
	body   map[string]any
}

// captureServer answers chat and completions requests with one streamed
// token and a usage block, and keeps every request it was sent.
func captureServer(t *testing.T) (*httptest.Server, func() []captured) {
	t.Helper()
	return captureServerTLS(t, false)
}

// captureServerTLS is captureServer, over TLS with a self-signed
// certificate when tls is set.
func captureServerTLS(t *testing.T, tls bool) (*httptest.Server, func() []captured) {
	t.Helper()
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var chunk string
		switch r.URL.Path {
		case "/v1/chat/completions":
			chunk = `{"choices":[{"index":0,"delta":{"content":"hi"}}]}`
		case "/v1/completions":
			chunk = `{"choices":[{"index":0,"text":"hi"}]}`
		default:
			http.NotFound(w, r) // /server_info, /metrics
			return
		}
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, captured{path: r.URL.Path, header: r.Header.Clone(), body: body})
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+chunk+"\n\n")
		io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, func() []captured {
		mu.Lock()
		defer mu.Unlock()
		return append([]captured(nil), got...)
	}
}

// compatBench runs a small bench against srv with extra flags.
func compatBench(t *testing.T, srv *httptest.Server, extra ...string) (int, string, string) {
	t.Helper()
	args := append([]string{"bench", "--base-url", srv.URL, "--model", "m", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--ready-check-timeout-sec", "0", "--warmup-requests", "0", "--disable-tqdm", "--no-server-metrics",
		"--output-file", t.TempDir() + "/out.jsonl"}, extra...)
	return runCLI(t, args...)
}

// TestBenchRandomImageSendsImages holds that sglang's older dataset name
// random-image, with its --random-image-num-images and
// --random-image-resolution, sends the images sglang's RandomImageLoader
// made (that many JPEG data URIs per request, at that resolution) rather
// than text prompts under the same name, as the "random" prefix rule
// alone would.
func TestBenchRandomImageSendsImages(t *testing.T) {
	srv, got := captureServer(t)
	code, stdout, stderr := compatBench(t, srv, "--backend", "sglang-oai-chat", "--dataset-name", "random-image",
		"--num-prompts", "2", "--random-image-num-images", "3", "--random-image-resolution", "16x24",
		"--random-input-len", "8", "--random-output-len", "4")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs := got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		msgs, _ := r.body["messages"].([]any)
		if len(msgs) != 1 {
			t.Fatalf("request %d: messages = %v", i, r.body["messages"])
		}
		content, _ := msgs[0].(map[string]any)["content"].([]any)
		images, texts := 0, 0
		for _, c := range content {
			part, _ := c.(map[string]any)
			switch part["type"] {
			case "image_url":
				url, _ := part["image_url"].(map[string]any)["url"].(string)
				if !strings.HasPrefix(url, "data:image/jpeg;base64,") {
					t.Errorf("request %d: image url %.40q, want a JPEG data URI", i, url)
				}
				images++
			case "text":
				texts++
			}
		}
		if images != 3 || texts != 1 {
			t.Errorf("request %d: %d image parts and %d text parts, want 3 and 1: %v", i, images, texts, content)
		}
	}
}

// TestBenchVLLMSamplingFlags holds the request bodies vLLM's bench serve
// sends for its sampling flags (vllm/benchmarks/serve.py collects
// top_p, top_k, min_p, temperature and the three penalties given into
// sampling_params, refuses them on a backend outside
// OPENAI_COMPATIBLE_BACKENDS, and sends {**sampling_params,
// **extra_body}, so that --extra-body wins), its --request-id-prefix
// (datasets number requests prefix+index; endpoint_request_func.py's
// _update_headers_common sets x-request-id), and chat_template_kwargs
// as its --extra-body help shows it, on chat backends only.
func TestBenchVLLMSamplingFlags(t *testing.T) {
	sampling := []string{"--temperature", "0.7", "--top-p", "0.9", "--top-k", "20", "--min-p", "0.05",
		"--frequency-penalty", "0.1", "--presence-penalty", "0.2", "--repetition-penalty", "1.1", "--request-id-prefix", "run-"}
	want := map[string]any{"temperature": 0.7, "top_p": 0.9, "top_k": 20.0, "min_p": 0.05,
		"frequency_penalty": 0.1, "presence_penalty": 0.2, "repetition_penalty": 1.1}
	for _, tc := range []struct {
		backend, path string
		extra         []string
		want          map[string]any
	}{
		{"vllm", "/v1/completions", nil, want},
		{"vllm-chat", "/v1/chat/completions", []string{"--chat-template-kwargs", `{"enable_thinking": false}`},
			map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}}},
		// --extra-request-body (vLLM's --extra-body) is merged over them.
		{"sglang-oai", "/v1/completions", []string{"--extra-request-body", `{"top_k": 5}`}, map[string]any{"top_k": 5.0, "min_p": 0.05}},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			srv, got := captureServer(t)
			args := append([]string{"--backend", tc.backend, "--dataset-name", "random", "--num-prompts", "2",
				"--random-input-len", "8", "--random-output-len", "4"}, sampling...)
			code, stdout, stderr := compatBench(t, srv, append(args, tc.extra...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			reqs := got()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			var ids []string
			for _, r := range reqs {
				if r.path != tc.path {
					t.Errorf("path %s, want %s", r.path, tc.path)
				}
				for k, v := range tc.want {
					if !reflect.DeepEqual(r.body[k], v) {
						t.Errorf("body %s = %#v, want %#v", k, r.body[k], v)
					}
				}
				ids = append(ids, r.header.Get("X-Request-Id"))
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []string{"run-0", "run-1"}) {
				t.Errorf("x-request-id headers %q, want run-0 and run-1", ids)
			}
		})
	}
	// A backend that cannot carry a flag refuses it before sending.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "sglang", "--top-k", "5"}, "--top-k: is sent only by the OpenAI backends"},
		{[]string{"--backend", "sglang", "--repetition-penalty", "1.1"}, "--repetition-penalty: is sent only by the OpenAI backends"},
		{[]string{"--backend", "vllm", "--chat-template-kwargs", `{"a": 1}`}, "--chat-template-kwargs: needs a chat backend"},
	} {
		srv, got := captureServer(t)
		code, stdout, stderr := compatBench(t, srv, append(tc.args, "--dataset-name", "random", "--num-prompts", "1")...)
		if code == 0 || !strings.Contains(stderr, tc.want) || len(got()) != 0 {
			t.Errorf("%v: exit %d, %d requests, want a refusal %q\n%s\n%s", tc.args, code, len(got()), tc.want, stdout, stderr)
		}
	}
}

// TestBenchInsecure: vLLM's --insecure lets a bench reach a server whose
// certificate does not verify; without it not one request is answered.
func TestBenchInsecure(t *testing.T) {
	srv, got := captureServerTLS(t, true)
	args := []string{"--backend", "vllm", "--dataset-name", "random", "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "4"}
	code, stdout, stderr := compatBench(t, srv, args...)
	if len(got()) != 0 || (code == 0 && !regexp.MustCompile(`(?m)^Successful requests:\s+0\s*$`).MatchString(stdout)) {
		t.Errorf("without --insecure: exit %d, %d requests answered; want none\n%s\n%s", code, len(got()), stdout, stderr)
	}
	code, stdout, stderr = compatBench(t, srv, append(args, "--insecure")...)
	if code != 0 || len(got()) != 2 {
		t.Fatalf("with --insecure: exit %d, %d requests answered, want 2\n%s\n%s", code, len(got()), stdout, stderr)
	}
}

// TestBenchTokenTraceBackends: the token-trace dataset holds token ids,
// which only an input_ids backend sends; another refuses it before any
// request, naming the backends that can.
func TestBenchTokenTraceBackends(t *testing.T) {
	srv, got := captureServer(t)
	code, stdout, stderr := compatBench(t, srv, "--backend", "vllm", "--dataset-name", "token-trace",
		"--dataset-path", "../../datasets/testdata/token_trace.jsonl", "--num-prompts", "2")
	if code == 0 || !strings.Contains(stderr, "token-trace sends its token ids as input_ids: ") || len(got()) != 0 {
		t.Errorf("--backend vllm with token-trace: exit %d, %d requests\n%s\n%s", code, len(got()), stdout, stderr)
	}
}

// TestBenchTokenTraceEndToEnd runs the shipped token-trace rows against
// the simulator's sglang /generate, replaying their timestamps: every
// usable row is one request carrying its ids, and the table says both
// the rows' lengths and what the server counted of the ids.
func TestBenchTokenTraceEndToEnd(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	base := startSimulator(t, cfg)
	code, stdout, stderr := runCLI(t, "bench", "--backend", "sglang", "--base-url", base, "--dataset-name", "token-trace",
		"--dataset-path", "../../datasets/testdata/token_trace.jsonl", "--num-prompts", "10", "--use-trace-timestamps",
		"--tokenizer", "../../tokenizer/testdata/qwen3", "--ready-check-timeout-sec", "10", "--warmup-requests", "0",
		"--disable-tqdm", "--no-server-metrics", "--output-file", t.TempDir()+"/out.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := tableInt(t, stdout, "Successful requests:"); got != 4 {
		t.Errorf("successful requests %d, want 4\n%s", got, stdout)
	}
	// The dataset's lengths, as sglang counts them: 4+5+1+2 (the second
	// row's num_input_tokens is 5 over its 2 ids).
	if got := tableInt(t, stdout, "Total input text tokens:"); got != 12 {
		t.Errorf("total input text tokens %d, want 12\n%s", got, stdout)
	}
	// What the server counted of the ids sent: 4+2+1+2.
	if got := tableInt(t, stdout, "Total input tokens:"); got != 9 {
		t.Errorf("total input tokens %d, want 9 (the ids sent)\n%s", got, stdout)
	}
}

// TestBenchBurstGPTReplay replays the shipped BurstGPT rows by their
// timestamps, sped up 1000 times (--mooncake-slowdown-factor 0.001):
// the three GPT-4 rows with a response, each request asking for its
// row's Response tokens.
func TestBenchBurstGPTReplay(t *testing.T) {
	srv, got := captureServer(t)
	code, stdout, stderr := compatBench(t, srv, "--backend", "vllm", "--dataset-name", "burstgpt",
		"--dataset-path", "../../datasets/testdata/burstgpt.csv", "--num-prompts", "10", "--use-trace-timestamps",
		"--mooncake-slowdown-factor", "0.001")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var lens []float64
	for _, r := range got() {
		n, _ := r.body["max_tokens"].(float64)
		lens = append(lens, n)
	}
	slices.Sort(lens)
	if !slices.Equal(lens, []float64{4, 121, 230}) {
		t.Errorf("max_tokens of the requests %v, want 4, 121 and 230", lens)
	}
}

// TestBenchLoRAAssignment holds vLLM's --lora-modules and
// --lora-assignment to vLLM's bench serve (vllm/benchmarks/serve.py):
// round-robin gives request i adapter i mod their count, sent as the
// body's model (req_model_id = req_lora_module); here lora_path carries it
// too, as sglang's bench_serving sends it. The whole first body is
// compared, so that the assignment adds nothing else. Given with
// --lora-request-distribution, which sets the same thing, it is refused.
func TestBenchLoRAAssignment(t *testing.T) {
	srv, got := captureServer(t)
	code, stdout, stderr := compatBench(t, srv, "--backend", "vllm", "--dataset-name", "random", "--num-prompts", "5",
		"--random-input-len", "4", "--random-output-len", "2", "--random-range-ratio", "1", "--max-concurrency", "1",
		"--lora-modules", "a", "b", "c", "--lora-assignment", "round-robin")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs := got()
	var models []string
	for _, r := range reqs {
		m, _ := r.body["model"].(string)
		models = append(models, m)
		if r.body["lora_path"] != m {
			t.Errorf("lora_path %v, want the request's adapter %q", r.body["lora_path"], m)
		}
	}
	if want := []string{"a", "b", "c", "a", "b"}; !slices.Equal(models, want) {
		t.Errorf("models %v, want vLLM's round-robin %v", models, want)
	}
	if len(reqs) > 0 {
		b := reqs[0].body
		prompt, _ := b["prompt"].(string)
		want := map[string]any{"model": "a", "lora_path": "a", "prompt": prompt, "max_tokens": 2.0, "stream": true,
			"temperature": 0.0, "best_of": 1.0, "ignore_eos": true, "stream_options": map[string]any{"include_usage": true}}
		if diff := cmp.Diff(want, b); diff != "" {
			t.Errorf("first body (-want +got):\n%s", diff)
		}
	}

	code, _, stderr = compatBench(t, srv, "--backend", "vllm", "--lora-modules", "a", "b", "--lora-assignment", "random",
		"--lora-request-distribution", "distinct")
	if code == 0 || !strings.Contains(stderr, "give one") {
		t.Errorf("--lora-assignment with --lora-request-distribution: exit %d, stderr %s; want a refusal", code, stderr)
	}
}

// TestBenchAzureTraceReplay replays the shipped rows of Azure's 2023 code
// trace through the CLI: every row is one request asking for its
// GeneratedTokens, and the table's input total is the rows'
// ContextTokens.
func TestBenchAzureTraceReplay(t *testing.T) {
	srv, got := captureServer(t)
	code, stdout, stderr := compatBench(t, srv, "--backend", "vllm", "--dataset-name", "azure-trace",
		"--dataset-path", "../../datasets/testdata/azure_code_2023.csv", "--num-prompts", "4", "--use-trace-timestamps",
		"--mooncake-slowdown-factor", "0.01", "--compat", "dataset-input-tokens")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var lens []float64
	for _, r := range got() {
		n, _ := r.body["max_tokens"].(float64)
		lens = append(lens, n)
	}
	slices.Sort(lens)
	if !slices.Equal(lens, []float64{8, 10, 14, 27}) {
		t.Errorf("max_tokens of the requests %v, want 8, 10, 14 and 27", lens)
	}
	if n := tableInt(t, stdout, "Total input tokens:"); n != 4808+3180+110+7433 {
		t.Errorf("total input tokens %d, want the rows' ContextTokens, %d\n%s", n, 4808+3180+110+7433, stdout)
	}
}

// usageRecorder passes requests to next and keeps, for every chat
// request, how many input_audio parts it carried and the prompt_tokens
// the server's usage stated in its reply.
type usageRecorder struct {
	next   http.Handler
	mu     sync.Mutex
	clips  []int
	prompt []int
}

func (u *usageRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		u.next.ServeHTTP(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(b)))
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(b, &body)
	clips := 0
	for _, m := range body.Messages {
		var parts []struct {
			Type       string `json:"type"`
			InputAudio *struct {
				Data, Format string
			} `json:"input_audio"`
		}
		if json.Unmarshal(m.Content, &parts) == nil {
			for _, p := range parts {
				if p.Type == "input_audio" && p.InputAudio != nil && p.InputAudio.Format == "wav" && p.InputAudio.Data != "" {
					clips++
				}
			}
		}
	}
	rec := &teeWriter{ResponseWriter: w}
	u.next.ServeHTTP(rec, r)
	prompt := -1
	if m := regexp.MustCompile(`"prompt_tokens":(\d+)`).FindSubmatch(rec.buf); m != nil {
		prompt, _ = strconv.Atoi(string(m[1]))
	}
	u.mu.Lock()
	u.clips = append(u.clips, clips)
	u.prompt = append(u.prompt, prompt)
	u.mu.Unlock()
}

// teeWriter keeps a copy of what it writes.
type teeWriter struct {
	http.ResponseWriter
	buf []byte
}

func (t *teeWriter) Write(b []byte) (int, error) {
	t.buf = append(t.buf, b...)
	return t.ResponseWriter.Write(b)
}

func (t *teeWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestBenchAudioEndToEnd runs sglang's audio dataset against the built-in
// simulator: every request carries --audio-count WAV clips as input_audio
// parts, and the table's input tokens are what the server's usage stated
// (the dataset knows no prompt length of its own), the same in the JSONL
// record. On a completions backend the dataset is refused before anything
// is sent.
func TestBenchAudioEndToEnd(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	rec := &usageRecorder{next: sim.Handler()}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	out := t.TempDir() + "/out.jsonl"
	code, stdout, stderr := runCLI(t, "bench", "--backend", "sglang-oai-chat", "--base-url", srv.URL, "--dataset-name", "audio",
		"--audio-duration", "0.05", "--audio-count", "2", "--num-prompts", "3", "--random-output-len", "4",
		"--tokenizer", "../../tokenizer/testdata/qwen3", "--ready-check-timeout-sec", "10", "--warmup-requests", "0",
		"--disable-tqdm", "--no-server-metrics", "--strict-json", "--output-file", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := tableInt(t, stdout, "Successful requests:"); got != 3 {
		t.Errorf("successful requests %d, want 3\n%s", got, stdout)
	}
	rec.mu.Lock()
	clips, prompt := rec.clips, rec.prompt
	rec.mu.Unlock()
	sum := 0
	for i := range clips {
		if clips[i] != 2 || prompt[i] <= 0 {
			t.Errorf("request %d: %d wav clips, prompt_tokens %d; want 2 and the server's count", i, clips[i], prompt[i])
		}
		sum += prompt[i]
	}
	if got := tableInt(t, stdout, "Total input tokens:"); len(clips) != 3 || got != sum {
		t.Errorf("total input tokens %d over %d requests, want the server's usage, %d\n%s", got, len(clips), sum, stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var record struct {
		TotalInputTokens int `json:"total_input_tokens"`
	}
	if err := json.Unmarshal(b, &record); err != nil || record.TotalInputTokens != sum {
		t.Errorf("JSONL total_input_tokens %d (%v), want the table's %d", record.TotalInputTokens, err, sum)
	}

	code, _, stderr = runCLI(t, "bench", "--backend", "vllm", "--base-url", srv.URL, "--dataset-name", "audio",
		"--model", "m", "--tokenizer", "../../tokenizer/testdata/qwen3", "--ready-check-timeout-sec", "0")
	if code == 0 || !strings.Contains(stderr, "input_audio parts of a chat message") {
		t.Errorf("audio on a completions backend: exit %d, stderr %s; want a refusal naming the chat backends", code, stderr)
	}
}

// TestBenchDynamicPlan runs a two-phase plan through the CLI's
// --dynamic-workload-path: each phase's requests (duration × rate of
// them) ask for its output length, and only the first phase's carry its
// extra_request_body.
func TestBenchDynamicPlan(t *testing.T) {
	plan := t.TempDir() + "/plan.json"
	if err := os.WriteFile(plan, []byte(`{"phases": [
		{"name": "a", "duration": 0.2, "request_rate": 20, "input_len": 8, "output_len": 3, "extra_request_body": {"priority": 2}},
		{"name": "b", "duration": 0.1, "request_rate": 20, "input_len": 16, "output_len": 6}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, got := captureServer(t)
	code, stdout, stderr := compatBench(t, srv, "--backend", "vllm", "--dataset-name", "dynamic", "--dynamic-workload-path", plan)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	count := map[float64]int{}
	for _, r := range got() {
		n, _ := r.body["max_tokens"].(float64)
		count[n]++
		if wantPriority := n == 3; (r.body["priority"] == 2.0) != wantPriority {
			t.Errorf("max_tokens %v with priority %v: only phase a's requests carry its body", n, r.body["priority"])
		}
	}
	if count[3] != 4 || count[6] != 2 || len(count) != 2 {
		t.Errorf("requests by max_tokens %v, want 4 of phase a (3) and 2 of phase b (6)", count)
	}
}
