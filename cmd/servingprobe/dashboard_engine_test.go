package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/dashboards"
	"github.com/servingprobe/servingprobe/dashboards/promtest"
)

// The parts of TestDashboardsAgainstDaemon that prove the client-versus-
// server dashboard and the daemon's server-metrics block against a real
// engine's names: llm-d-inference-sim, a vLLM simulator that exposes
// vLLM's metric names from its own code (not from ours).

// llmdMaxNumSeqs is llm-d-inference-sim's --max-num-seqs in the test: below
// the llmd window's concurrency, so that requests wait in the engine's
// queue and its queue-time histogram and waiting gauge have something to
// show.
const llmdMaxNumSeqs = "2"

// llmdMetricsPassword is in the llmd target's server_metrics URL: the
// simulator ignores it, and no surface of the daemon may show it.
const llmdMetricsPassword = "llmd-metrics-pw-7f3a"

// llmdServerMetricsURL is the llmd target's server_metrics entry.
func llmdServerMetricsURL(llmdURL string) string {
	return strings.Replace(llmdURL, "http://", "http://scraper:"+llmdMetricsPassword+"@", 1) + "/metrics"
}

// llmdWindow runs a bench window on the llmd target at a concurrency
// above the engine's, and checks the server metrics block the window
// stored: the record GET /api/v1/benches/{id} returns has vLLM's block
// (TTFT quantiles, queue time observed), it is the block of the results
// file (the JSONL), the landing page shows its TTFT p50/p99 in the
// window's row, and the endpoint's password shows nowhere.
func llmdWindow(ctx context.Context, t *testing.T, base, resultsDir, llmdURL string) {
	t.Helper()
	id := postBench(t, base, `{"target": "llmd", "num_prompts": 24, "max_concurrency": 8, "warmup_requests": 0}`)
	waitBench(ctx, t, base, id)

	apiBody := get(t, base+"/api/v1/benches/"+id)
	var view struct {
		Record json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(apiBody, &view); err != nil {
		t.Fatalf("GET /api/v1/benches/%s: %v", id, err)
	}
	block := serverBlock(t, "the API's record", view.Record)
	t.Logf("llmd window %s: server block %s", id, block)
	var b struct {
		Source string `json:"source"`
		Engine string `json:"engine"`
		TTFT   struct {
			Count    float64 `json:"count"`
			P50, P99 float64
		} `json:"ttft_ms"`
		Queue struct {
			Count float64 `json:"count"`
		} `json:"queue_ms"`
		WaitingPeak float64 `json:"waiting_peak"`
	}
	if err := json.Unmarshal(block, &b); err != nil {
		t.Fatal(err)
	}
	if b.Engine != "vllm" || b.TTFT.Count < 24 || !(b.TTFT.P50 > 0) || !(b.TTFT.P99 >= b.TTFT.P50) {
		t.Errorf("server block: engine %q, TTFT count %v p50 %v p99 %v; want vllm, at least the window's 24 requests, 0 < p50 <= p99", b.Engine, b.TTFT.Count, b.TTFT.P50, b.TTFT.P99)
	}
	if b.Queue.Count == 0 {
		t.Errorf("server block: no queue time observed with 8 requests on %s slots: %s", llmdMaxNumSeqs, block)
	}
	if want := strings.Replace(llmdServerMetricsURL(llmdURL), llmdMetricsPassword, "xxxxx", 1); b.Source != want {
		t.Errorf("server block source %q, want the configured URL with its password hidden, %q", b.Source, want)
	}

	// The results file holds the same record: the API shows the JSONL.
	f, err := os.ReadFile(filepath.Join(resultsDir, "bench-"+id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Record json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(f, &stored); err != nil {
		t.Fatal(err)
	}
	if got := serverBlock(t, "the results file's record", stored.Record); !bytes.Equal(got, block) {
		t.Errorf("the results file's server block differs from the API's:\n%s\n%s", got, block)
	}

	landing := get(t, base+"/")
	row := regexp.MustCompile(`<tr class="bench"><td><a href="api/v1/benches/` + id + `">.*?</tr>`).Find(landing)
	cell := regexp.MustCompile(`<td class="serverttft"[^>]*>([^<]*)</td>`).FindSubmatch(row)
	want := strconv.FormatFloat(b.TTFT.P50, 'f', 1, 64) + " / " + strconv.FormatFloat(b.TTFT.P99, 'f', 1, 64) + " ms"
	if cell == nil || string(cell[1]) != want {
		t.Errorf("landing page server TTFT of window %s = %q, the API's record says %q (row %s)", id, cell, want, row)
	}
	for what, body := range map[string][]byte{"the API": apiBody, "the results file": f, "the landing page": landing, "/config": get(t, base+"/config")} {
		if bytes.Contains(body, []byte(llmdMetricsPassword)) {
			t.Errorf("%s shows the server_metrics password", what)
		}
	}
}

// serverBlock returns a record's servingprobe.server block, compacted,
// failing the test when it has none.
func serverBlock(t *testing.T, what string, record json.RawMessage) json.RawMessage {
	t.Helper()
	var r struct {
		Servingprobe struct {
			Server json.RawMessage `json:"server"`
		} `json:"servingprobe"`
	}
	if err := json.Unmarshal(record, &r); err != nil || len(r.Servingprobe.Server) == 0 {
		t.Fatalf("%s has no servingprobe.server block (%v): %s", what, err, record)
	}
	// The API indents its answer, the results file does not.
	var b bytes.Buffer
	if err := json.Compact(&b, r.Servingprobe.Server); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = HTTP %d, %v", url, resp.StatusCode, err)
	}
	return b
}

// engineUnderTest is one vLLM-named engine the client-vs-server dashboard
// is checked against: the servingprobe target that probes it and the
// Prometheus job that scrapes its /metrics.
type engineUnderTest struct {
	name, target, job string
	// statesTiming: the engine states its own per-request timing in its
	// responses, so the daemon exports the server-stated TTFT for it.
	statesTiming bool
}

// enginesUnderTest are llm-d-inference-sim (vLLM's names from its own
// code) and the demo simulator (vLLM's names from ours, and the families
// llm-d lacks: preemptions, and prefix-cache counters, which llm-d counts
// only in its KV-cache mode). Neither exports every family: each query
// must be proven on the engines that export what it reads, and on one at
// least.
var enginesUnderTest = []engineUnderTest{
	{name: "llm-d-inference-sim", target: "llmd", job: "vllm"},
	{name: "the simulator", target: "sim-vllm-chat", job: "simulator", statesTiming: true},
}

// engineVars select what the client-vs-server dashboard shows for one
// target and the job behind it, as its description asks users to.
func engineVars(e engineUnderTest) map[string]string {
	v := promtest.Vars("1m", "1m")
	v["target"], v["server_job"] = e.target, e.job
	return v
}

// serverName matches an engine metric name in an expression.
var serverName = regexp.MustCompile(`\b(?:vllm|sglang):[a-z0-9_]+`)

// checkClientVsServerOnEngines evaluates every panel query of the
// client-vs-server dashboard, at the instant at, for each engine under
// test, and requires each query that reads a vLLM family the engine
// exports to return at least one sample, every one a finite number: with
// the 1m rate window the probes of the last minute (and the llmd window)
// are in every histogram. A query reading only families the engine does
// not export is listed as not applicable to it; every query that reads
// vLLM's names must be proven on one engine at least. The queries that
// read only SGLang's names cannot have data from a vLLM; they are
// evaluated (they must not fail) and listed, and TestDashboardsAgainstDaemon's
// renamed stand-in is what gives them data.
func checkClientVsServerOnEngines(ctx context.Context, t *testing.T, prom *promtest.Server, at time.Time) {
	t.Helper()
	queries, err := promtest.DashboardQueries(dashboards.FS, "client-vs-server.json")
	if err != nil {
		t.Fatal(err)
	}
	exported := func(job, name string) bool {
		r, err := prom.Query(ctx, fmt.Sprintf(`count({__name__=%q, job=%q})`, name, job), at)
		if err != nil {
			t.Fatal(err)
		}
		return r.HasValues()
	}
	proven := map[string]bool{}
	for _, e := range enginesUnderTest {
		checks := prom.CheckQueries(ctx, queries, engineVars(e), at, at, time.Second)
		for _, c := range checks {
			if c.Kind != promtest.KindPanel {
				continue
			}
			applicable := false
			for _, n := range serverName.FindAllString(c.Expr, -1) {
				applicable = applicable || strings.HasPrefix(n, "vllm:") && exported(e.job, n)
			}
			switch {
			case c.Err != nil:
				t.Errorf("%s: %v\n%s", c.Name(), c.Err, c.Substituted)
			case readsOnly(c.Expr, "sglang:"):
				t.Logf("not applicable to vLLM (reads only sglang: names): %s", c.Name())
			case !e.statesTiming && (strings.Contains(c.Expr, "servingprobe_server_time_to_first_token_seconds") ||
				strings.Contains(c.Expr, "servingprobe_time_to_first_token_outside_server_seconds")):
				// These series exist only for a server that states its own
				// per-request timing; llm-d-inference-sim states none, so
				// the daemon exports none for it (never a zero).
				t.Logf("not applicable to %s (it states no per-request timing): %s", e.name, c.Name())
			case !applicable && !strings.Contains(c.Expr, "servingprobe_"):
				t.Logf("not applicable to %s (it exports none of the families the query reads): %s", e.name, c.Name())
			case !c.Result.Finite():
				t.Errorf("%s against %s: %d series, %d float samples (%d NaN, %d infinite), want at least one, all finite\n%s",
					c.Name(), e.name, c.Result.Series, c.Result.Floats, c.Result.NaN, c.Result.Inf, c.Substituted)
			default:
				proven[c.Name()] = true
				t.Logf("ok against %s: %s: %d series", e.name, c.Name(), c.Result.Series)
			}
		}
	}
	for _, q := range queries {
		if q.Kind == promtest.KindPanel && !readsOnly(q.Expr, "sglang:") && !proven[q.Name()] {
			t.Errorf("%s was proven against no engine", q.Name())
		}
	}
}

// readsOnly says whether every server metric an expression names has the
// prefix (and it names at least one).
func readsOnly(expr, prefix string) bool {
	names := serverName.FindAllString(expr, -1)
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			return false
		}
	}
	return len(names) > 0 && !strings.Contains(expr, "servingprobe_")
}

// serverFamilyRenames maps the vLLM families the client-vs-server
// dashboard reads to the SGLang names of the same quantity
// (servermetrics/names.go cites both engines' sources), for the sglang
// stand-in.
var serverFamilyRenames = map[string]string{
	"vllm:time_to_first_token_seconds":   "sglang:time_to_first_token_seconds",
	"vllm:inter_token_latency_seconds":   "sglang:inter_token_latency_seconds",
	"vllm:time_per_output_token_seconds": "sglang:time_per_output_token_seconds",
	"vllm:e2e_request_latency_seconds":   "sglang:e2e_request_latency_seconds",
	"vllm:request_queue_time_seconds":    "sglang:queue_time_seconds",
	"vllm:kv_cache_usage_perc":           "sglang:token_usage",
	"vllm:num_requests_waiting":          "sglang:num_queue_reqs",
	"vllm:num_requests_running":          "sglang:num_running_reqs",
}

// simulatorFamilyRenames are the families the stand-in takes from the demo
// simulator's vLLM names, because llm-d-inference-sim has none of them:
// preemptions, and the prefix-cache hits against the prompt tokens they
// are a share of (SGLang's cached_tokens over prompt_tokens).
var simulatorFamilyRenames = map[string]string{
	"vllm:num_preemptions":   "sglang:num_retracted_requests",
	"vllm:prefix_cache_hits": "sglang:cached_tokens",
	"vllm:prompt_tokens":     "sglang:prompt_tokens",
}

// renameFamilies rewrites a text exposition: the families in renames keep
// their samples under the new name, every other line is dropped.
func renameFamilies(r io.Reader, renames map[string]string) ([]byte, error) {
	var out bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name := line
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				name = f[1]
			}
		} else if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		family := name
		for _, suf := range []string{"_bucket", "_sum", "_count", "_total", "_created"} {
			if b, ok := strings.CutSuffix(name, suf); ok && renames[b] != "" {
				family = b
			}
		}
		to, ok := renames[family]
		if !ok {
			continue
		}
		out.WriteString(strings.Replace(line, family, to, 1))
		out.WriteByte('\n')
	}
	return out.Bytes(), sc.Err()
}
