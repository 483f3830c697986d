package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/hostile"
)

// mountTmpfs mounts a tmpfs of sizeKB KiB on a new directory and returns
// it; the test is skipped, saying why, where mounting is not permitted
// (not root, or a container without CAP_SYS_ADMIN). The logic these tests
// cover end to end is also tested in bench/api and bench through injected
// write errors, which need no mount.
func mountTmpfs(t *testing.T, sizeKB int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dk,mode=0755", sizeKB), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs to simulate a full or read-only disk (needs root and CAP_SYS_ADMIN): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system is full.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			return path
		}
	}
}

type windowView struct {
	ID       string     `json:"id"`
	Status   string     `json:"status"`
	Error    string     `json:"error"`
	Ended    *time.Time `json:"ended"`
	Progress *struct {
		Done, Total, Failed int
	} `json:"progress"`
}

// diskFixture is the binary with one simulator target and its results in
// dir.
func diskFixture(t *testing.T, results string) (cfgPath string) {
	t.Helper()
	sim, stopSim, err := hostile.StartSimulator()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopSim)
	cfgPath = filepath.Join(t.TempDir(), "servingprobe.yml")
	targets := []hostile.Target{{Name: "sim", URL: sim, Model: hostile.SimModel, Interval: 30 * time.Second}}
	extra := fmt.Sprintf("bench:\n  results_dir: %q\n  max_request_rate: 50\n  max_duration: 2m\n", results)
	if err := os.WriteFile(cfgPath, []byte(hostile.ConfigWithTokenizer(targets, extra, testTokenizer(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}

// longWindow is a window that runs for about a minute unless stopped.
const longWindow = `{"target":"sim","num_prompts":200,"request_rate":3,"warmup_requests":0,"max_duration":"2m"}`

func getWindow(t *testing.T, p *daemonProc, id string) (int, windowView) {
	t.Helper()
	code, body := do(t, "GET", p.url("/api/v1/benches/"+id), "")
	var v windowView
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("GET %s: %v: %s", id, err, body)
		}
	}
	return code, v
}

// waitWindow polls a window until cond holds, for at most d.
func waitWindow(t *testing.T, p *daemonProc, id string, d time.Duration, what string, cond func(windowView) bool) windowView {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, v := getWindow(t, p, id)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("window %s: %s not reached in %s: %+v\nstderr:\n%s", id, what, d, v, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startDaemonKilled is startDaemon, with the daemon killed at cleanup if
// the test ends early, so that a failed test does not leave it sending
// requests to the simulator the cleanup stops.
func startDaemonKilled(t *testing.T, cfg string, args ...string) *daemonProc {
	t.Helper()
	p := startDaemon(t, cfg, args...)
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.kill()
		}
	})
	return p
}

func startWindow(t *testing.T, p *daemonProc) string {
	t.Helper()
	code, body := do(t, "POST", p.url("/api/v1/benches"), longWindow)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %s", code, body)
	}
	var v windowView
	_ = json.Unmarshal([]byte(body), &v)
	return v.ID
}

// benchRuns is servingprobe_bench_runs_total{target="sim",result=result}.
func benchRuns(t *testing.T, p *daemonProc, result string) float64 {
	t.Helper()
	_, body := do(t, "GET", p.url("/metrics"), "")
	m := regexp.MustCompile(`(?m)^servingprobe_bench_runs_total\{result="` + result + `",target="sim"\} (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no servingprobe_bench_runs_total{result=%q,target=\"sim\"} in /metrics", result)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// A window running when the daemon is killed is listed after the restart
// as interrupted, with the progress last recorded, instead of "no such
// bench run".
func TestKill9RunningWindowIsListedInterrupted(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results")
	cfg := diskFixture(t, results)
	p := startDaemonKilled(t, cfg)
	id := startWindow(t, p)
	waitWindow(t, p, id, 30*time.Second, "2 requests done", func(v windowView) bool { return v.Progress != nil && v.Progress.Done >= 2 })
	// The progress is recorded every 10 s: wait for a record with some.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(results, "bench-"+id+".jsonl"))
		var v windowView
		if json.Unmarshal(b, &v) == nil && v.Progress != nil && v.Progress.Done > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress recorded in 30 s: %s\nstderr:\n%s", b, p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.kill()

	p = startDaemonKilled(t, cfg)
	defer p.stop(t)
	code, v := getWindow(t, p, id)
	if code != http.StatusOK {
		t.Fatalf("GET %s after kill -9 and restart = %d, want 200", id, code)
	}
	if v.Status != "interrupted" || v.Ended == nil || !strings.Contains(v.Error, "killed or crashed") {
		t.Errorf("window after kill -9 = %+v, want interrupted with an end and the reason", v)
	}
	if v.Progress == nil || v.Progress.Done == 0 || v.Progress.Total != 200 {
		t.Errorf("interrupted window's progress = %+v, want the recorded progress of 200 prompts", v.Progress)
	}
	// The target is free for a new window.
	if code, body := do(t, "POST", p.url("/api/v1/benches"), `{"target":"sim","num_prompts":2,"request_rate":50,"warmup_requests":0}`); code != http.StatusAccepted {
		t.Errorf("POST after the restart = %d %s", code, body)
	}
}

// With the results directory full, a window whose result cannot be
// written ends failed with the write error and counts as write_failed; a
// new window is refused while the disk is full. After a restart the
// window is still listed (interrupted, from its last record).
func TestFullDiskFailsWindow(t *testing.T) {
	results := mountTmpfs(t, 256)
	cfg := diskFixture(t, results)
	p := startDaemonKilled(t, cfg)
	id := startWindow(t, p)
	waitWindow(t, p, id, 30*time.Second, "running", func(v windowView) bool { return v.Status == "running" })
	filler := fillDisk(t, results)
	if code, body := do(t, "DELETE", p.url("/api/v1/benches/"+id), ""); code != http.StatusAccepted {
		t.Fatalf("DELETE = %d %s", code, body)
	}
	v := waitWindow(t, p, id, 30*time.Second, "an end", func(v windowView) bool { return v.Ended != nil })
	if v.Status != "failed" || !strings.Contains(v.Error, "no space left on device") || !strings.Contains(v.Error, "ended canceled") {
		t.Errorf("window ended on a full disk = %+v, want failed with the write error", v)
	}
	if got := benchRuns(t, p, "write_failed"); got != 1 {
		t.Errorf("bench_runs_total{result=write_failed} = %v, want 1", got)
	}
	if got := benchRuns(t, p, "canceled"); got != 0 {
		t.Errorf("bench_runs_total{result=canceled} = %v, want 0: the canceled run's result was lost", got)
	}
	if code, body := do(t, "POST", p.url("/api/v1/benches"), longWindow); code != http.StatusServiceUnavailable || !strings.Contains(body, "no space left on device") {
		t.Errorf("POST on a full disk = %d %s, want 503 naming the error", code, body)
	}
	p.stop(t)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p = startDaemonKilled(t, cfg)
	defer p.stop(t)
	if code, v := getWindow(t, p, id); code != http.StatusOK || v.Status != "interrupted" {
		t.Errorf("after a restart the window whose result was lost = %d %+v, want listed as interrupted", code, v)
	}
}

// A results directory that turns read-only under a running window: the
// window ends failed with EROFS, never completed.
func TestReadOnlyResultsDirFailsWindow(t *testing.T) {
	results := mountTmpfs(t, 1024)
	cfg := diskFixture(t, results)
	p := startDaemonKilled(t, cfg)
	defer p.stop(t)
	code, body := do(t, "POST", p.url("/api/v1/benches"), `{"target":"sim","num_prompts":30,"request_rate":3,"warmup_requests":0}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %s", code, body)
	}
	var w windowView
	_ = json.Unmarshal([]byte(body), &w)
	waitWindow(t, p, w.ID, 30*time.Second, "running", func(v windowView) bool { return v.Status == "running" })
	if out, err := exec.Command("mount", "-o", "remount,ro", results).CombinedOutput(); err != nil {
		t.Skipf("cannot remount the tmpfs read-only: %v: %s", err, out)
	}
	v := waitWindow(t, p, w.ID, 60*time.Second, "an end", func(v windowView) bool { return v.Ended != nil })
	if v.Status != "failed" || !strings.Contains(v.Error, "read-only file system") || !strings.Contains(v.Error, "ended completed") {
		t.Errorf("window ended on a read-only directory = %+v, want failed with EROFS", v)
	}
	if got := benchRuns(t, p, "completed"); got != 0 {
		t.Errorf("bench_runs_total{result=completed} = %v, want 0", got)
	}
	if got := benchRuns(t, p, "write_failed"); got != 1 {
		t.Errorf("bench_runs_total{result=write_failed} = %v, want 1", got)
	}
}

// bench --output-file on a full disk: the command exits non-zero saying
// so, the file is left as it was, and once there is room again the next
// record reads back on a line of its own.
func TestBenchOutputFileFullDisk(t *testing.T) {
	dir := mountTmpfs(t, 64)
	sim, stopSim, err := hostile.StartSimulator()
	if err != nil {
		t.Fatal(err)
	}
	defer stopSim()
	qwen3, err := filepath.Abs("../../tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	const before = "{\"previous\":1}\n"
	if err := os.WriteFile(out, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	filler := fillDisk(t, dir)
	// One free page: the record (with per-request details, tens of KB)
	// is written in part before the disk is full again.
	if err := os.Truncate(filler, mustSize(t, filler)-4096); err != nil {
		t.Fatal(err)
	}
	run := func() (int, string) {
		cmd := exec.Command(binary(t), "bench", "--backend", "vllm", "--base-url", sim, "--model", hostile.SimModel,
			"--dataset-name", "random", "--random-input-len", "8", "--random-output-len", "16", "--num-prompts", "40",
			"--request-rate", "200", "--tokenizer", qwen3, "--ready-check-timeout-sec", "0", "--warmup-requests", "0",
			"--disable-tqdm", "--output-details", "--output-file", out)
		b, err := cmd.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(b)
	}
	code, output := run()
	if code == 0 || !strings.Contains(output, "no space left on device") || !strings.Contains(output, "left as it was") {
		t.Errorf("bench on a full disk exited %d, want non-zero naming the error:\n%s", code, output)
	}
	if b, _ := os.ReadFile(out); string(b) != before {
		t.Errorf("output file after the failed append = %.200q (%d bytes), want it as it was", b, len(b))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, output := run(); code != 0 {
		t.Fatalf("bench with room exited %d:\n%s", code, output)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || lines[0]+"\n" != before {
		t.Fatalf("output file has %d lines, want the previous record and the new one", len(lines))
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
		t.Errorf("the new record does not read back: %v", err)
	}
}

func mustSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
