package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"

	"github.com/go-kit/log"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/tokenizer"
)

const benchConfigTmpl = `
targets:
  - name: a
    url: http://127.0.0.1:1
    backend: vllm
    model: m
    modules: [short]
  - name: b
    url: http://127.0.0.1:1
    backend: vllm
    model: m
    modules: [short]
modules:
  short:
    dataset: fixed
    prompt: hello there
bench:
  max_prompts: 100
  max_request_rate: 20
  max_concurrency: 8
  max_duration: 1m
  max_body_bytes: 512
  max_concurrent_runs: 1
  results_dir: RESULTS
`

// fakeRunner stands in for bench/runner: it reports the start, waits for a
// release or cancellation, and returns a summary. The real runner is tested
// end to end in cmd/servingprobe.
type fakeRunner struct {
	mu      sync.Mutex
	release chan struct{}
	jobs    []Job
	ctxs    []context.Context // each job's context, in the order of jobs
}

func newFakeRunner() *fakeRunner { return &fakeRunner{release: make(chan struct{})} }

func (f *fakeRunner) run(ctx context.Context, job Job) (Output, error) {
	f.mu.Lock()
	f.jobs = append(f.jobs, job)
	f.ctxs = append(f.ctxs, ctx)
	release := f.release
	f.mu.Unlock()
	job.Started(job.Request.Spec.RequestRate, job.Request.Spec.MaxConcurrency)
	select {
	case <-release:
	case <-ctx.Done():
		return Output{Record: json.RawMessage(`{"backend":"vllm","completed":1}`)}, context.Cause(ctx)
	}
	return Output{
		Record: json.RawMessage(fmt.Sprintf(`{"backend":"vllm","completed":%d,"request_throughput":1.5}`, job.Request.Spec.NumPrompts)),
	}, nil
}

type benchEnv struct {
	d       *exporter.Daemon
	b       *Windows
	url     string
	dir     string
	cfgPath string
	runner  *fakeRunner
	client  *http.Client
}

// startBenchDaemon serves a daemon with the bench API on loopback through
// exporter-toolkit, optionally with a web config.
func startBenchDaemon(t *testing.T, dir, webConfig string) *benchEnv {
	t.Helper()
	fr := newFakeRunner()
	e := startBenchDaemonWith(t, strings.ReplaceAll(benchConfigTmpl, "RESULTS", dir), webConfig, fr.run)
	e.runner, e.dir = fr, dir
	return e
}

// startBenchDaemonWith serves a daemon with config cfg whose bench windows
// run with run.
func startBenchDaemonWith(t *testing.T, cfg, webConfig string, run RunFunc) *benchEnv {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := exporter.New(exporter.Options{ConfigFile: cfgPath, BuildProbe: prober.NewProbeBuilder(prober.ProbeBuilderOptions{Tokenizer: func(string) (datasets.Tokenizer, error) { return tokenizer.Default() }}), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Enable(d, Options{Run: run, WatchInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 5 * time.Second}
	listen := []string{addr}
	fc := &web.FlagConfig{WebListenAddresses: &listen, WebSystemdSocket: new(bool), WebConfigFile: &webConfig}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = web.ListenAndServe(srv, fc, slog.New(slog.DiscardHandler))
	}()
	env := &benchEnv{d: d, b: b, url: "http://" + addr, cfgPath: cfgPath, client: &http.Client{Timeout: 5 * time.Second}}
	t.Cleanup(func() {
		b.Close()
		_ = srv.Close()
		<-done
		env.client.CloseIdleConnections()
	})
	// Wait until it serves.
	for i := 0; ; i++ {
		resp, err := env.client.Get(env.url + "/-/healthy")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i > 100 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return env
}

func (e *benchEnv) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// waitStatus polls a run until its status is want.
func (e *benchEnv) waitStatus(t *testing.T, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, m := e.do(t, http.MethodGet, "/api/v1/benches/"+id, "")
		if code == http.StatusOK && m["status"] == want {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %v (HTTP %d), want %s", id, m["status"], code, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBenchAPIValidation(t *testing.T) {
	e := startBenchDaemon(t, t.TempDir(), "")
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"malformed", `{"target":`, 400, "malformed JSON"},
		{"wrong type", `{"target":"a","num_prompts":"ten"}`, 400, "num_prompts: want int"},
		{"unknown field", `{"target":"a","dataset_path":"/etc/passwd"}`, 400, `unknown field "dataset_path"`},
		// The server's metrics endpoints come from the config only: a
		// requester must not make the daemon fetch a URL of its choosing.
		{"server_metrics", `{"target":"a","server_metrics":["http://169.254.169.254/latest/meta-data"]}`, 400, `unknown field "server_metrics"`},
		{"no_server_metrics", `{"target":"a","no_server_metrics":true}`, 400, `unknown field "no_server_metrics"`},
		{"no target", `{}`, 400, "target: must be set"},
		{"unknown target", `{"target":"zz"}`, 400, `target: no configured target "zz"`},
		{"unknown module", `{"target":"a","module":"../x"}`, 400, `module: no configured module "../x"`},
		{"negative", `{"target":"a","num_prompts":-5}`, 400, "num_prompts: must be at least 1"},
		{"huge int", `{"target":"a","num_prompts":1e30}`, 400, "num_prompts: want int"},
		{"huge float", `{"target":"a","request_rate":1e400}`, 400, "request_rate"},
		{"nan string", `{"target":"a","request_rate":"NaN"}`, 400, "request_rate"},
		{"Infinity string", `{"target":"a","request_rate":"Infinity"}`, 400, `request_rate: want a number or "inf"`},
		{"zero rate", `{"target":"a","request_rate":0}`, 400, "request_rate: must be > 0"},
		{"burstiness", `{"target":"a","burstiness":-1}`, 400, "burstiness: must be > 0"},
		{"duration", `{"target":"a","max_duration":"forever"}`, 400, "max_duration: want a positive duration"},
		{"trailing", `{"target":"a"} {"target":"b"}`, 400, "trailing data"},
		{"input len", `{"target":"a","random_input_len":100000000}`, 400, "random_input_len: must be between 1 and"},
		{"dataset", `{"target":"a","dataset_name":"sharegpt"}`, 400, "dataset_name"},
		{"compat", `{"target":"a","compat":"nope"}`, 400, "compat:"},
		{"too many prompts", `{"target":"a","num_prompts":101}`, 422, "bench.max_prompts (100)"},
		{"rate", `{"target":"a","request_rate":21}`, 422, "bench.max_request_rate (20)"},
		{"inf rate", `{"target":"a","request_rate":"inf"}`, 422, "request_rate: inf exceeds bench.max_request_rate"},
		{"concurrency", `{"target":"a","max_concurrency":9}`, 422, "bench.max_concurrency (8)"},
		{"max duration", `{"target":"a","max_duration":"2h"}`, 422, "bench.max_duration (1m)"},
		{"body size", `{"target":"a","tag":"` + strings.Repeat("x", 600) + `"}`, 422, "bench.max_body_bytes (512 bytes)"},
		{"sweep: two modes", `{"target":"a","sweep":{"request_rates":[1],"auto":true}}`, 400, "sweep: set exactly one of"},
		{"sweep: none", `{"target":"a","sweep":{}}`, 400, "sweep: set exactly one of"},
		{"sweep: unknown field", `{"target":"a","sweep":{"rates":[1]}}`, 400, `unknown field "rates"`},
		{"sweep: zero rate", `{"target":"a","sweep":{"request_rates":[1,0]}}`, 400, "sweep.request_rates[1]: must be > 0"},
		{"sweep: rate and request_rate", `{"target":"a","request_rate":5,"sweep":{"request_rates":[5]}}`, 400, "request_rate: a sweep over request rates"},
		{"sweep: rate over limit", `{"target":"a","sweep":{"request_rates":[5,25]}}`, 422, "sweep.request_rates[1]: 25 exceeds bench.max_request_rate (20)"},
		{"sweep: concurrency over limit", `{"target":"a","sweep":{"max_concurrency":[1,9]}}`, 422, "sweep.max_concurrency[1]: 9 exceeds bench.max_concurrency (8)"},
		{"sweep: too many points", `{"target":"a","sweep":{"request_rates":[` + strings.Repeat("1,", 16) + `1]}}`, 422, "17 points, at most 16"},
		{"sweep: auto points", `{"target":"a","sweep":{"auto":true,"points":15}}`, 400, "sweep.points: must be between 1 and 14"},
		{"sweep: cooldown", `{"target":"a","sweep":{"auto":true,"cooldown":"1h"}}`, 400, "sweep.cooldown"},
		{"slo: objective", `{"target":"a","sweep":{"slo":"ttft:p99"}}`, 400, "sweep.slo: invalid objective"},
		{"slo: search", `{"target":"a","sweep":{"slo":"ttft:p99<=1s","slo_search":"x"}}`, 400, "sweep.slo_search"},
		{"slo: max over limit", `{"target":"a","sweep":{"slo":"ttft:p99<=1s","slo_max":50}}`, 422, "sweep.slo_max: 50 exceeds"},
		{"slo: concurrency max over limit", `{"target":"a","sweep":{"slo":"ttft:p99<=1s","slo_search":"max_concurrency","slo_max":9}}`, 422, "sweep.slo_max: 9 exceeds"},
		{"slo: start above max", `{"target":"a","sweep":{"slo":"ttft:p99<=1s","slo_start":30,"slo_max":10}}`, 400, "sweep.slo_start"},
		{"slo: points", `{"target":"a","sweep":{"slo":"ttft:p99<=1s","slo_max_points":40}}`, 400, "sweep.slo_max_points"},
		{"runs: zero", `{"target":"a","runs":0}`, 400, "runs: must be between 1 and 16"},
		{"runs: too many", `{"target":"a","runs":17}`, 400, "runs: must be between 1 and 16 (each run may last max_duration), got 17"},
		{"runs: pause", `{"target":"a","runs":3,"runs_pause_sec":3600}`, 400, "runs_pause_sec: must be between 0 and 300, got 3600"},
		{"runs: sweep", `{"target":"a","runs":3,"sweep":{"request_rates":[1,2]}}`, 400, "runs: repeats one run; a sweep's points are separate runs already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, m := e.do(t, http.MethodPost, "/api/v1/benches", tc.body)
			msg, _ := m["error"].(string)
			if code != tc.code || !strings.Contains(msg, tc.want) {
				t.Errorf("POST %s = %d %q, want %d with %q", tc.body, code, msg, tc.code, tc.want)
			}
		})
	}
	for _, path := range []string{"/api/v1/benches/..%2F..%2Fetc%2Fpasswd", "/api/v1/benches/ABC", "/api/v1/benches/000000000000000000000000"} {
		if code, _ := e.do(t, http.MethodGet, path, ""); code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, code)
		}
	}
	if len(e.runner.jobs) != 0 {
		t.Errorf("%d runs started by invalid requests", len(e.runner.jobs))
	}
}

func TestBenchAPILifecycle(t *testing.T) {
	dir := t.TempDir()
	e := startBenchDaemon(t, dir, "")

	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":3,"request_rate":5,"tag":"t1"}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v, want 202", code, m)
	}
	id, _ := m["id"].(string)
	if !validBenchID(id) {
		t.Fatalf("id %q is not a valid id", id)
	}
	e.waitStatus(t, id, "running")
	if got := metricValue(t, e.d, "benchRunning", "a"); got != 1 {
		t.Errorf("bench_running{target=a} = %v during the run, want 1", got)
	}
	// A second run on the same target: 409. On another target: over
	// max_concurrent_runs (1), 422.
	if code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a"}`); code != http.StatusConflict || m["id"] != id {
		t.Errorf("second POST on a = %d %v, want 409 naming %s", code, m, id)
	}
	if code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"b"}`); code != http.StatusUnprocessableEntity || !strings.Contains(m["error"].(string), "bench.max_concurrent_runs") {
		t.Errorf("POST on b = %d %v, want 422 naming bench.max_concurrent_runs", code, m)
	}
	e.runner.mu.Lock()
	job := e.runner.jobs[0]
	e.runner.mu.Unlock()
	if s := job.Request.Spec; s.NumPrompts != 3 || s.RequestRate != 5 || s.MaxConcurrency != 8 || s.MaxDuration != time.Minute || job.Request.ModuleName != "short" {
		t.Errorf("job spec %+v: want the request's values and the limits as defaults", job.Request)
	}
	close(e.runner.release)
	got := e.waitStatus(t, id, "completed")
	if s, _ := got["summary"].(map[string]any); s["completed"] != 3.0 {
		t.Errorf("summary %v, want completed 3", got["summary"])
	}
	if got := metricValue(t, e.d, "benchRuns", "a", "completed"); got != 1 {
		t.Errorf("bench_runs_total{a,completed} = %v, want 1", got)
	}
	if got := metricValue(t, e.d, "benchReqThroughput", "a"); got != 1.5 {
		t.Errorf("bench_last_request_throughput = %v, want 1.5", got)
	}
	// Finished: DELETE is refused, the target is free again.
	if code, _ := e.do(t, http.MethodDelete, "/api/v1/benches/"+id, ""); code != http.StatusConflict {
		t.Errorf("DELETE of a finished run = %d, want 409", code)
	}
	// The results file is one JSON line, and no temporary file is left.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "bench-"+id+".jsonl" {
		t.Fatalf("results dir holds %v, want only bench-%s.jsonl", entries, id)
	}
	b, _ := os.ReadFile(filepath.Join(dir, entries[0].Name()))
	var v View
	if err := json.Unmarshal(b, &v); err != nil || v.Status != exporter.BenchSucceeded || v.Tag != "t1" || string(v.Record) != `{"backend":"vllm","completed":3,"request_throughput":1.5}` || v.Summary != nil || bytes.Contains(b, []byte(`"summary"`)) {
		t.Errorf("results file %s: err %v, view %+v", b, err, v)
	}

	// Cancel a second run.
	e.runner.mu.Lock()
	e.runner.release = make(chan struct{}) // hold it
	e.runner.mu.Unlock()
	code, m = e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":2}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST after the first ended = %d %v", code, m)
	}
	id2 := m["id"].(string)
	e.waitStatus(t, id2, "running")
	if code, _ := e.do(t, http.MethodDelete, "/api/v1/benches/"+id2, ""); code != http.StatusAccepted {
		t.Errorf("DELETE = %d, want 202", code)
	}
	got = e.waitStatus(t, id2, "canceled")
	if !strings.Contains(got["error"].(string), "canceled by DELETE") {
		t.Errorf("canceled run error %v", got["error"])
	}
	if got := metricValue(t, e.d, "benchRuns", "a", "canceled"); got != 1 {
		t.Errorf("bench_runs_total{a,canceled} = %v, want 1", got)
	}

	// Restart: a new daemon on the same results dir lists both runs.
	e2 := startBenchDaemon(t, dir, "")
	code, m = e2.do(t, http.MethodGet, "/api/v1/benches", "")
	list, _ := m["benches"].([]any)
	if code != http.StatusOK || len(list) != 2 {
		t.Fatalf("GET list after restart = %d, %d runs, want 2: %v", code, len(list), m)
	}
	if first := list[0].(map[string]any); first["id"] != id2 || first["status"] != "canceled" {
		t.Errorf("newest run first: got %v", first)
	}
	if code, m := e2.do(t, http.MethodGet, "/api/v1/benches/"+id, ""); code != http.StatusOK || m["status"] != "completed" {
		t.Errorf("GET %s after restart = %d %v", id, code, m)
	}
	// The landing page lists both, newest first, each linking to its result.
	resp, err := e2.client.Get(e2.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rows := regexp.MustCompile(`(?s)<tr class="bench">(.*?)</tr>`).FindAllStringSubmatch(string(page), -1)
	if len(rows) != 2 {
		t.Fatalf("landing page lists %d bench windows, want 2:\n%s", len(rows), page)
	}
	for i, want := range []struct{ id, status string }{{id2, "canceled"}, {id, "completed"}} {
		if !strings.Contains(rows[i][1], `<a href="api/v1/benches/`+want.id+`">`) || !strings.Contains(rows[i][1], ">"+want.status+"<") {
			t.Errorf("bench row %d = %s, want %s %s", i, rows[i][1], want.id, want.status)
		}
	}
}

// A reload that removes the run's target cancels the run and says why;
// a reload that keeps it does not.
func TestBenchTargetRemovedByReload(t *testing.T) {
	e := startBenchDaemon(t, t.TempDir(), "")
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"b"}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v", code, m)
	}
	id := m["id"].(string)
	// Count the watcher's checks of the target.
	var checksMu sync.Mutex
	checks := 0
	checked := make(chan struct{}, 1)
	e.b.mu.Lock()
	e.b.watchedFn = func(got string) {
		if got != id {
			return
		}
		checksMu.Lock()
		checks++
		checksMu.Unlock()
		select {
		case checked <- struct{}{}:
		default:
		}
	}
	e.b.mu.Unlock()
	e.waitStatus(t, id, "running")
	e.runner.mu.Lock()
	runCtx := e.runner.ctxs[len(e.runner.ctxs)-1]
	e.runner.mu.Unlock()
	cfg, _ := os.ReadFile(e.cfgPath)
	// Unchanged targets, other limits: the run goes on.
	if err := os.WriteFile(e.cfgPath, []byte(strings.Replace(string(cfg), "max_prompts: 100", "max_prompts: 99", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.d.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The check that ends after this count may have read the config
	// before the reload; the one after it began after the reload. Wait
	// for two more, each a signal from the watcher, not a guess at time.
	checksMu.Lock()
	want := checks + 2
	checksMu.Unlock()
	for {
		checksMu.Lock()
		n := checks
		checksMu.Unlock()
		if n >= want {
			break
		}
		select {
		case <-checked:
		case <-runCtx.Done():
			t.Fatalf("after a reload that kept the target: the run was cancelled: %v", context.Cause(runCtx))
		case <-time.After(10 * time.Second):
			t.Fatalf("the watcher made %d checks after the reload that kept the target, want 2", n-want+2)
		}
	}
	// The watcher cancels before it reports a check, so a run it
	// cancelled shows here even before its status changes.
	if err := context.Cause(runCtx); err != nil {
		t.Fatalf("after a reload that kept the target: the run was cancelled: %v", err)
	}
	if _, m := e.do(t, http.MethodGet, "/api/v1/benches/"+id, ""); m["status"] != "running" {
		t.Fatalf("after a reload that kept the target: status %v, want running", m["status"])
	}
	i := strings.Index(string(cfg), "  - name: b")
	j := strings.Index(string(cfg), "modules:\n  short")
	if err := os.WriteFile(e.cfgPath, []byte(string(cfg)[:i]+string(cfg)[j:]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.d.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := e.waitStatus(t, id, "canceled")
	if !strings.Contains(got["error"].(string), "target removed") {
		t.Errorf("error %v, want it to say the target was removed", got["error"])
	}
}

func TestBenchAPIBasicAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webCfg, []byte("basic_auth_users:\n  bench: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startBenchDaemon(t, t.TempDir(), webCfg)
	if code, _ := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a"}`); code != http.StatusUnauthorized {
		t.Errorf("unauthenticated POST = %d, want 401", code)
	}
	// Profiles reveal internals and cost CPU: the same auth guards them.
	if code, _ := e.do(t, http.MethodGet, "/debug/pprof/", ""); code != http.StatusUnauthorized {
		t.Errorf("unauthenticated GET /debug/pprof/ = %d, want 401", code)
	}
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/v1/benches", strings.NewReader(`{"target":"a","num_prompts":1}`))
	req.SetBasicAuth("bench", "wrong")
	if resp, err := e.client.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong password: %v %v, want 401", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	if len(e.runner.jobs) != 0 {
		t.Fatal("a run started without credentials")
	}
	req, _ = http.NewRequest(http.MethodPost, e.url+"/api/v1/benches", strings.NewReader(`{"target":"a","num_prompts":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("bench", "s3cret")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("authenticated POST = %d, want 202", resp.StatusCode)
	}
}

// metricValue reads a bench metric of the daemon's registry by its
// target (and result) labels.
func metricValue(t *testing.T, d *exporter.Daemon, field string, labels ...string) float64 {
	t.Helper()
	name := map[string]string{
		"benchRunning":       "servingprobe_bench_running",
		"benchRuns":          "servingprobe_bench_runs_total",
		"benchReqThroughput": "servingprobe_bench_last_request_throughput_requests_per_second",
		"benchCapacityRate":  "servingprobe_bench_last_slo_capacity_requests_per_second",
		"benchRate":          "servingprobe_bench_request_rate_requests_per_second",
	}[field]
	mfs, err := d.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			want := map[string]string{"target": labels[0]}
			if len(labels) > 1 {
				want["result"] = labels[1]
			}
			got := 0
			for _, lp := range m.GetLabel() {
				if v, ok := want[lp.GetName()]; ok {
					if v != lp.GetValue() {
						continue metrics
					}
					got++
				}
			}
			if got != len(want) {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s%v in the registry", name, labels)
	return 0
}

// TestBenchWindowServerMetricsFromConfig: a window reads the server
// metrics its target's config names, or none when the target turns them
// off; the body cannot change either (TestBenchAPIValidation).
func TestBenchWindowServerMetricsFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(strings.ReplaceAll(benchConfigTmpl, "RESULTS", dir),
		"    modules: [short]\n  - name: b\n",
		"    modules: [short]\n    server_metrics: [http://127.0.0.1:2/metrics, http://127.0.0.1:3/m]\n  - name: b\n", 1)
	cfg = strings.Replace(cfg, "    modules: [short]\nmodules:", "    modules: [short]\n    no_server_metrics: true\nmodules:", 1)
	fr := newFakeRunner()
	close(fr.release)
	e := startBenchDaemonWith(t, cfg, "", fr.run)
	for _, tc := range []struct {
		target string
		urls   []string
		off    bool
	}{
		{"a", []string{"http://127.0.0.1:2/metrics", "http://127.0.0.1:3/m"}, false},
		{"b", nil, true},
	} {
		code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"`+tc.target+`","num_prompts":2}`)
		if code != http.StatusAccepted {
			t.Fatalf("POST target %s = %d %v", tc.target, code, m)
		}
		e.waitStatus(t, m["id"].(string), "completed")
		fr.mu.Lock()
		s := fr.jobs[len(fr.jobs)-1].Request.Spec
		fr.mu.Unlock()
		if !slices.Equal(s.ServerMetrics, tc.urls) || s.NoServerMetrics != tc.off {
			t.Errorf("target %s: spec server_metrics %q, no_server_metrics %v; want %q, %v", tc.target, s.ServerMetrics, s.NoServerMetrics, tc.urls, tc.off)
		}
	}
}

// TestRedactLoggerHidesServerMetricsPassword: a run's log line naming an
// endpoint it could not read (bench/runner logs its URL) carries no password.
func TestRedactLoggerHidesServerMetricsPassword(t *testing.T) {
	const secret = "pw-in-metrics-url"
	cfg, err := config.Parse([]byte(`targets:
  - name: a
    url: http://127.0.0.1:1
    backend: vllm
    modules: [m]
    server_metrics: ["http://u:` + secret + `@127.0.0.1:2/metrics"]
modules:
  m: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	red := config.NewRedactor(cfg)
	var buf strings.Builder
	l := config.RedactingLogger(log.NewLogfmtLogger(&buf), func() *config.Redactor { return red })
	u := cfg.Targets[0].ServerMetricsURLs()[0]
	_ = l.Log("msg", "Server metrics not read", "url", u, "err", fmt.Errorf("GET %s: 404", u), "n", 3)
	if out := buf.String(); strings.Contains(out, secret) || !strings.Contains(out, "n=3") {
		t.Errorf("log line %q: the password passes, or a value is lost", out)
	}
}

// TestBenchWindowRuns: a window of several runs shows each run's record
// under runs, no record, and the last run's summary and headline (the
// bench gauges); the list leaves the runs out; after a restart the window
// is read back from its results file with the same summary.
func TestBenchWindowRuns(t *testing.T) {
	dir := t.TempDir()
	run := func(_ context.Context, job Job) (Output, error) {
		job.Started(job.Request.Spec.RequestRate, job.Request.Spec.MaxConcurrency)
		var out Output
		for i := range job.Request.Spec.Runs {
			out.Runs = append(out.Runs, json.RawMessage(fmt.Sprintf(`{"backend":"vllm","completed":%d,"request_throughput":%d.5}`, job.Request.Spec.NumPrompts, i+1)))
		}
		return out, nil
	}
	e := startBenchDaemonWith(t, strings.ReplaceAll(benchConfigTmpl, "RESULTS", dir), "", run)
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a","num_prompts":3,"request_rate":5,"runs":3,"runs_pause_sec":0}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v, want 202", code, m)
	}
	id := m["id"].(string)
	check := func(e *benchEnv, when string) {
		t.Helper()
		got := e.waitStatus(t, id, "completed")
		runs, _ := got["runs"].([]any)
		s, _ := got["summary"].(map[string]any)
		if len(runs) != 3 || got["record"] != nil || s["request_throughput"] != 3.5 {
			t.Errorf("%s: runs %v, record %v, summary %v; want 3 runs, no record, the last run's summary", when, got["runs"], got["record"], got["summary"])
		}
	}
	check(e, "live")
	if got := metricValue(t, e.d, "benchReqThroughput", "a"); got != 3.5 {
		t.Errorf("bench_last_request_throughput = %v, want the last run's 3.5", got)
	}
	_, m = e.do(t, http.MethodGet, "/api/v1/benches", "")
	if list, _ := m["benches"].([]any); len(list) != 1 || list[0].(map[string]any)["runs"] != nil {
		t.Errorf("the list carries the runs: %v", m)
	}
	check(startBenchDaemon(t, dir, ""), "after a restart")
}
