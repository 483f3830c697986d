package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
)

// failWrites makes every write of e's windows fail with err once fail
// returns true for the file's path.
func failWrites(e *benchEnv, err error, fail func(path string) bool) {
	e.b.mu.Lock()
	defer e.b.mu.Unlock()
	e.b.writeFn = func(dir, id, path string, data []byte) error {
		if fail(path) {
			return &os.PathError{Op: "write", Path: path, Err: err}
		}
		return writeAtomic(dir, id, path, data)
	}
}

// A window is on disk from the moment it is accepted, so that a crash
// cannot erase it.
func TestBenchWindowRecordedWhenAccepted(t *testing.T) {
	dir := t.TempDir()
	e := startBenchDaemon(t, dir, "")
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":3}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v", code, m)
	}
	id := m["id"].(string)
	e.waitStatus(t, id, "running")
	v, err := readResult(resultFile(dir, id))
	if err != nil {
		t.Fatalf("running window %s is not on disk: %v", id, err)
	}
	if v.ID != id || v.Ended != nil || v.Status != exporter.BenchRunning || v.Started == nil {
		t.Errorf("recorded view of a running window = %+v, want it running and not ended", v)
	}
	close(e.runner.release)
	e.waitStatus(t, id, "completed")
}

// A window recorded but never ended (the daemon was killed) is listed
// after a restart as interrupted, with the progress it had recorded, and
// with an end so that clients waiting for one stop waiting.
func TestBenchWindowInterruptedAfterCrash(t *testing.T) {
	dir := t.TempDir()
	id := "00112233445566778899aabb"
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started := created.Add(time.Second)
	prog := prober.ProgressSnapshot{Total: 150, Done: 40, Failed: 3}
	if err := writeTestView(dir, View{ID: id, Target: "a", Module: "short", Status: exporter.BenchRunning,
		Created: created, Started: &started, Progress: &prog, Request: json.RawMessage(`{"target":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	e := startBenchDaemon(t, dir, "")
	code, m := e.do(t, http.MethodGet, "/api/v1/benches/"+id, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s after the restart = %d %v, want 200", id, code, m)
	}
	if m["status"] != "interrupted" || m["ended"] == nil || !strings.Contains(m["error"].(string), "was running (killed or crashed)") {
		t.Errorf("interrupted window = %v, want status interrupted, an end and the reason", m)
	}
	if p, _ := m["progress"].(map[string]any); p["done"] != 40.0 || p["failed"] != 3.0 || p["total"] != 150.0 {
		t.Errorf("interrupted window's progress = %v, want the recorded 40/150 with 3 failed", m["progress"])
	}
	// The file now says so, so that the next restart reads the same.
	v, err := readResult(resultFile(dir, id))
	if err != nil || v.Status != exporter.BenchInterrupted || v.Ended == nil {
		t.Errorf("results file after the restart: %+v, %v", v, err)
	}
	if code, _ := e.do(t, http.MethodDelete, "/api/v1/benches/"+id, ""); code != http.StatusConflict {
		t.Errorf("DELETE of an interrupted window = %d, want 409", code)
	}
}

// A result that cannot be written is a failed run, in the API and in the
// counter, never a completed one.
func TestBenchWindowWriteFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"full disk", syscall.ENOSPC},
		{"read-only", syscall.EROFS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e := startBenchDaemon(t, dir, "")
			code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":3}`)
			if code != http.StatusAccepted {
				t.Fatalf("POST = %d %v", code, m)
			}
			id := m["id"].(string)
			e.waitStatus(t, id, "running")
			failWrites(e, tc.err, func(string) bool { return true })
			close(e.runner.release)
			got := e.waitStatus(t, id, "failed")
			if msg, _ := got["error"].(string); !strings.Contains(msg, tc.err.Error()) || !strings.Contains(msg, "not written") || !strings.Contains(msg, "ended completed") {
				t.Errorf("error = %q, want the write error and that the run itself completed", msg)
			}
			if v := metricValue(t, e.d, "benchRuns", "a", "write_failed"); v != 1 {
				t.Errorf("bench_runs_total{a,write_failed} = %v, want 1", v)
			}
			if v := metricValue(t, e.d, "benchRuns", "a", "completed"); v != 0 {
				t.Errorf("bench_runs_total{a,completed} = %v, want 0: the result was lost", v)
			}

			// With the directory unwritable, a new window is refused: it
			// could not be recorded, nor its result kept.
			code, m = e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":3}`)
			if code != http.StatusServiceUnavailable || !strings.Contains(m["error"].(string), tc.err.Error()) {
				t.Errorf("POST with the directory unwritable = %d %v, want 503 with the write error", code, m)
			}
			// ... and the target is free again once it is writable.
			failWrites(e, tc.err, func(string) bool { return false })
			if code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":3}`); code != http.StatusAccepted {
				t.Errorf("POST once writable = %d %v, want 202", code, m)
			}
		})
	}
}

// A failed report write fails the run too: the result would link to a
// report that is not there.
func TestBenchWindowReportWriteFailure(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.ReplaceAll(benchConfigTmpl, "RESULTS", dir)
	e := startBenchDaemonWith(t, cfg, "", func(_ context.Context, job Job) (Output, error) {
		job.Started(1, 1)
		return Output{Record: json.RawMessage(`{"backend":"vllm","completed":1}`), Report: []byte("<html></html>\n")}, nil
	})
	failWrites(e, syscall.ENOSPC, func(path string) bool { return strings.HasSuffix(path, ".html") })
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":1}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v", code, m)
	}
	// The report is not the run's result: the run keeps its status and
	// figures, and report_error names the failed write.
	got := e.waitStatus(t, m["id"].(string), "completed")
	if msg, _ := got["report_error"].(string); !strings.Contains(msg, "report was not written") || got["error"] != nil || got["report"] != nil {
		t.Errorf("window = %v, want completed with a report_error naming the report write and no report link", got)
	}
	// The result itself is on disk, saying the same.
	if v, err := readResult(resultFile(dir, m["id"].(string))); err != nil || v.Status != exporter.BenchSucceeded || v.ReportError != got["report_error"] {
		t.Errorf("results file = %+v, %v; want the view the API shows", v, err)
	}
}

func TestBenchBodyInvalidUTF8(t *testing.T) {
	e := startBenchDaemon(t, t.TempDir(), "")
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", "{\"target\":\"a\",\"tag\":\"x\xff\xfey\"}")
	if code != http.StatusBadRequest || !strings.Contains(m["error"].(string), "not valid UTF-8 (first invalid byte at offset 22)") {
		t.Errorf("POST with invalid UTF-8 = %d %v, want 400 naming the offset", code, m)
	}
}

// One unreadable stored window does not hide the others, and a stored
// body with invalid UTF-8 (written before bodies were checked) is listed
// with the invalid bytes replaced, so that the list stays valid JSON.
func TestLoadToleratesBadFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	good := "0123456789abcdef01234567"
	if err := writeTestView(dir, View{ID: good, Target: "a", Status: exporter.BenchSucceeded, Ended: &now}); err != nil {
		t.Fatal(err)
	}
	rawID := "76543210fedcba9876543210"
	line := `{"id":"` + rawID + `","target":"a","status":"completed","created":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:01:00Z","request":{"target":"a","tag":"x` + "\xff" + `y"},"summary":null}` + "\n"
	if err := os.WriteFile(resultFile(dir, rawID), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"bench-aaaaaaaaaaaaaaaaaaaaaaaa.jsonl": `{"id":"aaaa`, // cut short
		"bench-bbbbbbbbbbbbbbbbbbbbbbbb.jsonl": "",            // empty
		"bench-cccccccccccccccccccccccc.jsonl": `{"id":"` + good + `"}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := &Windows{logger: log.NewNopLogger(), runs: map[string]*benchRun{}, o: Options{MaxListed: 10}}
	if err := b.load(dir); err != nil {
		t.Fatal(err)
	}
	if len(b.runs) != 2 || b.runs[good] == nil || b.runs[rawID] == nil {
		t.Fatalf("loaded %d runs, want %s and %s", len(b.runs), good, rawID)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(b.runs[rawID].view); err != nil || !utf8.Valid(buf.Bytes()) || !strings.Contains(buf.String(), "x\uFFFDy") {
		t.Errorf("stored view with invalid UTF-8 encodes as %q (%v), want valid UTF-8 with U+FFFD", buf.String(), err)
	}
}

// A page on another site cannot start or cancel a bench window: the
// browser's text/plain POST (no preflight) and a cross-site DELETE are
// refused before the handler.
func TestBenchCrossSiteRefused(t *testing.T) {
	e := startBenchDaemon(t, t.TempDir(), "")
	send := func(method, path, body string, h map[string]string) int {
		req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	body := `{"target":"a","num_prompts":1}`
	if code := send("POST", "/api/v1/benches", body, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("cross-site text/plain POST = %d, want 403", code)
	}
	if code := send("POST", "/api/v1/benches", body, map[string]string{"Content-Type": "text/plain"}); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain POST = %d, want 415", code)
	}
	e.runner.mu.Lock()
	n := len(e.runner.jobs)
	e.runner.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d windows started by refused requests", n)
	}
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", body)
	if code != http.StatusAccepted {
		t.Fatalf("JSON POST = %d %v", code, m)
	}
	id := m["id"].(string)
	e.waitStatus(t, id, "running")
	if code := send("DELETE", "/api/v1/benches/"+id, "", map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("cross-site DELETE = %d, want 403", code)
	}
	if _, m := e.do(t, http.MethodGet, "/api/v1/benches/"+id, ""); m["status"] != "running" {
		t.Errorf("after a refused DELETE the window is %v, want running", m["status"])
	}
	close(e.runner.release)
	e.waitStatus(t, id, "completed")
}

// The results directory keeps bench.results_retention_count windows, the
// newest: a loop of tiny windows cannot fill the disk.
func TestBenchResultsRetentionCount(t *testing.T) {
	dir := t.TempDir()
	fr := newFakeRunner()
	close(fr.release) // every run ends at once
	cfg := strings.ReplaceAll(benchConfigTmpl, "results_dir: RESULTS", "results_dir: "+dir+"\n  results_retention_count: 3")
	e := startBenchDaemonWith(t, cfg, "", fr.run)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 5 {
		code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":1}`)
		if code != http.StatusAccepted {
			t.Fatalf("POST = %d %v", code, m)
		}
		id := m["id"].(string)
		e.waitStatus(t, id, "completed")
		ids = append(ids, id)
	}
	var kept []string
	ents, _ := os.ReadDir(dir)
	for _, en := range ents {
		kept = append(kept, en.Name())
	}
	want := []string{"bench-" + ids[2] + ".jsonl", "bench-" + ids[3] + ".jsonl", "bench-" + ids[4] + ".jsonl", "notes.txt"}
	slices.Sort(want)
	if !slices.Equal(kept, want) {
		t.Errorf("results dir holds %v, want the 3 newest windows and the file that is not a window's: %v", kept, want)
	}
	if code, _ := e.do(t, http.MethodGet, "/api/v1/benches/"+ids[0], ""); code != http.StatusNotFound {
		t.Errorf("GET of a removed window = %d, want 404", code)
	}
	if _, m := e.do(t, http.MethodGet, "/api/v1/benches", ""); len(m["benches"].([]any)) != 3 {
		t.Errorf("list holds %d windows, want 3", len(m["benches"].([]any)))
	}
}

// At start, windows beyond bench.results_retention_bytes are removed,
// oldest first, reports with their results.
func TestBenchResultsRetentionBytes(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 4 {
		id := strings.Repeat(string("0123"[i]), 24)
		created, ended := t0.Add(time.Duration(i)*time.Hour), t0.Add(time.Duration(i)*time.Hour+time.Minute)
		if err := writeTestView(dir, View{ID: id, Target: "a", Status: exporter.BenchSucceeded, Created: created, Ended: &ended}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(reportFile(dir, id), make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	size := func(id string) int64 {
		a, _ := os.Stat(resultFile(dir, id))
		b, _ := os.Stat(reportFile(dir, id))
		return a.Size() + b.Size()
	}
	limit := size(ids[2]) + size(ids[3]) // room for the two newest
	cfg := strings.ReplaceAll(benchConfigTmpl, "results_dir: RESULTS", fmt.Sprintf("results_dir: %s\n  results_retention_bytes: %d", dir, limit))
	fr := newFakeRunner()
	startBenchDaemonWith(t, cfg, "", fr.run)
	for i, id := range ids {
		_, errRes := os.Stat(resultFile(dir, id))
		_, errRep := os.Stat(reportFile(dir, id))
		if kept := i >= 2; (errRes == nil) != kept || (errRep == nil) != kept {
			t.Errorf("window %d (created %d h): result %v, report %v; want kept=%v", i, i, errRes, errRep, kept)
		}
	}
}
