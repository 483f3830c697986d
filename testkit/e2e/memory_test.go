package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/hostile"
)

// peakRSS is the most resident memory the process has held (VmHWM), in
// bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestBigWordProbeIsBounded: a target that streams 48 one-MiB "words"
// with no space between them and no usage leaves the count to our
// tokenizer, on one 48 MiB pre-tokenizer word. The BPE merge loop held
// that word as 1.7 GB of symbols and merge candidates: a /probe with a
// 10 s timeout took 64 s and the daemon grew from 31 MB to 3.6 GB. Now
// long words are split before the merge, the text counted is capped per
// request (beyond it the count is an estimate, and its source says so),
// and the count gives up at the probe's deadline. The daemon, which also
// probes the target on its own schedule, must answer /probe within the
// timeout (plus slack for a shared machine), stay under 1.5 GB, refuse
// an output-heavy bench window over its memory budget, and still stop on
// SIGTERM.
func TestBigWordProbeIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary against 48 MiB answers")
	}
	bw := hostile.NewBigWords(48, 1<<20)
	defer bw.Close()
	const timeout = 10 * time.Second
	cfg := hostile.Config([]hostile.Target{{
		Name: "big", URL: bw.URL(), Interval: 30 * time.Second, Timeout: timeout,
		MaxResponseBytes: 64 << 20, MaxEventBytes: 16 << 20,
	}}, fmt.Sprintf("bench:\n  results_dir: %q\n  max_body_bytes: 4096\n  max_prompts: 10000\n  max_request_rate: 50\n"+
		"  max_concurrency: 8\n  max_duration: 2m\n", t.TempDir()))
	path := filepath.Join(t.TempDir(), "servingprobe.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startDaemon(t, path)
	defer func() {
		if p.cmd.ProcessState == nil {
			p.kill()
		}
	}()
	start := time.Now()
	client := &http.Client{Timeout: 5 * time.Minute}
	resp, err := client.Get(p.url("/probe?target=big&debug=true"))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("/probe: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	hwm := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("/probe took %v (timeout %v), peak RSS %.0f MiB, %d requests served", took.Round(time.Millisecond), timeout, float64(hwm)/(1<<20), bw.Requests())
	if took > timeout+5*time.Second {
		t.Errorf("/probe took %v, want at most its timeout %v plus 5 s", took, timeout)
	}
	if hwm > 1500<<20 {
		t.Errorf("peak RSS %.0f MiB, want under 1500 MiB", float64(hwm)/(1<<20))
	}
	// The count is an estimate from the text's first MiB, and says so.
	// (The probe asks for 8 tokens, so the stream is cut as an overrun
	// after 41 of its words: still a 41 MiB word to count.)
	if !strings.Contains(string(body), "token_source=tokenizer_estimate") {
		t.Errorf("/probe answered %.600s, want a result whose token_source is tokenizer_estimate", body)
	}

	// The output-heavy window: 10,000 requests of 131,072 output
	// tokens at concurrency 4 was accepted (202) and grew about 65 MB/s
	// until the daemon died at 5.8 GB. Its outputs alone are about
	// 62,000 MiB of what the record keeps, so it is refused, naming the
	// fields to lower, and nothing runs.
	code, msg := do(t, http.MethodPost, p.url("/api/v1/benches"),
		`{"target":"big","dataset_name":"random","num_prompts":10000,"random_input_len":1,"random_output_len":131072,"max_concurrency":4,"request_rate":50}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(msg, "random_output_len") || !strings.Contains(msg, "more than a window may hold") {
		t.Errorf("POST the output-heavy window = %d %.300s, want 422 naming random_output_len and the budget", code, msg)
	}
	p.stop(t)
}
