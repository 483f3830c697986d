package api

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// TestLandingBenchRowIsTheAPIs runs a window whose output is a real
// summary and reads its row on the landing page: every figure is the one
// GET /api/v1/benches/{id} states in "summary" (the page once read
// p99_ttft_ms, which the summary does not have, and showed 0.0 ms). It
// reads them again after a restart, when the row comes from the stored file.
func TestLandingBenchRowIsTheAPIs(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	acc := bench.NewAccumulator(bench.Params{Backend: "vllm", Dataset: "random"})
	acc.SetStart(t0)
	for i, ttft := range []time.Duration{120 * time.Millisecond, 340 * time.Millisecond, 910 * time.Millisecond} {
		sent := t0.Add(time.Duration(i) * time.Second)
		first := sent.Add(ttft)
		gap := time.Duration(10+7*i) * time.Millisecond
		r := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Sent: sent, FirstToken: first, End: first.Add(3 * gap),
			OutputTokens: 4, OutputTokensSource: prober.TokenSourceUsage, InputTokens: 8, InputTokensSource: prober.TokenSourceUsage}
		for k := range 4 {
			r.Events = append(r.Events, prober.Event{At: first.Add(time.Duration(k) * gap), Tokens: 1})
		}
		acc.Add(i, r, datasets.Prompt{Text: "p", PromptLen: 8, OutputLen: 4})
	}
	sum, err := acc.Summary(3 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The server's block as a read of vLLM's /metrics leaves it: every
	// quantile its own number, none zero, so that a missed key shows.
	sum.Server = []servermetrics.Report{{Source: "http://127.0.0.1:1/metrics", Engine: "vllm", PrefixHitRate: math.NaN(),
		Latencies: []servermetrics.Latency{{Kind: servermetrics.TTFT, Metric: "vllm:time_to_first_token_seconds", Count: 3, Mean: 0.4,
			P50: servermetrics.Estimate{Value: 0.0731, Lower: 0.05, Upper: 0.075},
			P90: servermetrics.Estimate{Value: 0.6, Lower: 0.5, Upper: 0.75},
			P99: servermetrics.Estimate{Value: 0.8843, Lower: 0.75, Upper: 1}}}}}
	run := func(ctx context.Context, job Job) (Output, error) {
		job.Started(1, 1)
		return benchOutput(&sum)
	}
	dir := t.TempDir()
	cfg := strings.ReplaceAll(benchConfigTmpl, "RESULTS", dir)
	e := startBenchDaemonWith(t, cfg, "", run)
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a"}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v", code, m)
	}
	id := m["id"].(string)
	api := e.waitStatus(t, id, "completed")
	s := api["summary"].(map[string]any)
	num := func(v any, prec int, unit string) string {
		return strconv.FormatFloat(v.(float64), 'f', prec, 64) + " " + unit
	}
	want := map[string]string{
		"reqrate": num(s["request_throughput"], 2, "req/s"),
		"outrate": num(s["output_throughput"], 1, "tok/s"),
		"ttftp99": num(s["ttft_ms"].(map[string]any)["p99"], 1, "ms"),
		"itlp99":  num(s["itl_ms"].(map[string]any)["p99"], 1, "ms"),
	}
	if want["ttftp99"] == "0.0 ms" || want["itlp99"] == "0.0 ms" {
		t.Fatalf("the summary's p99s are 0, which cannot tell a missed key from a value: %v", s)
	}
	// The server's TTFT is the record's, the JSONL's servingprobe.server
	// block: the one the CLI writes.
	ttft := api["record"].(map[string]any)["servingprobe"].(map[string]any)["server"].(map[string]any)["ttft_ms"].(map[string]any)
	want["serverttft"] = strconv.FormatFloat(ttft["p50"].(float64), 'f', 1, 64) + " / " + strconv.FormatFloat(ttft["p99"].(float64), 'f', 1, 64) + " ms"
	if want["serverttft"] != "73.1 / 884.3 ms" {
		t.Fatalf("the record's server TTFT p50/p99 = %s, want the block's 73.1 / 884.3 ms", want["serverttft"])
	}
	check := func(e *benchEnv, when string) {
		resp, err := e.client.Get(e.url + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for class, w := range want {
			c := regexp.MustCompile(`<td class="` + class + `"(?: title="[^"]*")?>([^<]*)</td>`).FindStringSubmatch(string(page))
			if c == nil || c[1] != w {
				t.Errorf("%s: landing page %s = %v, the API says %q", when, class, c, w)
			}
		}
	}
	check(e, "live")
	check(startBenchDaemonWith(t, cfg, "", run), "after a restart")
}

// TestServerTTFTFirstBlockWithOne: a GPU exporter listed before the
// engine has no TTFT; the landing cell takes the engine's, from
// server_more, as bench.ParseRecord reads it.
func TestServerTTFTFirstBlockWithOne(t *testing.T) {
	rec := `{"servingprobe":{"server":{"source":"http://dcgm:9400/metrics","missing":"a GPU exporter (DCGM), read for the energy only: no inference engine's metrics"},` +
		`"server_more":[{"source":"http://e/metrics","engine":"vllm","ttft_ms":{"metric":"vllm:time_to_first_token_seconds","count":3,"mean":80.0,` +
		`"p50":73.1,"p50_bucket":{"lower":50.0,"upper":75.0},"p90":700.0,"p90_bucket":{"lower":500.0,"upper":750.0},"p99":884.3,"p99_bucket":{"lower":750.0,"upper":1000.0}}}]}}`
	p50, p99, why := recordServerTTFT(t, rec)
	if why != "" || math.Abs(p50-73.1) > 1e-9 || math.Abs(p99-884.3) > 1e-9 {
		t.Errorf("serverTTFT = %v, %v, %q; want the engine's 73.1 and 884.3", p50, p99, why)
	}
}

// recordServerTTFT is the server TTFT of the headline fromRecord derives
// from a record.
func recordServerTTFT(t *testing.T, record string) (p50, p99 float64, missing string) {
	t.Helper()
	_, h := fromRecord([]byte(record))
	if h == nil {
		t.Fatalf("fromRecord(%s) gives no headline", record)
	}
	return h.ServerTTFTP50Ms, h.ServerTTFTP99Ms, h.ServerMissing
}

// TestServerTTFTMissingSaysWhy: a record without the server's TTFT gives
// a headline that says why, for each way it can lack it.
func TestServerTTFTMissingSaysWhy(t *testing.T) {
	for _, tc := range []struct{ name, record, want string }{
		{"no block", `{"completed":3,"servingprobe":{"requests":3}}`, noServerBlock},
		{"not read", `{"servingprobe":{"server":{"source":"http://e/metrics","missing":"no answer within 2s"}}}`, "server metrics of http://e/metrics not read: no answer within 2s"},
		{"no histogram", `{"servingprobe":{"server":{"source":"http://e/metrics","engine":"sglang","samples":3}}}`, "http://e/metrics has no TTFT histogram"},
		{"no observation", `{"servingprobe":{"server":{"source":"http://e/metrics","ttft_ms":{"metric":"vllm:time_to_first_token_seconds","count":0}}}}`, "http://e/metrics counted no TTFT in the run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p50, p99, why := recordServerTTFT(t, tc.record)
			if why != tc.want || p50 != 0 || p99 != 0 {
				t.Errorf("serverTTFT(%s) = %v, %v, %q, want 0, 0, %q", tc.record, p50, p99, why, tc.want)
			}
		})
	}
}

// A completed window whose requests failed in part is not shown as a
// plain green "completed": its row says how many of how many failed, the
// figures of the summary the API returns, in the warning colour.
func TestLandingBenchRowShowsFailures(t *testing.T) {
	sum := bench.Summary{Backend: "vllm", Completed: 46, Failed: 104}
	run := func(ctx context.Context, job Job) (Output, error) {
		job.Started(1, 1)
		return benchOutput(&sum)
	}
	e := startBenchDaemonWith(t, strings.ReplaceAll(benchConfigTmpl, "RESULTS", t.TempDir()), "", run)
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a"}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v", code, m)
	}
	got := e.waitStatus(t, m["id"].(string), "completed")
	api, _ := got["summary"].(map[string]any)
	failed, completed := api["failed"].(float64), api["completed"].(float64)
	resp, err := e.client.Get(e.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`<td class="warn">completed, %d/%d failed</td>`, int(failed), int(failed+completed))
	if failed != 104 || completed != 46 || !strings.Contains(string(page), want) {
		t.Errorf("API summary failed %v completed %v; landing page row lacks %s:\n%s", failed, completed, want, page)
	}
}

// TestLandingBenchRowIsTheGauges: the landing page's row of a finished
// run, the bench gauges and the API's summary show one value, derived
// once from the run's record (fromRecord). The run's output here carries
// a headline that disagrees with its record, so that a surface that took
// the runner's own figures instead shows it.
func TestLandingBenchRowIsTheGauges(t *testing.T) {
	run := func(ctx context.Context, job Job) (Output, error) {
		job.Started(1, 1)
		return Output{
			Record:   []byte(`{"backend":"vllm","completed":2,"failed":0,"request_throughput":2.5,"output_throughput":90.0}`),
			Headline: exporter.BenchHeadline{RequestThroughput: 9, Completed: 2},
		}, nil
	}
	e := startBenchDaemonWith(t, strings.ReplaceAll(benchConfigTmpl, "RESULTS", t.TempDir()), "", run)
	code, m := e.do(t, http.MethodPost, "/api/v1/benches", `{"target":"a"}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %v", code, m)
	}
	got := e.waitStatus(t, m["id"].(string), "completed")
	if s, _ := got["summary"].(map[string]any); s["request_throughput"] != 2.5 {
		t.Errorf("API summary %v, want request_throughput 2.5 from the record", got["summary"])
	}
	get := func(path string) string {
		resp, err := e.client.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	gauge := regexp.MustCompile(`(?m)^servingprobe_bench_last_request_throughput_requests_per_second\{target="a"\} (\S+)$`).FindStringSubmatch(get("/metrics"))
	cell := regexp.MustCompile(`<td class="reqrate">([^<]*)</td>`).FindStringSubmatch(get("/"))
	if gauge == nil || cell == nil {
		t.Fatalf("gauge %v, landing cell %v: want both", gauge, cell)
	}
	v, err := strconv.ParseFloat(gauge[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatFloat(v, 'f', 2, 64) + " req/s"; cell[1] != want || v != 2.5 {
		t.Errorf("landing page shows %q, the gauge exports %v (want 2.5 on both)", cell[1], gauge[1])
	}
}

// TestHeadlineFailedLeavesOutCut: the failed requests the gauge and the
// landing page show are the server's, not the requests the run cancelled
// itself at its time limit, which the record keeps under outcomes.
func TestHeadlineFailedLeavesOutCut(t *testing.T) {
	sum := &bench.Summary{Completed: 20, Failed: 5, Outcomes: map[prober.Outcome]int{
		prober.OutcomeSuccess: 20, prober.OutcomeHTTP5xx: 2, prober.OutcomeCanceled: 3,
	}}
	if h := headlineOf(sum); h.Failed != 2 || h.Completed != 20 {
		t.Errorf("headline failed %d, completed %d; want 2 (5 failed, 3 of them cut by the run) and 20", h.Failed, h.Completed)
	}
}
