package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"go.yaml.in/yaml/v3"

	"github.com/servingprobe/servingprobe/dashboards"
	"github.com/servingprobe/servingprobe/dashboards/promtest"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/external"
)

// llmdModel is the model llm-d-inference-sim serves in this test.
const llmdModel = "Qwen/Qwen2.5-0.5B-Instruct"

// TestDashboardsAgainstDaemon is the dashboards' integration test. The daemon
// (`servingprobe serve`, in-process) probes the simulator with the demo's
// targets and modules, and llm-d-inference-sim as a vLLM; a short bench
// window runs through POST /api/v1/benches; a real Prometheus 2.42 scrapes
// the daemon and the vLLM simulator and evaluates rules.yaml and
// alerts.yaml, once with native histograms off and once on (both at the same
// time, over the same run). Then every panel, annotation and variable query
// of every dashboard must return at least one drawable sample (not only
// NaN), and no rule may fail to evaluate.
//
// Server-side metrics: llm-d-inference-sim exports real vllm:* histograms
// (model_name label, as vLLM). No SGLang can run here, so the sglang:*
// series come from one stand-in, the job "sglang-standin": the llm-d
// families the dashboard reads, renamed to SGLang's names of the same
// quantity. It proves the sglang queries' names and model_name label
// against real observations; it does not prove SGLang's exposition.
//
// A second bench window runs on the llmd target, whose config names its
// server_metrics (with a password), at a concurrency above llm-d's
// --max-num-seqs, so that requests wait in the engine's queue. Its stored
// server metrics block is checked through the API, the results file and
// the landing page (llmdWindow), and every client-vs-server panel query is
// evaluated for that target and the vllm job at the end and must return
// finite numbers (checkClientVsServerOnEngine).
//
// The config is demo.yml (what `serve --demo` probes) with four changes:
// probes every 1s instead of 5s, so that a 10s rate window holds several
// probes; bench windows enabled (the demo disables them); a tokenizer path
// on the modules, which a bench run requires; and the llm-d target, with
// its server_metrics. The
// simulator is the demo's (simulator.DefaultConfig) plus 5% of HTTP 500s,
// so that the error panels show real failures, not only zeros.
//
// Run with -v to see every query checked, by dashboard, kind and title.
func TestDashboardsAgainstDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds llm-d-inference-sim and starts Prometheus twice; run without -short")
	}
	began := time.Now()
	llmd := startLLMDSim(t, llmdSim(t))

	simCfg := simulator.DefaultConfig()
	simCfg.FaultRates = map[simulator.Fault]float64{simulator.Fault500: 0.05}
	// The simulator states its own per-request timing in vLLM's shape,
	// so that the panels of the server's TTFT and the rest have data.
	simCfg.StateMetrics = true
	sim, err := simulator.New(simCfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(simSrv.Close)
	standin := httptest.NewServer(sglangStandin(
		standinSource{llmd + "/metrics", serverFamilyRenames},
		standinSource{simSrv.URL + "/metrics", simulatorFamilyRenames}))
	t.Cleanup(standin.Close)

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "servingprobe.yml")
	if err := os.WriteFile(cfgPath, dashboardsTestConfig(t, simSrv.URL, llmd), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	base := "http://" + addr
	startServe(t, "serve", "--config.file="+cfgPath, "--web.listen-address="+addr, "--log.level=warn")
	// Start-up loads the embedded tokenizer and builds every module's
	// prompts: well under a second normally, many under -race on 2 busy cores.
	waitHTTP(t, base+"/metrics", 90*time.Second)

	rules := writeRuleFiles(t)
	start := time.Now()
	proms := map[string]*promtest.Server{}
	for _, native := range []bool{false, true} {
		proms[modeName(native)] = promtest.Start(t, promtest.Config{
			Binary: external.Program(t, "prometheus"),
			Targets: []promtest.ScrapeTarget{
				{Job: "servingprobe", URL: base + "/metrics"},
				{Job: "vllm", URL: llmd + "/metrics"},
				// The demo simulator's own /metrics, in vLLM's names: the
				// engine families llm-d-inference-sim lacks (preemptions,
				// prefix-cache counters without its KV-cache mode).
				{Job: "simulator", URL: simSrv.URL + "/metrics"},
				{Job: "sglang-standin", URL: standin.URL + "/metrics"},
			},
			NativeHistograms: native,
			RuleFiles:        rules,
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	// Probe results of every target and both server jobs in both
	// Prometheus, and recording rules evaluated over them.
	for mode, prom := range proms {
		for _, expr := range []string{
			`count(count by (target) (servingprobe_requests_total{mode="probe", outcome="success"} > 0)) == 4`,
			`vllm:time_to_first_token_seconds_count > 0`,
			`sglang:time_to_first_token_seconds_count > 0`,
			`target:servingprobe_ttft_slo_errors:ratio_rate5m`,
			`target:servingprobe_time_to_first_token_seconds:quantile_rate5m`,
		} {
			if err := prom.WaitFor(ctx, expr); err != nil {
				t.Fatalf("%s Prometheus: %v\n%s", mode, err, prom.Log())
			}
		}
	}

	// No warmup: one warmup request meets the simulator's 5% of 500s one
	// run in twenty, and a bench whose every warmup fails stops, as
	// bench_serving's does. The measured requests count their failures.
	// The window is an SLO search, so that the capacity panel and the
	// point annotations have data: an objective the simulator always
	// meets, 10 req/s then 20 (slo_max), two points of 20 requests. Its
	// errors objective allows every failure: the 5% of 500s would fail
	// the default errors<=1%.
	id := postBench(t, base, `{"target": "sim-vllm-chat", "num_prompts": 20, "max_concurrency": 4, "warmup_requests": 0,
		"sweep": {"slo": "e2e:p50<=60s,errors<=100%", "slo_start": 10, "slo_max": 20, "cooldown": "0s"}}`)
	view := waitBench(ctx, t, base, id)
	t.Logf("bench %s on sim-vllm-chat: %s, %s to %s", id, view.Status, view.Started.Format(time.TimeOnly), view.Ended.Format(time.TimeOnly))
	llmdWindow(ctx, t, base, filepath.Join(dir, "results"), llmd)
	// The end of the window, scraped and evaluated, plus two scrapes more
	// so that the last rate windows hold it.
	for mode, prom := range proms {
		for _, target := range []string{"sim-vllm-chat", "llmd"} {
			if err := prom.WaitFor(ctx, `servingprobe_bench_runs_total{target="`+target+`", result="completed"} > 0`); err != nil {
				t.Fatalf("%s Prometheus: %v\n%s", mode, err, prom.Log())
			}
		}
	}
	time.Sleep(2 * time.Second)
	end := time.Now()

	queries, err := promtest.DashboardQueries(dashboards.FS, dashboards.Dashboards...)
	if err != nil {
		t.Fatal(err)
	}
	// Both modes at once; the group returns when both have.
	t.Run("mode", func(t *testing.T) {
		for _, native := range []bool{false, true} {
			prom := proms[modeName(native)]
			t.Run(modeName(native), func(t *testing.T) {
				t.Parallel()
				prom.CheckHistogramMode(ctx, t, "servingprobe_time_to_first_token_seconds", native)
				checks := prom.CheckQueries(ctx, queries, promtest.Vars("10s", "1m"), start, end, time.Second)
				var empty []string
				withData := 0
				for _, c := range checks {
					bug, known := knownEmpty[string(c.Kind)+" "+c.Title]
					why, layout := standinLayoutOnly[c.Title+" ["+c.RefID+"]"]
					switch {
					case c.Err != nil:
						t.Errorf("%s: %v\n%s", c.Name(), c.Err, c.Substituted)
					case layout && c.Result.HasValues():
						t.Errorf("%s has data now: remove it from standinLayoutOnly (%s)", c.Name(), why)
					case layout:
						t.Logf("not applicable to the SGLang stand-in: %s: %s", c.Name(), why)
					case known && c.Result.HasValues():
						t.Errorf("%s has data now: remove it from knownEmpty (%s)", c.Name(), bug)
					case known:
						t.Logf("KNOWN BUG, no data: %s: %s", c.Name(), bug)
					case !c.Result.HasValues():
						empty = append(empty, fmt.Sprintf("%s (%d series, %d float samples, %d NaN)", c.Name(), c.Result.Series, c.Result.Floats, c.Result.NaN))
					default:
						withData++
						t.Logf("ok %s: %d series, %d float (%d NaN) and %d histogram samples", c.Name(), c.Result.Series, c.Result.Floats, c.Result.NaN, c.Result.Histograms)
					}
				}
				if len(empty) > 0 {
					t.Errorf("%d of %d dashboard queries have no data:\n  %s", len(empty), len(checks), strings.Join(empty, "\n  "))
				}
				t.Logf("%d of %d dashboard queries have data", withData, len(checks))
				checkRulesHealthy(ctx, t, prom, start)
				checkClientVsServerOnEngines(ctx, t, prom, end)
			})
		}
	})
	t.Logf("setup, bench and checks took %v", time.Since(began).Round(100*time.Millisecond))
}

// standinLayoutOnly lists SGLang queries, by panel title and refId, that
// read a bucket bound of SGLang's own layout. The stand-in serves
// llm-d-inference-sim's histograms, in vLLM's layout, under SGLang's names,
// so it has no such bound; the query's name and label are proven by its
// vLLM twin in the same panel, which reads the same expression.
var standinLayoutOnly = map[string]string{
	"Server queue time resolution [B]": "SGLang's first queue-time bound is 0.1 s; vLLM's layout, which the stand-in serves, starts at 0.3 s",
}

// knownEmpty lists dashboard queries, by kind and title, that are known to
// return nothing in this run, with the reason. The test fails once such a
// query has data, so that the entry goes.
var knownEmpty = map[string]string{
	"annotation Model changes": "no target's model changes in this run; dashboards' TestModelChangeAnnotation evaluates the annotation over a change with promtool",
	"panel Capacity and load":  "a scheduled capacity check's first run comes 1 to 5 minutes after start, longer than this test runs; bench/api's TestCapacityCheckSimulator proves the gauges it reads",
}

func modeName(native bool) string {
	if native {
		return "native"
	}
	return "classic"
}

// dashboardsTestConfig renders demo.yml for the simulator at simURL, probed
// every 1s, with bench windows enabled and an llm-d target at llmdURL.
func dashboardsTestConfig(t *testing.T, simURL, llmdURL string) []byte {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(demoConfig, "SIMULATOR_URL", simURL)), &cfg); err != nil {
		t.Fatalf("demo.yml: %v", err)
	}
	targets, _ := cfg["targets"].([]any)
	if len(targets) != 3 {
		t.Fatalf("demo.yml has %d targets, want the 3 this test waits for", len(targets))
	}
	for _, tg := range targets {
		tg.(map[string]any)["interval"] = "1s"
	}
	cfg["targets"] = append(targets, map[string]any{
		"name": "llmd", "url": llmdURL, "backend": "vllm-chat", "model": llmdModel,
		"modules": []string{"chat-short"}, "interval": "1s", "timeout": "10s",
		"server_metrics": []string{llmdServerMetricsURL(llmdURL)},
	})
	// A conversation module and a module with an answer check on the
	// simulator's chat target, so that the overview's answer-check and
	// cold-vs-warm panels have data.
	modules, _ := cfg["modules"].(map[string]any)
	modules["conv"] = map[string]any{"dataset": "conversation", "turns": 2, "input_len": 64, "turn_input_len": 16, "output_len": 8}
	modules["checked"] = map[string]any{"dataset": "fixed", "prompt": "Say hello.", "output_len": 16, "checks": map[string]any{"regex": "."}}
	chat := targets[0].(map[string]any)
	chat["modules"] = append(chat["modules"].([]any), "conv", "checked")
	// A bench run needs a local tokenizer (the daemon does not fall back to
	// the embedded one); this is the embedded one's files.
	tok, err := filepath.Abs(filepath.Join("..", "..", "tokenizer", "testdata", "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range modules {
		m.(map[string]any)["tokenizer"] = tok
	}
	cfg["bench"] = map[string]any{
		"enabled": true, "max_prompts": 100, "max_request_rate": 50, "max_concurrency": 8, "max_duration": "1m",
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startLLMDSim runs llm-d-inference-sim on a free loopback port until the
// test ends and returns its base URL once /v1/models answers.
func startLLMDSim(t *testing.T, bin string) string {
	t.Helper()
	_, port, _ := strings.Cut(freeAddr(t), ":")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--model", llmdModel, "--port", port,
		"--mode", "random", "--time-to-first-token", "50ms", "--inter-token-latency", "10ms",
		"--force-dummy-tokenizer", "--max-num-seqs", llmdMaxNumSeqs)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	url := "http://127.0.0.1:" + port
	waitHTTP(t, url+"/v1/models", 60*time.Second)
	return url
}

// waitHTTP polls url until it answers 200.
func waitHTTP(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not up after %v: %v", url, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// standinSource is one exposition the SGLang stand-in reads and the
// families it takes from it, renamed.
type standinSource struct {
	url     string
	renames map[string]string
}

// sglangStandin serves the families of the text expositions at the
// sources that the client-vs-server dashboard reads, renamed from vLLM's
// names to SGLang's, and nothing else. The sources' renamed families must
// not overlap: the stand-in would expose one family twice.
func sglangStandin(sources ...standinSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var all []byte
		for _, src := range sources {
			resp, err := http.Get(src.url)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			out, err := renameFamilies(resp.Body, src.renames)
			resp.Body.Close()
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			all = append(all, out...)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(all)
	})
}

// writeRuleFiles copies the embedded rule files where Prometheus reads them.
func writeRuleFiles(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, name := range dashboards.RuleFiles {
		b, err := fs.ReadFile(dashboards.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

type benchView struct {
	ID      string     `json:"id"`
	Status  string     `json:"status"`
	Started *time.Time `json:"started"`
	Ended   *time.Time `json:"ended"`
	Error   string     `json:"error"`
}

// postBench starts a bench window and returns its id.
func postBench(t *testing.T, base, body string) string {
	t.Helper()
	resp, err := http.Post(base+"/api/v1/benches", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/v1/benches %s = HTTP %d %s, want 202", body, resp.StatusCode, b)
	}
	var v benchView
	if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
		t.Fatalf("POST /api/v1/benches: body %s: no id (%v)", b, err)
	}
	return v.ID
}

// waitBench polls the bench until it ends and requires it to have completed.
func waitBench(ctx context.Context, t *testing.T, base, id string) benchView {
	t.Helper()
	for {
		resp, err := http.Get(base + "/api/v1/benches/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var v benchView
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET /api/v1/benches/%s: %v", id, err)
		}
		switch v.Status {
		case "completed":
			return v
		case "failed", "canceled":
			t.Fatalf("bench %s %s: %s", id, v.Status, v.Error)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("bench %s still %s: %v", id, v.Status, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkRulesHealthy requires every loaded rule, recording and alerting, to
// have been evaluated without error: a type error in a native-only branch
// shows up here, not as an empty result. A group whose interval has not come
// round since Prometheus started (the 4m baseline group) has not been
// evaluated yet; its rules' queries are run once through the query API
// instead, which uses the same engine.
func checkRulesHealthy(ctx context.Context, t *testing.T, prom *promtest.Server, started time.Time) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, prom.URL+"/api/v1/rules", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Groups []struct {
				Name     string  `json:"name"`
				File     string  `json:"file"`
				Interval float64 `json:"interval"`
				Rules    []struct {
					Name      string `json:"name"`
					Query     string `json:"query"`
					Type      string `json:"type"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, g := range r.Data.Groups {
		for _, rule := range g.Rules {
			where := fmt.Sprintf("rule %s/%s (%s)", g.Name, rule.Name, filepath.Base(g.File))
			interval := time.Duration(g.Interval * float64(time.Second))
			if rule.Health == "unknown" && time.Since(started) < interval {
				if _, err := prom.Query(ctx, rule.Query, time.Now()); err != nil {
					t.Errorf("%s, not evaluated yet (interval %v), fails as a query: %v", where, interval, err)
				}
				counts[rule.Type+" not due, query ok"]++
				continue
			}
			counts[rule.Type+" "+rule.Health]++
			if rule.Health != "ok" {
				t.Errorf("%s: health %q: %s", where, rule.Health, rule.LastError)
			}
		}
	}
	if len(counts) == 0 {
		t.Error("Prometheus loaded no rules")
	}
	t.Logf("rules by type and health: %v", counts)
}
