package main

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// vllmTTFTBuckets is the TTFT histogram layout of vLLM's
// vllm/v1/metrics/loggers.py (lmdeploy declares the same).
var vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
	20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}

// fakeVLLM streams vLLM's reasoning transcript (prober/testdata, its
// "reasoning" deltas before two answer chunks) to every chat request, at
// most four at a time (the rest wait, as in an engine's queue), and
// serves /metrics in vLLM's names: requests running and waiting, KV cache
// usage, the TTFT histogram it measured and the tokens of the transcript's
// usage.
type fakeVLLM struct {
	events []string
	slots  chan struct{}

	mu                         sync.Mutex
	running, waiting           int
	ttfts                      []float64
	promptTokens, outputTokens int
}

func newFakeVLLM(t *testing.T) *httptest.Server {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "prober", "testdata", "vllm-chat", "reasoning_field.sse"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeVLLM{events: llmtest.SplitEvents(string(b)), slots: make(chan struct{}, 4)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.chat)
	mux.HandleFunc("GET /metrics", f.metrics)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func (f *fakeVLLM) chat(w http.ResponseWriter, r *http.Request) {
	// The API server's own work before the engine sees the request: part
	// of our TTFT that the engine's histogram does not count.
	time.Sleep(20 * time.Millisecond)
	f.mu.Lock()
	f.waiting++
	f.mu.Unlock()
	arrived := time.Now()
	select {
	case f.slots <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-f.slots }()
	f.mu.Lock()
	f.waiting--
	f.running++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i, ev := range f.events {
		time.Sleep(map[bool]time.Duration{true: 40 * time.Millisecond, false: 15 * time.Millisecond}[i == 0])
		if _, err := fmt.Fprint(w, ev); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if i == 1 { // the first reasoning token: the engine's first token
			f.mu.Lock()
			f.ttfts = append(f.ttfts, time.Since(arrived).Seconds())
			f.mu.Unlock()
		}
	}
	f.mu.Lock()
	f.promptTokens, f.outputTokens = f.promptTokens+12, f.outputTokens+7 // the transcript's usage
	f.mu.Unlock()
}

func (f *fakeVLLM) metrics(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := `{engine="0",model_name="m"}`
	fmt.Fprintf(w, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running%s %d.0\n", l, f.running)
	fmt.Fprintf(w, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting%s %d.0\n", l, f.waiting)
	fmt.Fprintf(w, "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc%s %v\n", l, float64(f.running)/5)
	fmt.Fprintf(w, "# HELP vllm:prompt_tokens Number of prefill tokens processed.\n# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total%s %d.0\n", l, f.promptTokens)
	fmt.Fprintf(w, "# HELP vllm:generation_tokens Number of generation tokens processed.\n# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total%s %d.0\n", l, f.outputTokens)
	fmt.Fprint(w, "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n# TYPE vllm:time_to_first_token_seconds histogram\n")
	sum := 0.0
	for _, v := range f.ttfts {
		sum += v
	}
	for _, le := range vllmTTFTBuckets {
		n := 0
		for _, v := range f.ttfts {
			if v <= le {
				n++
			}
		}
		fmt.Fprintf(w, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"%v\",model_name=\"m\"} %d.0\n", le, n)
	}
	fmt.Fprintf(w, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} %d.0\n", len(f.ttfts))
	fmt.Fprintf(w, "vllm:time_to_first_token_seconds_count%s %d.0\nvllm:time_to_first_token_seconds_sum%s %v\n", l, len(f.ttfts), l, sum)
}

// TestReportServerMetricsInBrowser runs a bench against a fake vLLM whose
// streams reason and whose /metrics moves with the load, draws the report
// from the JSONL alone, renders it in headless Chromium and checks that
// the server's charts hold the record's points and bars and that the
// page's values are the record's and the console's.
func TestReportServerMetricsInBrowser(t *testing.T) {
	chromium(t)
	srv := newFakeVLLM(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run.jsonl")
	code, stdout, stderr := runCLI(t, "bench", "--backend", "vllm-chat", "--base-url", srv.URL, "--dataset-name", "random",
		"--tokenizer", "../../tokenizer/testdata/qwen3", "--random-input-len", "16", "--random-output-len", "3", "--random-range-ratio", "1",
		"--model", "Qwen/Qwen2.5-0.5B-Instruct", "--num-prompts", "100", "--request-rate", "20", "--max-concurrency", "8", "--server-metrics", srv.URL+"/metrics",
		"--output-details", "--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "0", "--warmup-requests", "0")
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	line, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Servingprobe struct {
			MedianTTFAT     float64 `json:"median_ttfat_ms"`
			P99TTFAT        float64 `json:"p99_ttfat_ms"`
			ReasoningTokens int     `json:"total_reasoning_tokens"`
			AnswerTokens    int     `json:"total_answer_tokens"`
			MeanAnswerTPOT  float64 `json:"mean_answer_tpot_ms"`
			Server          struct {
				TTFT struct {
					P50, P90, P99 float64
				} `json:"ttft_ms"`
				Gap          map[string]float64 `json:"ttft_minus_server_ms"`
				KVPeak       float64            `json:"kv_cache_usage_peak"`
				WaitingPeak  float64            `json:"waiting_peak"`
				Samples      int                `json:"samples"`
				SampleErrors int                `json:"sample_errors"`
				Series       struct {
					Offsets []float64  `json:"offsets_s"`
					KV      []*float64 `json:"kv_cache_usage"`
					Running []*float64 `json:"running"`
					Waiting []*float64 `json:"waiting"`
				} `json:"series"`
			} `json:"server"`
		} `json:"servingprobe"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatalf("record: %v\n%.2000s", err, line)
	}
	sv, sp := rec.Servingprobe.Server, rec.Servingprobe
	ser := sv.Series
	if n := len(ser.Offsets); n < 4 || n != sv.Samples || len(ser.KV) != n || len(ser.Running) != n || len(ser.Waiting) != n {
		t.Fatalf("series: %d offsets of %d samples, %d/%d/%d values; want one per sample, at least 4 over a 5 s run",
			len(ser.Offsets), sv.Samples, len(ser.KV), len(ser.Running), len(ser.Waiting))
	}
	if sp.ReasoningTokens == 0 || sv.WaitingPeak == 0 || len(sv.Gap) != 3 {
		t.Fatalf("the run measured no reasoning (%d tokens), no waiting request (peak %v) or no TTFT split (%v)", sp.ReasoningTokens, sv.WaitingPeak, sv.Gap)
	}

	page := filepath.Join(dir, "run.html")
	if code, _, stderr := runCLI(t, "report", "-o", page, out); code != 0 {
		t.Fatalf("report exited %d: %s", code, stderr)
	}
	shot := filepath.Join(os.TempDir(), "servingprobe-report-server.png")
	dom := browse(t, "file://"+page, shot, 4400)
	checkPNG(t, shot)
	t.Logf("screenshot: %s", shot)
	charts := checkCharts(t, dom, 1)
	requireCharts(t, charts, "throughput", "concurrency", "server-kv-cache", "server-requests", "server-ttft-split",
		"ttft-ttfat", "reasoning-tokens", "answer-tpot")
	points := func(id string) []int {
		var n []int
		for _, m := range seriesRe.FindAllStringSubmatch(charts[id], -1) {
			v, _ := strconv.Atoi(m[1])
			n = append(n, v)
		}
		return n
	}
	nonNull := func(v []*float64) int {
		n := 0
		for _, x := range v {
			if x != nil {
				n++
			}
		}
		return n
	}
	// The server's part and the rest, and where the server's estimate
	// exceeds ours, that excess.
	split := []int{3, 3}
	for _, g := range sv.Gap {
		if g < 0 {
			split = []int{3, 3, 3}
		}
	}
	for _, c := range []struct {
		id   string
		want []int
	}{
		{"server-kv-cache", []int{nonNull(ser.KV)}},
		{"server-requests", []int{nonNull(ser.Running), nonNull(ser.Waiting)}},
		{"server-ttft-split", split},
		{"ttft-ttfat", []int{3, 3}},
		{"reasoning-tokens", []int{2}},
		{"answer-tpot", []int{3, 3}},
	} {
		if got := points(c.id); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("chart %s: series of %v points or bars, want %v", c.id, got, c.want)
		}
	}
	// The server's gauges are drawn right after the client's timeline.
	order := chartRe.FindAllStringSubmatch(dom, -1)
	var ids []string
	for _, m := range order {
		ids = append(ids, m[1])
	}
	if s := strings.Join(ids, " "); !strings.Contains(s, "throughput concurrency server-kv-cache server-requests") {
		t.Errorf("charts in the order %s, want the server's gauges right after throughput and concurrency", s)
	}
	// The page's values are the record's, as the console printed them.
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for label, want := range map[string]string{
		"Server TTFT P50/P90/P99 (ms):":        f2(sv.TTFT.P50) + " / " + f2(sv.TTFT.P90) + " / " + f2(sv.TTFT.P99),
		"TTFT ours - server P50/P90/P99 (ms):": f2(sv.Gap["p50"]) + " / " + f2(sv.Gap["p90"]) + " / " + f2(sv.Gap["p99"]),
		"Waiting requests peak:":               strconv.Itoa(int(sv.WaitingPeak)),
		"Median TTFAT (ms):":                   f2(sp.MedianTTFAT),
		"P99 TTFAT (ms):":                      f2(sp.P99TTFAT),
		"Reasoning tokens:":                    strconv.Itoa(sp.ReasoningTokens),
		"Answer tokens:":                       strconv.Itoa(sp.AnswerTokens),
		"Mean answer TPOT (ms):":               f2(sp.MeanAnswerTPOT),
	} {
		m := regexp.MustCompile(`<tr(?: class="sub")?><td>` + regexp.QuoteMeta(label) + `</td><td class="val">([^<]*)</td></tr>`).FindStringSubmatch(dom)
		if m == nil || html.UnescapeString(m[1]) != want {
			t.Errorf("page row %q = %v, want the record's %q", label, m, want)
		}
		if c := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + ` +(.*?) *$`).FindStringSubmatch(stdout); c == nil || c[1] != want {
			t.Errorf("console row %q = %v, want the record's %q", label, c, want)
		}
	}
	samples := strconv.Itoa(sv.Samples)
	if sv.SampleErrors > 0 {
		samples += fmt.Sprintf(" (%d reads failed)", sv.SampleErrors)
	}
	if !strings.Contains(dom, `<tr><td>Gauge samples:</td><td class="val">`+samples+`</td></tr>`) {
		t.Errorf("the page does not state the record's %s gauge samples", samples)
	}
	if !strings.Contains(dom, "bucket estimate") {
		t.Error("the page does not call the server's percentiles bucket estimates")
	}
}
