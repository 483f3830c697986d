package llmtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/external"
)

// OllamaModel is the model tools/ollama/setup.sh creates: a tiny
// random-weight Qwen3-shaped model with the real Qwen3 tokenizer
// (tokenizer/testdata/qwen3), so a few ms per token on a CPU.
const OllamaModel = "tiny"

// OllamaDir returns the directory tools/ollama/setup.sh built ollama into
// (DIR/bin/ollama and DIR/models): $SERVINGPROBE_OLLAMA (make test builds it
// once under .build/ollama and sets this), or else .build/ollama at the
// repository's root. Without it the calling test is skipped, saying how to
// build it (see package external).
func OllamaDir(t testing.TB) string {
	t.Helper()
	return external.Path(t, "SERVINGPROBE_OLLAMA", external.BuildPath("ollama"),
		"ollama", "run `make test`, which builds it, or `make .build/ollama/.ready` (tools/ollama/setup.sh DIR)",
		func(dir string) error { _, err := os.Stat(filepath.Join(dir, "bin", "ollama")); return err })
}

// Ollama is a real ollama server on loopback, serving OllamaModel.
type Ollama struct {
	URL string // http://127.0.0.1:port
	cmd *exec.Cmd
}

// StartOllama starts `ollama serve` on a free loopback port with the given
// extra environment (OLLAMA_NUM_PARALLEL=4, say), waits until it answers
// /api/version, and stops it (the whole process group, so its runner goes
// too) when the test ends. Its log goes to a file in the test's temporary
// directory, named in a failure.
func StartOllama(t testing.TB, env ...string) *Ollama {
	t.Helper()
	dir := OllamaDir(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	logPath := filepath.Join(t.TempDir(), "ollama.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "bin", "ollama"), "serve")
	cmd.Env = append(os.Environ(),
		"OLLAMA_HOST=127.0.0.1:"+strconv.Itoa(port),
		"OLLAMA_MODELS="+filepath.Join(dir, "models"),
		"HOME="+t.TempDir(),
		"OLLAMA_NOPRUNE=1",
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ollama: %v", err)
	}
	o := &Ollama{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		_ = logf.Close()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(o.URL + "/api/version")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return o
			}
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("ollama exited before answering: %v\n%s", err, log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("ollama did not answer /api/version within 60 s\n%s", log)
		}
	}
}

// Healthy reports whether the server answers a one-token generation within
// the timeout: what a test asserts after it has loaded the server.
func (o *Ollama) Healthy(timeout time.Duration) error {
	c := &http.Client{Timeout: timeout}
	body := `{"model":"` + OllamaModel + `","prompt":"hi","stream":false,"options":{"num_predict":1}}`
	resp, err := c.Post(o.URL+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ollama answered HTTP %d", resp.StatusCode)
	}
	return nil
}
