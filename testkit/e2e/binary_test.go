package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

// binary builds cmd/servingprobe once per test binary.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "servingprobe-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "servingprobe")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/servingprobe")
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// daemonProc is a running `servingprobe serve`.
type daemonProc struct {
	cmd            *exec.Cmd
	addr           string
	stdout, stderr *lockedBuffer
	done           chan error
}

func startDaemon(t *testing.T, config string, extraArgs ...string) *daemonProc {
	t.Helper()
	p := &daemonProc{addr: freeAddr(t), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	args := append([]string{"serve", "--config.file=" + config, "--web.listen-address=" + p.addr}, extraArgs...)
	p.cmd = exec.Command(binary(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(p.url("/-/ready"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case err := <-p.done:
			t.Fatalf("servingprobe exited before ready: %v\nstderr:\n%s", err, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			p.kill()
			t.Fatalf("servingprobe not ready after 20 s\nstderr:\n%s", p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *daemonProc) url(path string) string { return "http://" + p.addr + path }

// stop sends SIGTERM and waits for a clean exit.
func (p *daemonProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("servingprobe exit: %v\nstderr:\n%s", err, p.stderr)
		}
	case <-time.After(15 * time.Second):
		p.kill()
		t.Errorf("servingprobe did not exit 15 s after SIGTERM")
	}
}

// kill sends SIGKILL and waits.
func (p *daemonProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// do sends a request and returns the status and body.
func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp.StatusCode, string(b)
}

var shortClient = &http.Client{Timeout: 5 * time.Second}

func newRequest(method, url, body string) (*http.Request, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err == nil && body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, err
}

// runBinary runs the binary and returns its exit status and combined output;
// a failure to start it fails the test.
func runBinary(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	b, err := exec.Command(bin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(b)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(b)
	}
	t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, b)
	return 0, ""
}
