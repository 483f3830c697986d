package report

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

var update = flag.Bool("update", false, "rewrite the report's golden files")

// reasoningRun is 40 streamed successes sent 100 ms apart, the even ones
// reasoning (two reasoning tokens) before three answer tokens, summarized
// with their details.
func reasoningRun(t *testing.T) *bench.Summary {
	t.Helper()
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var results []prober.Result
	var rows []datasets.Prompt
	for i := range 40 {
		sent := i * 100
		first := sent + 50 + i
		r := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: at(sent), Sent: at(sent), FirstToken: at(first),
			OutputTokensSource: prober.TokenSourceUsage, InputTokens: 16, InputTokensSource: prober.TokenSourceUsage}
		ev := func(ms int, reasoning bool) prober.Event {
			return prober.Event{At: at(ms), Tokens: 1, Reasoning: reasoning}
		}
		if i%2 == 0 {
			r.FirstAnswer = at(first + 40)
			r.Events = []prober.Event{ev(first, true), ev(first+20, true), ev(first+40, false), ev(first+50, false), ev(first+60, false)}
			r.ReasoningTokens, r.ReasoningTokensSource = 2, prober.TokenSourceUsage
		} else {
			r.Events = []prober.Event{ev(first, false), ev(first+10, false), ev(first+20, false)}
		}
		r.End = r.Events[len(r.Events)-1].At
		r.OutputTokens = len(r.Events)
		results = append(results, r)
		rows = append(rows, datasets.Prompt{PromptLen: 16, OutputLen: 5})
	}
	s, err := bench.Summarize(results, rows, bench.Params{Backend: "vllm-chat", Duration: 4 * time.Second, Details: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Reasoning == nil || s.Details == nil {
		t.Fatalf("the fixture measured no reasoning (%v) or kept no details", s.Reasoning)
	}
	return &s
}

// vllmBlock is a read block: TTFT (its p99 estimate above ours, so the
// split has a negative rest), E2E, the token counters and the three
// gauges read every 0.5 s over 4.5 s.
func vllmBlock(s *bench.Summary) servermetrics.Report {
	est := func(v, lo, hi float64) servermetrics.Estimate {
		return servermetrics.Estimate{Value: v, Lower: lo, Upper: hi}
	}
	r := servermetrics.Report{Source: "http://127.0.0.1:8000/metrics", Engine: "vllm", PrefixHitRate: 0.25,
		Latencies: []servermetrics.Latency{
			{Kind: servermetrics.TTFT, Metric: "vllm:time_to_first_token_seconds", Count: 40, Mean: 0.05,
				P50: est(s.TTFT.Median/1000-0.012, 0.04, 0.06), P90: est(s.TTFT.P90/1000-0.004, 0.08, 0.1), P99: est(s.TTFT.P99/1000+0.002, 0.08, 0.1)},
			{Kind: servermetrics.E2E, Metric: "vllm:e2e_request_latency_seconds", Count: 40, Mean: 0.1, P50: est(0.1, 0.08, 0.1), P90: est(0.12, 0.1, 0.15), P99: est(0.14, 0.1, 0.15)},
		},
		Counters: []servermetrics.Count{{Kind: servermetrics.PromptTokens, Delta: float64(s.TotalInputTokens)}, {Kind: servermetrics.GenerationTokens, Delta: float64(s.TotalOutputTokens)}},
	}
	peak := map[servermetrics.Kind]float64{}
	sum := map[servermetrics.Kind]float64{}
	for i := range 10 {
		v := map[servermetrics.Kind]float64{servermetrics.Running: float64(i % 4), servermetrics.Waiting: float64(i % 3), servermetrics.KVUsage: 0.05 * float64(i)}
		for k, x := range v {
			peak[k], sum[k] = max(peak[k], x), sum[k]+x
		}
		// Not whole milliseconds, as a real read's offset.
		r.Samples = append(r.Samples, servermetrics.Sample{Offset: time.Duration(i)*500*time.Millisecond + 123456, Values: v})
	}
	for _, k := range servermetrics.GaugeKinds {
		r.Gauges = append(r.Gauges, servermetrics.GaugeStats{Kind: k, Peak: peak[k], Mean: sum[k] / 10, Samples: 10})
	}
	return r
}

// consoleSection is a section of the console table as printed, its rows
// cut by bench_serving's "{:<40} {:<10}" layout, the nth with that
// heading.
func consoleSection(t *testing.T, s *bench.Summary, heading string, nth int) [][2]string {
	t.Helper()
	var b bytes.Buffer
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	in, seen := false, -1
	for _, l := range strings.Split(b.String(), "\n") {
		if len(l) >= 41 && l[40] == ' ' { // a row; anything else is a heading or a rule
			if in {
				out = append(out, [2]string{strings.TrimSpace(l[:40]), strings.TrimSpace(l[41:])})
			}
			continue
		}
		if in {
			break
		}
		if strings.Trim(l, "=- ") == heading {
			seen++
			in = seen == nth
		}
	}
	if len(out) == 0 {
		t.Fatalf("the console table has no %q section:\n%s", heading, b.String())
	}
	return out
}

var rowRe = regexp.MustCompile(`<tr(?: class="sub")?><td>([^<]*)</td><td class="val">([^<]*)</td></tr>`)

// pageRows are the rows of the page's table data-rows=id, unescaped.
func pageRows(t *testing.T, page, id string) [][2]string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<table class="compare rows" data-rows="` + regexp.QuoteMeta(id) + `">(.*?)</table>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page has no %q table", id)
	}
	var out [][2]string
	for _, r := range rowRe.FindAllStringSubmatch(m[1], -1) {
		out = append(out, [2]string{unescape(r[1]), unescape(r[2])})
	}
	return out
}

func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

func render(t *testing.T, runs ...Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, runs, Options{Now: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var (
	svgRe    = regexp.MustCompile(`(?s)<svg class="chart" data-chart="([^"]+)" data-points="(\d+)".*?</svg>`)
	xTickRe  = regexp.MustCompile(`<text class="tick" x="([0-9.]+)" y="\d+" text-anchor="middle">([^<]*)</text>`)
	seriesRe = regexp.MustCompile(`class="series (?:line|points|bars) s\d" data-points="(\d+)"`)
)

// charts are the page's charts by id, in order.
func charts(page string) (map[string]string, []string) {
	byID := map[string]string{}
	var order []string
	for _, m := range svgRe.FindAllStringSubmatch(page, -1) {
		byID[m[1]] = m[0]
		order = append(order, m[1])
	}
	return byID, order
}

// TestServerMetricsSection: one run's page shows the server block as the
// console's rows, the TTFT split as two stacked series of three bars, and
// the gauges, one point per sample, directly after the throughput and
// concurrency charts with the same x axis.
func TestServerMetricsSection(t *testing.T) {
	s := reasoningRun(t)
	s.Server = []servermetrics.Report{vllmBlock(s)}
	page := render(t, Run{Name: "run.jsonl", Summary: s})
	if diff := cmp.Diff(consoleSection(t, s, "Server metrics", 0), pageRows(t, page, "server-metrics")); diff != "" {
		t.Errorf("server rows: console (-) and page (+) differ:\n%s", diff)
	}
	byID, order := charts(page)
	want := []string{"throughput", "concurrency", "server-kv-cache", "server-requests", "server-ttft-split"}
	var got []string
	for _, id := range order {
		if strings.HasPrefix(id, "server-") || id == "throughput" || id == "concurrency" {
			got = append(got, id)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chart order (-want +got):\n%s", diff)
	}
	for id, want := range map[string][]string{"server-kv-cache": {"10"}, "server-requests": {"10", "10"}, "server-ttft-split": {"3", "3", "3"}} {
		var n []string
		for _, m := range seriesRe.FindAllStringSubmatch(byID[id], -1) {
			n = append(n, m[1])
		}
		if diff := cmp.Diff(want, n); diff != "" {
			t.Errorf("%s series points (-want +got):\n%s", id, diff)
		}
	}
	// The same x axis: the same ticks at the same places.
	ticks := func(id string) [][]string {
		var out [][]string
		for _, m := range xTickRe.FindAllStringSubmatch(byID[id], -1) {
			out = append(out, m[1:])
		}
		return out
	}
	for _, id := range []string{"concurrency", "server-kv-cache", "server-requests"} {
		if diff := cmp.Diff(ticks("throughput"), ticks(id)); diff != "" || len(ticks(id)) < 3 {
			t.Errorf("%s's x axis differs from the throughput chart's (-throughput +%s):\n%s", id, id, diff)
		}
	}
	if !strings.Contains(page, "bucket estimate") {
		t.Error("the page does not say the server's percentiles are bucket estimates")
	}
	// A record without per-request data has no timeline: the gauges are
	// drawn in the server's own section.
	s.Details = nil
	page = render(t, Run{Name: "run.jsonl", Summary: s})
	sec := regexp.MustCompile(`(?s)<h2>Server metrics</h2>.*?</section>`).FindString(page)
	for _, id := range []string{"server-ttft-split", "server-kv-cache", "server-requests"} {
		if !strings.Contains(sec, `data-chart="`+id+`"`) {
			t.Errorf("without details, the Server metrics section lacks %s", id)
		}
	}
}

// TestTTFTSplit: the split's two stacks add up to our TTFT at p50, p90
// and p99, the lower the server's estimates the block prints.
func TestTTFTSplit(t *testing.T) {
	s := reasoningRun(t)
	r := vllmBlock(s)
	c, ok := ttftSplit(s, &r, 0)
	if !ok {
		t.Fatal("no split for a block with a TTFT")
	}
	l, _ := r.Latency(servermetrics.TTFT)
	ours := []float64{s.TTFT.Median, s.TTFT.P90, s.TTFT.P99}
	if len(c.Series) != 3 {
		t.Fatalf("%d series, want the server's, the rest and the server's excess (the fixture's p99 estimate is above ours)", len(c.Series))
	}
	for j, e := range []servermetrics.Estimate{l.P50, l.P90, l.P99} {
		server, rest, over := c.Series[0].Y[j], c.Series[1].Y[j], c.Series[2].Y[j]
		if math.Abs(server+rest-max(ours[j], e.Value*1000)+over) > 1e-9 || math.Abs(server+over-e.Value*1000) > 1e-9 || rest < 0 || over < 0 || rest*over != 0 {
			t.Errorf("%s: server %v + rest %v (+ excess %v), want our TTFT %v split at the estimate %v", c.Categories[j], server, rest, over, ours[j], e.Value*1000)
		}
	}
	if c.Series[2].Y[2] <= 0 || c.Series[1].Y[0] <= 0 {
		t.Errorf("the fixture's p99 excess is %v and p50 rest %v, want both positive", c.Series[2].Y[2], c.Series[1].Y[0])
	}
	r.Latencies = r.Latencies[1:]
	if _, ok := ttftSplit(s, &r, 0); ok {
		t.Error("a split without the server's TTFT")
	}
}

// TestServerMetricsMissing: a block that says why it is missing shows
// the reason and no chart of its own.
func TestServerMetricsMissing(t *testing.T) {
	s := reasoningRun(t)
	s.Server = []servermetrics.Report{{Source: "http://h:8000/metrics", Missing: "no answer within 2s", PrefixHitRate: math.NaN()}}
	page := render(t, Run{Name: "run.jsonl", Summary: s})
	if !strings.Contains(page, "The server&#39;s metrics were not read from http://h:8000/metrics: no answer within 2s.") {
		t.Error("the page does not give the reason the block is missing")
	}
	if diff := cmp.Diff(consoleSection(t, s, "Server metrics", 0), pageRows(t, page, "server-metrics")); diff != "" {
		t.Errorf("server rows: console (-) and page (+) differ:\n%s", diff)
	}
	for _, id := range []string{"server-kv-cache", "server-requests", "server-ttft-split"} {
		if strings.Contains(page, `data-chart="`+id+`"`) {
			t.Errorf("a missing block drew %s", id)
		}
	}
}

// TestReasoningSection: the answer phase as the console's rows, and its
// charts hold the summary's values: TTFAT beside TTFT, the tokens, the
// answer's TPOT beside TPOT.
func TestReasoningSection(t *testing.T) {
	s := reasoningRun(t)
	page := render(t, Run{Name: "run.jsonl", Summary: s})
	rows := pageRows(t, page, "reasoning")
	if diff := cmp.Diff(consoleSection(t, s, "Reasoning and Answer", 0), rows); diff != "" {
		t.Errorf("reasoning rows: console (-) and page (+) differ:\n%s", diff)
	}
	for _, want := range [][2]string{{"Median TTFAT (ms):", strconv.FormatFloat(s.Reasoning.TTFAT.Median, 'f', 2, 64)},
		{"Reasoning tokens:", strconv.Itoa(s.Reasoning.ReasoningTokens)}} {
		if !strings.Contains(page, "<tr><td>"+want[0]+`</td><td class="val">`+want[1]+"</td></tr>") {
			t.Errorf("the page lacks the row %q %q", want[0], want[1])
		}
	}
	byID, _ := charts(page)
	for id, n := range map[string]string{"ttft-ttfat": "6", "reasoning-tokens": "2", "answer-tpot": "6"} {
		if c, ok := byID[id]; !ok || !strings.Contains(c, `data-points="`+n+`"`) {
			t.Errorf("chart %s missing or not %s bars", id, n)
		}
	}
	// A run that did not reason has no such section.
	s.Reasoning = nil
	if page := render(t, Run{Name: "run.jsonl", Summary: s}); strings.Contains(page, "Reasoning and answer") {
		t.Error("a run without reasoning has a reasoning section")
	}
}

// TestReportFromRecord: the page drawn from the JSONL record is the page
// drawn from the summary in memory (bench --report), the server block and
// its series included.
func TestReportFromRecord(t *testing.T) {
	s := reasoningRun(t)
	s.Server = []servermetrics.Report{vllmBlock(s), {Source: "http://h2/metrics", Missing: "connection refused", PrefixHitRate: math.NaN()}}
	line, err := s.Record(bench.JSONOptions{Strict: true, Details: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	if err := os.WriteFile(path, line, 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	live, file := render(t, Run{Name: "run.jsonl", Summary: s}), render(t, runs...)
	if live != file {
		t.Errorf("the page from the record differs from the live one:\n%s", cmp.Diff(live, file))
	}
}

// TestCompareServerRows: a comparison shows the server and reasoning rows
// with the console's values, and – for the run that did not measure them.
func TestCompareServerRows(t *testing.T) {
	a := reasoningRun(t)
	a.Server = []servermetrics.Report{vllmBlock(a)}
	b := reasoningRun(t)
	b.Reasoning = nil
	page := render(t, Run{Name: "a", Summary: a}, Run{Name: "b", Summary: b})
	gap, _ := a.ServerTTFTGap(&a.Server[0])
	l, _ := a.Server[0].Latency(servermetrics.TTFT)
	for name, v := range map[string]float64{
		"Server TTFT P50 (ms, bucket estimate)": l.P50.Value * 1000, "TTFT ours - server P99 (ms)": gap[2],
		"Median TTFAT (ms)": a.Reasoning.TTFAT.Median, "Server KV cache usage peak (%)": 45,
	} {
		want := `<tr><td>` + name + `</td><td class="num">` + strconv.FormatFloat(v, 'f', 2, 64) + `</td><td class="num">–</td><td class="num">–</td><td class="num">–</td><td></td></tr>`
		if !strings.Contains(page, want) {
			t.Errorf("comparison lacks %s", want)
		}
	}
	// The console prints the same numbers.
	var table bytes.Buffer
	if err := a.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{strconv.FormatFloat(l.P50.Value*1000, 'f', 2, 64) + " / ", "KV cache usage peak/mean:                45.00%"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("console lacks %q", want)
		}
	}
	// Rows no run measured are left out.
	a.Server, a.Reasoning = nil, nil
	if page := render(t, Run{Name: "a", Summary: a}, Run{Name: "b", Summary: b}); strings.Contains(page, "Server TTFT") || strings.Contains(page, "TTFAT") {
		t.Error("a comparison of runs without server metrics or reasoning has their rows")
	}
}

// TestStackedBars: stacked bars sit on the series below them, and the y
// axis reaches the top of the highest stack.
func TestStackedBars(t *testing.T) {
	c := chart{ID: "s", Stacked: true, YFromZero: true, Categories: []string{"a", "b"}, Series: []series{
		{Name: "low", Kind: bars, X: []float64{0, 1}, Y: []float64{10, 30}},
		{Name: "high", Kind: bars, X: []float64{0, 1}, Y: []float64{50, -5}},
	}}
	svg := string(c.SVG())
	rects := regexp.MustCompile(`<rect x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)"/>`).FindAllStringSubmatch(svg, -1)
	if len(rects) != 4 {
		t.Fatalf("%d bars, want 4:\n%s", len(rects), svg)
	}
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	// rects: low a, low b, high a, high b. The high bar at a starts where
	// the low one ends; the negative one at b hangs from the low's top.
	if top, bottom := f(rects[0][1]), f(rects[2][1])+f(rects[2][2]); math.Abs(top-bottom) > 0.11 {
		t.Errorf("stacked bar at a: the upper bar ends at %v, the lower starts at %v", bottom, top)
	}
	if top, upper := f(rects[1][1]), f(rects[3][1]); math.Abs(top-upper) > 0.11 {
		t.Errorf("negative bar at b starts at %v, want the lower bar's top %v", upper, top)
	}
	// The axis reaches 60 (the stack at a), not 50.
	if !strings.Contains(svg, `text-anchor="end">60</text>`) {
		t.Errorf("the y axis does not reach the stack's top 60:\n%s", svg)
	}
}

// TestServerSectionGolden pins the HTML of the server and reasoning
// sections (go test ./bench/report -update rewrites it).
func TestServerSectionGolden(t *testing.T) {
	s := reasoningRun(t)
	s.Server = []servermetrics.Report{vllmBlock(s)}
	var b bytes.Buffer
	secs := serverMetricsSections(s, false)
	if sec, ok := reasoningSection(s); ok {
		secs = append(secs, sec)
	}
	for _, sec := range secs {
		b.WriteString(sec.Title + "\n" + sec.Note + "\n" + string(sec.Table) + "\n")
		for _, c := range sec.Charts {
			b.WriteString(string(c) + "\n")
		}
	}
	path := filepath.Join("testdata", "server-sections.golden.html")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./bench/report -update)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}
