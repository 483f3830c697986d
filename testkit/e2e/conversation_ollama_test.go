package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// TestOllamaConversation runs the daemon against a real ollama with one
// slot, whose prompt cache keeps the last request's prefix: a
// conversation's later turns resend the history it holds, so their TTFT
// is far below the cold first turn's, as the daemon's own /metrics show
// per turn; and a fixed prompt with cache_bust stays cold probe after
// probe. Timing tolerances are wide: real sockets and a shared CPU.
func TestOllamaConversation(t *testing.T) {
	o := llmtest.StartOllama(t, "OLLAMA_NUM_PARALLEL=1")
	if err := o.Healthy(3 * time.Minute); err != nil {
		t.Fatalf("ollama did not answer a first generation: %v", err)
	}
	var cold float64
	t.Run("warm turns of a conversation", func(t *testing.T) {
		p := startDaemon(t, writeConfig(t, o.URL, `conv:
    dataset: conversation
    turns: 3
    input_len: 2500
    turn_input_len: 32
    output_len: 8
    session_header: x-session-id`, "5s"))
		defer p.stop(t)
		body := waitCount(t, p, "servingprobe_turn_time_to_first_token_seconds", `module="conv",target="ollama",turn="3"`, 3)
		turn1 := meanOf(t, body, "servingprobe_turn_time_to_first_token_seconds", `module="conv",target="ollama",turn="1"`)
		turn3 := meanOf(t, body, "servingprobe_turn_time_to_first_token_seconds", `module="conv",target="ollama",turn="3"`)
		t.Logf("mean TTFT: turn 1 %.3f s, turn 3 %.3f s", turn1, turn3)
		if !(turn3 < turn1/2) {
			t.Errorf("turn 3's mean TTFT %.3f s is not under half of turn 1's %.3f s: the history was not served from the cache", turn3, turn1)
		}
		cold = turn1
	})
	t.Run("cache_bust keeps a fixed prompt cold", func(t *testing.T) {
		// The same fixed prompt, probed with cache_bust and then without:
		// without it every probe after the first is served from the cache.
		// The two run one after the other, so that the machine's load (the
		// other test packages building and running) is about the same for
		// both; a reference taken earlier in the test, when the machine was
		// busier, once made a cold prefill read as cached.
		prompt := strings.Repeat("The tide rises and falls with the moon over the grey harbour wall. ", 175)
		probe := func(bust bool) float64 {
			p := startDaemon(t, writeConfig(t, o.URL, fmt.Sprintf(`fixed:
    dataset: fixed
    prompt: %q
    output_len: 8
    cache_bust: %t`, prompt, bust), "2s"))
			defer p.stop(t)
			const series = `mode="probe",model="[^"]*",module="fixed",target="ollama"`
			body := waitCount(t, p, "servingprobe_time_to_first_token_seconds", series, 6)
			return meanOf(t, body, "servingprobe_time_to_first_token_seconds", series)
		}
		busted, cached := probe(true), probe(false)
		t.Logf("mean TTFT of 6 probes of one fixed prompt: %.3f s with cache_bust, %.3f s without (the first cold, the rest cached); a conversation's cold turn %.3f s", busted, cached, cold)
		if !(busted > 2*cached) {
			t.Errorf("cache_bust probes' mean TTFT %.3f s is not over twice that of the same prompt without it, %.3f s: they were served from the cache", busted, cached)
		}
	})
}

// writeConfig writes a daemon config probing ollama with one module.
func writeConfig(t *testing.T, url, module, interval string) string {
	t.Helper()
	name, _, _ := strings.Cut(module, ":")
	cfg := filepath.Join(t.TempDir(), "servingprobe.yml")
	conf := fmt.Sprintf(`targets:
  - name: ollama
    url: %s
    backend: ollama-chat
    model: %s
    modules: [%s]
    interval: %s
    timeout: 2m
modules:
  %s
`, url, llmtest.OllamaModel, name, interval, module)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitCount waits until the histogram's series matching labels has at
// least n samples, and returns the /metrics body it saw then.
func waitCount(t *testing.T, p *daemonProc, name, labels string, n float64) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, body := doNoFail(p, "GET", "/metrics", "")
		if c, ok := sampleOf(body, name+"_count", labels); ok && c >= n {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s} did not reach %v samples in 3 minutes\nmetrics:\n%s\nstderr:\n%s", name, labels, n, body, p.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// meanOf is a histogram series' sum over its count.
func meanOf(t *testing.T, body, name, labels string) float64 {
	t.Helper()
	sum, ok1 := sampleOf(body, name+"_sum", labels)
	count, ok2 := sampleOf(body, name+"_count", labels)
	if !ok1 || !ok2 || count == 0 {
		t.Fatalf("%s{%s}: no samples in\n%s", name, labels, body)
	}
	return sum / count
}

// sampleOf finds the value of the sample name{...labels...} in an
// exposition; labels is a regular expression of the sorted label pairs
// after model (or all of them, from mode).
func sampleOf(body, name, labels string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{(?:model="[^"]*",)?` + labels + `\} (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}
