package benchapi

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// TestLandingBenchRowIsTheAPIs runs a window whose output is a real
// summary and reads its row on the landing page: every figure is the one
// GET /api/v1/benches/{id} states in "summary" (the page once read
// p99_ttft_ms, which the summary does not have, and showed 0.0 ms). It
// reads them again after a restart, when the row comes from the stored file.
func TestLandingBenchRowIsTheAPIs(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	acc := bench.NewAccumulator(bench.Params{Backend: "vllm", DatasetName: "random"})
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
	check := func(e *benchEnv, when string) {
		resp, err := e.client.Get(e.url + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for class, w := range want {
			c := regexp.MustCompile(`<td class="` + class + `">([^<]*)</td>`).FindStringSubmatch(string(page))
			if c == nil || c[1] != w {
				t.Errorf("%s: landing page %s = %v, the API says %q", when, class, c, w)
			}
		}
	}
	check(e, "live")
	check(startBenchDaemonWith(t, cfg, "", run), "after a restart")
}
