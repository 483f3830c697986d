package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestOllamaReal runs servingprobe against a real engine: ollama, on
// loopback, serving llmtest.OllamaModel (a tiny random-weight model with
// Qwen3's tokenizer) on the CPU. One ollama serves every subtest, so that
// the package starts it once; each bench is a few short requests.
func TestOllamaReal(t *testing.T) {
	o := llmtest.StartOllama(t, "OLLAMA_NUM_PARALLEL=2")
	// The first request loads the model; later ones are quick.
	if err := o.Healthy(3 * time.Minute); err != nil {
		t.Fatalf("ollama did not answer a first generation: %v", err)
	}
	bin := binary(t)
	t.Run("probe every backend", func(t *testing.T) { testOllamaProbes(t, bin, o.URL) })
	t.Run("bench counts are ollama's", func(t *testing.T) { testOllamaBenchCounts(t, bin, o.URL) })
	t.Run("daemon killed and restarted", func(t *testing.T) { testOllamaDaemonKill(t, o) })
	t.Run("failed chat input counted as ollama counts it", func(t *testing.T) { testOllamaCutChatInput(t, o.URL) })
}

// testOllamaCutChatInput: a chat stream cut before ollama's final object
// (which states the prompt's count) is counted by our tokenizer through
// the model's chat template, and that count is the one ollama states for
// the same prompt answered in full (14 tokens, where the text alone is 6).
func testOllamaCutChatInput(t *testing.T, base string) {
	const prompt = "Tell me about the tide."
	tok, err := tokenizer.Load("../../tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	run := func(url string) prober.Result {
		be, err := prober.NewBackend("ollama-chat")
		if err != nil {
			t.Fatal(err)
		}
		p := &prober.Prober{Client: client, Backend: be, Name: "ollama-chat", Counter: prober.TokenizerCounter{Tokenizer: tok},
			Options: prober.RequestOptions{BaseURL: url, Model: llmtest.OllamaModel, Stream: true}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return p.Run(ctx, datasets.Prompt{Text: prompt, OutputLen: 8}, time.Time{})
	}
	whole := run(base)
	if whole.Outcome != prober.OutcomeSuccess || whole.InputTokensSource != prober.TokenSourceUsage {
		t.Fatalf("the whole answer: outcome %s (%s), input from %s", whole.Outcome, whole.Err, whole.InputTokensSource)
	}
	// A proxy that passes on the first line of the stream, then cuts it.
	u, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = tr
	rp.FlushInterval = -1
	rp.ModifyResponse = func(resp *http.Response) error {
		line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(line))
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return nil
	}
	cutSrv := httptest.NewServer(rp)
	defer cutSrv.Close()
	cut := run(cutSrv.URL)
	if cut.Outcome == prober.OutcomeSuccess {
		t.Fatalf("the cut stream succeeded: %+v", cut)
	}
	if cut.InputTokens != whole.InputTokens || cut.InputTokensSource != prober.TokenSourceTokenizer {
		t.Errorf("cut request: %d input tokens (%s); ollama counts the same prompt %d", cut.InputTokens, cut.InputTokensSource, whole.InputTokens)
	}
}

// testOllamaProbes: `probe` of every protocol ollama serves succeeds, and
// the token counts it reports are the ones ollama states (source usage).
func testOllamaProbes(t *testing.T, bin, base string) {
	for _, backend := range []string{"ollama", "ollama-chat", "openai", "openai-chat", "openai-responses", "anthropic", "openai-embeddings"} {
		t.Run(backend, func(t *testing.T) {
			cmd := exec.Command(bin, "probe", "--url", base, "--backend", backend, "--model", llmtest.OllamaModel,
				"--max-tokens", "8", "--timeout", "120s", "--json")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("probe --backend %s: %v\nstdout:\n%s\nstderr:\n%s", backend, err, out, stderr.String())
			}
			var r struct {
				Outcome            string `json:"outcome"`
				Err                string `json:"error"`
				InputTokens        int    `json:"input_tokens"`
				InputTokensSource  string `json:"input_tokens_source"`
				OutputTokens       int    `json:"output_tokens"`
				OutputTokensSource string `json:"output_tokens_source"`
				GeneratedText      string `json:"generated_text"`
			}
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("probe --json: %v\n%s", err, out)
			}
			if r.Outcome != "success" {
				t.Fatalf("outcome %s (%s), want success\n%s", r.Outcome, r.Err, out)
			}
			if r.InputTokens <= 0 || r.InputTokensSource != "usage" {
				t.Errorf("input %d tokens (%s), want ollama's count (usage)", r.InputTokens, r.InputTokensSource)
			}
			if backend == "openai-embeddings" {
				return // no output to count
			}
			if r.OutputTokens <= 0 || r.OutputTokens > 8 || r.OutputTokensSource != "usage" {
				t.Errorf("output %d tokens (%s), want ollama's count (usage), at most the 8 asked", r.OutputTokens, r.OutputTokensSource)
			}
		})
	}
}

// statedCounts is what ollama stated in the responses a recordingProxy
// passed on: the prompt and output tokens, summed over the responses.
type statedCounts struct {
	mu                sync.Mutex
	responses         int
	prompt, generated int
	unreadable        []string
}

// recordingProxy passes requests to ollama and reads, from each POST's
// response as it streams by, the counts ollama states: prompt_eval_count and
// eval_count in its final object (the native API), or the usage object
// (OpenAI's). It is the test's own reading of the wire, independent of
// servingprobe's decoders.
func recordingProxy(t *testing.T, target string) (*httptest.Server, *statedCounts) {
	t.Helper()
	u, err := neturl.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &statedCounts{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = tr
	rp.FlushInterval = -1 // pass every write on at once: the stream's timing is what is measured
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodPost {
			return nil // the bench's look at the server (its info, its models): no generation
		}
		pr, pw := io.Pipe()
		body := resp.Body
		resp.Body = pr
		go func() {
			var seen bytes.Buffer
			_, err := io.Copy(io.MultiWriter(pw, &seen), body)
			body.Close()
			pw.CloseWithError(err)
			c.add(seen.Bytes())
		}()
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv, c
}

// add reads one response's stated counts: the last line or SSE data that
// states them.
func (c *statedCounts) add(body []byte) {
	var prompt, generated int
	found := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := bytes.TrimPrefix(bytes.TrimSpace(sc.Bytes()), []byte("data: "))
		var v struct {
			Done            bool `json:"done"`
			PromptEvalCount *int `json:"prompt_eval_count"`
			EvalCount       *int `json:"eval_count"`
			Usage           *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(line, &v) != nil {
			continue
		}
		switch {
		case v.Done && v.PromptEvalCount != nil && v.EvalCount != nil:
			prompt, generated, found = *v.PromptEvalCount, *v.EvalCount, true
		case v.Usage != nil:
			prompt, generated, found = v.Usage.PromptTokens, v.Usage.CompletionTokens, true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.responses++
	if !found {
		c.unreadable = append(c.unreadable, string(body[:min(len(body), 300)]))
		return
	}
	c.prompt += prompt
	c.generated += generated
}

// testOllamaBenchCounts: a bench's totals are exactly the prompt and
// output tokens ollama stated for its requests, for ollama's native API
// and for its OpenAI API.
func testOllamaBenchCounts(t *testing.T, bin, base string) {
	tokenizer, err := filepath.Abs("../../tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"ollama-chat", "openai-chat"} {
		t.Run(backend, func(t *testing.T) {
			proxy, stated := recordingProxy(t, base)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			const prompts = 4
			cmd := exec.Command(bin, "bench", "--backend", backend, "--base-url", proxy.URL, "--model", llmtest.OllamaModel,
				"--dataset-name", "random", "--tokenizer", tokenizer, "--random-input-len", "16", "--random-output-len", "8",
				"--num-prompts", strconv.Itoa(prompts), "--request-rate", "inf", "--max-concurrency", "2",
				"--output-file", out, "--strict-json", "--disable-tqdm", "--warmup-requests", "0", "--ready-check-timeout-sec", "0")
			stdout, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bench: %v\n%s", err, stdout)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Completed int `json:"completed"`
				In        int `json:"total_input_tokens"`
				Out       int `json:"total_output_tokens"`
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatalf("record: %v\n%s", err, b)
			}
			stated.mu.Lock()
			defer stated.mu.Unlock()
			if len(stated.unreadable) > 0 {
				t.Fatalf("%d responses stated no counts, such as:\n%s", len(stated.unreadable), stated.unreadable[0])
			}
			if rec.Completed != prompts || stated.responses != prompts {
				t.Fatalf("%d completed, %d responses, want %d of each\n%s", rec.Completed, stated.responses, prompts, stdout)
			}
			if rec.In != stated.prompt || rec.Out != stated.generated {
				t.Errorf("bench totals %d in, %d out; ollama stated %d and %d", rec.In, rec.Out, stated.prompt, stated.generated)
			}
			if rec.In <= 0 || rec.Out <= 0 {
				t.Errorf("bench totals %d in, %d out: nothing was counted", rec.In, rec.Out)
			}
		})
	}
}

// testOllamaDaemonKill: a daemon probing ollama every second, killed with
// SIGKILL while it probes and started again on the same config, comes back and its
// probes succeed; ollama is unharmed.
//
// What is checked is that the probes succeed, not how fast: ollama
// generates on the CPU, which the machine's other work shares (under
// `make test` every package runs at once, with -race), and the default
// timeout (the 1 s interval) would fail a probe that is merely slow. So
// the target's timeout is long, and the test waits for the daemon's own
// success counter, with a bound that only guards against a hang.
func testOllamaDaemonKill(t *testing.T, o *llmtest.Ollama) {
	const (
		// ollamaProbeTimeout is the target's timeout: room for a CPU
		// generation of 8 tokens on a machine busy with other work.
		ollamaProbeTimeout = "30s"
		// ollamaSuccessGuard bounds the wait for a first success: a few
		// probes at that timeout, so only a daemon that never succeeds
		// reaches it.
		ollamaSuccessGuard = 3 * time.Minute
	)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servingprobe.yml")
	conf := fmt.Sprintf(`targets:
  - name: ollama
    url: %s
    backend: ollama-chat
    model: %s
    modules: [short]
    interval: 1s
    timeout: %s
modules:
  short:
    dataset: fixed
    prompt: Tell me about the tide.
    output_len: 8
`, o.URL, llmtest.OllamaModel, ollamaProbeTimeout)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	success := regexp.MustCompile(`servingprobe_requests_total\{mode="probe",model="` + regexp.QuoteMeta(llmtest.OllamaModel) +
		`",module="short",outcome="success",target="ollama"\} ([0-9]+)`)
	waitSuccess := func(p *daemonProc) {
		t.Helper()
		deadline := time.Now().Add(ollamaSuccessGuard)
		for {
			_, body := doNoFail(p, "GET", "/metrics", "")
			if m := success.FindStringSubmatch(body); m != nil && m[1] != "0" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no successful probe of ollama within %s\nmetrics:\n%s\nstderr:\n%s", ollamaSuccessGuard, body, p.stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	p := startDaemon(t, cfg)
	waitSuccess(p)
	p.kill()
	// A new process: its counters start at 0, so a success is its own.
	p = startDaemon(t, cfg)
	waitSuccess(p)
	p.stop(t)
	if err := o.Healthy(60 * time.Second); err != nil {
		t.Errorf("ollama after the daemon's kill: %v", err)
	}
}
