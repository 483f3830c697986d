package exporter

import (
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// benchSummary is a real bench summary of three streamed requests whose
// TTFT and inter-token gaps all differ, so that every percentile is a
// number of its own and none is zero.
func benchSummary(t *testing.T) *bench.Summary {
	t.Helper()
	t0 := time.Unix(1700000000, 0)
	acc := bench.NewAccumulator(bench.Params{Backend: "openai-chat", Dataset: "random"})
	acc.SetStart(t0)
	for i, ttft := range []time.Duration{120 * time.Millisecond, 340 * time.Millisecond, 910 * time.Millisecond} {
		sent := t0.Add(time.Duration(i) * time.Second)
		first := sent.Add(ttft)
		gap := time.Duration(10+7*i) * time.Millisecond
		r := prober.Result{Target: "sim", Module: "m", Stream: true, Outcome: prober.OutcomeSuccess,
			Sent: sent, FirstToken: first, End: first.Add(3 * gap),
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
	return &sum
}

// TestLandingBenchNumbersAreTheAPIs renders the landing page for a bench
// window with a real summary and checks each figure in its row against the
// summary's JSON, which is what GET /api/v1/benches/{id} returns under
// "summary": the page once read p99_ttft_ms, a key the summary does not
// have, and showed 0.0 ms for every window.
func TestLandingBenchNumbersAreTheAPIs(t *testing.T) {
	sum := benchSummary(t)
	js, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		ReqRate float64 `json:"request_throughput"`
		OutRate float64 `json:"output_throughput"`
		TTFT    map[string]float64
		ITL     map[string]float64
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	for key, dst := range map[string]any{"request_throughput": &api.ReqRate, "output_throughput": &api.OutRate, "ttft_ms": &api.TTFT, "itl_ms": &api.ITL} {
		if err := json.Unmarshal(raw[key], dst); err != nil {
			t.Fatalf("summary JSON %s: %v", key, err)
		}
	}
	if api.TTFT["p99"] <= 0 || api.ITL["p99"] <= 0 || api.ReqRate <= 0 || api.OutRate <= 0 {
		t.Fatalf("the summary has a zero figure, which would not tell a missed key from a real value: %s", js)
	}

	// The headline as the window code builds it: from the typed summary.
	h := BenchHeadline{RequestThroughput: sum.RequestThroughput, OutputThroughput: sum.OutputThroughput,
		Completed: sum.Completed, Failed: sum.Failed, TTFTP99Ms: sum.TTFT.P99, ITLP99Ms: sum.ITL.P99}
	d := &Daemon{history: NewHistory(1)}
	d.state.Store(&state{cfg: &config.Config{}})
	d.SetBenchWindows(func() []BenchWindow {
		return []BenchWindow{{ID: "b1", Target: "sim", Module: "m", Status: BenchSucceeded, Headline: &h,
			Progress: &BenchProgress{Done: 3, Total: 3}}}
	})
	rec := httptest.NewRecorder()
	d.handleLanding(rec, httptest.NewRequest("GET", "/", nil))
	page := rec.Body.String()
	cell := func(class string) string {
		m := regexp.MustCompile(`<td class="` + class + `">([^<]*)</td>`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no %s cell on the landing page:\n%s", class, page)
		}
		return m[1]
	}
	f := func(v float64, prec int, unit string) string {
		return strconv.FormatFloat(v, 'f', prec, 64) + " " + unit
	}
	for _, tc := range []struct{ class, want string }{
		{"reqrate", f(api.ReqRate, 2, "req/s")},
		{"outrate", f(api.OutRate, 1, "tok/s")},
		{"ttftp99", f(api.TTFT["p99"], 1, "ms")},
		{"itlp99", f(api.ITL["p99"], 1, "ms")},
		{"progress", "3/3"},
	} {
		if got := cell(tc.class); got != tc.want {
			t.Errorf("landing page %s = %q, want the API's %q", tc.class, got, tc.want)
		}
	}
}

func TestBenchProgressString(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *BenchProgress
		want string
	}{
		{"none yet", nil, ""},
		{"nothing planned", &BenchProgress{}, ""},
		{"a run", &BenchProgress{Done: 7, Total: 10}, "7/10"},
		{"a run with failures", &BenchProgress{Done: 7, Total: 10, Failed: 2}, "7/10 (2 failed)"},
		// A sweep counts the requests of the point it is at, never every
		// point's requests over one point's total (which read "30/10").
		{"a sweep's third point of four", &BenchProgress{Done: 4, Total: 10, Point: 3, Points: 4}, "point 3/4: 4/10"},
		{"an SLO search, whose point count is open", &BenchProgress{Done: 10, Total: 10, Point: 5}, "point 5: 10/10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.String(); got != tc.want {
				t.Errorf("%+v.String() = %q, want %q", tc.p, got, tc.want)
			}
		})
	}
}

// TestLandingBenchSweepRow: a sweep's row shows its point and what it
// found, and no headline columns.
func TestLandingBenchSweepRow(t *testing.T) {
	d := &Daemon{history: NewHistory(1)}
	d.state.Store(&state{cfg: &config.Config{}})
	var ws []BenchWindow
	for i := range landingBenches + 2 {
		ws = append(ws, BenchWindow{ID: "s" + strconv.Itoa(i), Status: BenchRunning, Sweep: "request_rate sweep, 2 points",
			Progress: &BenchProgress{Done: 4, Total: 10, Point: 3, Points: 4}})
	}
	d.SetBenchWindows(func() []BenchWindow { return ws })
	rec := httptest.NewRecorder()
	d.handleLanding(rec, httptest.NewRequest("GET", "/", nil))
	page := rec.Body.String()
	if n := len(regexp.MustCompile(`<td class="progress">point 3/4: 4/10</td><td colspan="5" class="sweep">request_rate sweep, 2 points</td>`).FindAllString(page, -1)); n != landingBenches {
		t.Errorf("%d sweep rows with their point and answer, want %d:\n%s", n, landingBenches, page)
	}
	if !regexp.MustCompile(`2 older runs: <a href="api/v1/benches">`).MatchString(page) {
		t.Errorf("the page does not say how many older runs the API lists:\n%s", page)
	}
}

// TestLandingServerTTFTCell: the server TTFT cell shows both quantiles
// when the run has them, and a dash whose title says why when it has not
// (the why is escaped: it can quote what an endpoint answered).
func TestLandingServerTTFTCell(t *testing.T) {
	d := &Daemon{history: NewHistory(1)}
	d.state.Store(&state{cfg: &config.Config{}})
	d.SetBenchWindows(func() []BenchWindow {
		return []BenchWindow{
			{ID: "with", Status: BenchSucceeded, Headline: &BenchHeadline{ServerTTFTP50Ms: 61.25, ServerTTFTP99Ms: 98.04}},
			{ID: "without", Status: BenchSucceeded, Headline: &BenchHeadline{ServerMissing: `server metrics not read: GET <x>: 404 "Not Found"`}},
		}
	})
	rec := httptest.NewRecorder()
	d.handleLanding(rec, httptest.NewRequest("GET", "/", nil))
	page := rec.Body.String()
	for _, want := range []string{
		`<td class="serverttft" title="the server's own histogram over the run: bucket estimates, as histogram_quantile's">61.2 / 98.0 ms</td>`,
		`<td class="serverttft dim" title="server metrics not read: GET &lt;x&gt;: 404 &#34;Not Found&#34;">–</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("landing page lacks %s:\n%s", want, page)
		}
	}
}

func TestBenchWindowStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		w         BenchWindow
		text, cls string
	}{
		{"clean", BenchWindow{Status: BenchSucceeded, Headline: &BenchHeadline{Completed: 150}}, "completed", "ok"},
		{"failures", BenchWindow{Status: BenchSucceeded, Headline: &BenchHeadline{Completed: 46, Failed: 104}}, "completed, 104/150 failed", "warn"},
		{"no headline", BenchWindow{Status: BenchSucceeded}, "completed", "ok"},
		{"failed", BenchWindow{Status: BenchFail, Headline: &BenchHeadline{Failed: 3}}, "failed", "bad"},
		{"interrupted", BenchWindow{Status: BenchInterrupted}, "interrupted", "warn"},
		{"running", BenchWindow{Status: BenchRunning}, "running", "dim"},
	} {
		if got, cls := tc.w.StatusText(), tc.w.StatusClass(); got != tc.text || cls != tc.cls {
			t.Errorf("%s: StatusText, StatusClass = %q, %q, want %q, %q", tc.name, got, cls, tc.text, tc.cls)
		}
	}
}
