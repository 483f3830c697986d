package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// cacheCostRun is 20 streamed successes run with --cache-report and
// --cost-per-hour: the even responses state sglang's tiers' split, with
// storage hits on every fourth, the odd ones a plain count; an sglang
// endpoint counted cached tokens (not quite ours), two a DCGM exporter's
// energy counter.
func cacheCostRun(t *testing.T, details bool) *bench.Summary {
	t.Helper()
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var results []prober.Result
	var rows []datasets.Prompt
	for i := range 20 {
		sent := i * 100
		r := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: at(sent), Sent: at(sent), FirstToken: at(sent + 40),
			OutputTokensSource: prober.TokenSourceUsage, InputTokens: 64, InputTokensSource: prober.TokenSourceUsage, CachedTokens: i % 7}
		if i%2 == 0 {
			d := &prober.CacheDetails{Device: 16 + i, Host: i % 3}
			if i%4 == 0 {
				d.Storage, d.StorageBackend = 8, "mooncake"
			}
			r.CacheDetails, r.CachedTokens = d, d.Device+d.Host+d.Storage
		}
		r.Events = []prober.Event{{At: at(sent + 40), Tokens: 1}, {At: at(sent + 50), Tokens: 1}, {At: at(sent + 65), Tokens: 1}}
		r.End, r.OutputTokens = r.Events[2].At, 3
		results = append(results, r)
		rows = append(rows, datasets.Prompt{PromptLen: 64, OutputLen: 3})
	}
	s, err := bench.Summarize(results, rows, bench.Params{Backend: "sglang-oai-chat", Duration: 2 * time.Second, Details: details,
		CacheCostParams: bench.CacheCostParams{CacheReport: true, CostPerHour: 12.5}})
	if err != nil {
		t.Fatal(err)
	}
	if s.CacheReport == nil || s.CacheReport.Storage == 0 {
		t.Fatalf("cache report %+v, want one with storage hits", s.CacheReport)
	}
	s.Server = []servermetrics.Report{
		{Source: "http://sglang:30000/metrics", Engine: "sglang", PrefixHitRate: math.NaN(),
			Counters: []servermetrics.Count{{Kind: servermetrics.CachedTokens, Delta: float64(s.CacheReport.TotalCachedTokens + 17)}}},
		{Source: "http://dcgm:9400/metrics", PrefixHitRate: math.NaN(),
			Energy: &servermetrics.Energy{Method: servermetrics.EnergyCounter, Joules: 812.375, GPUs: 2}},
	}
	return &s
}

// TestCacheCostSection: a run's page, drawn from the run and from its
// JSONL record read back, shows the Cache Hit Details, the agreement with
// the server, the energy and the cost as the console's rows, value for
// value, with and without the per-request details.
func TestCacheCostSection(t *testing.T) {
	for _, details := range []bool{true, false} {
		s := cacheCostRun(t, details)
		line, err := s.Record(bench.JSONOptions{Details: details})
		if err != nil {
			t.Fatal(err)
		}
		back, err := bench.ParseRecord(line)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range []struct {
			name string
			s    *bench.Summary
		}{{"run", s}, {"record", back}} {
			page := render(t, Run{Name: "run.jsonl", Summary: run.s})
			for _, c := range []struct{ heading, id string }{
				{"Cache Hit Details", "cache-report"}, {"Cache Report vs Server", "cache-vs-server"}, {"Energy", "energy"}, {"Cost", "cost"},
			} {
				if diff := cmp.Diff(consoleSection(t, s, c.heading, 0), pageRows(t, page, c.id)); diff != "" {
					t.Errorf("details=%v, page of the %s: %s rows: console (-) and page (+) differ:\n%s", details, run.name, c.heading, diff)
				}
			}
			for _, want := range []string{"<h2>Prefix cache</h2>", "<h2>Energy and cost</h2>", "Against http://sglang:30000/metrics:",
				`<td>Cache hit rate:</td><td class="val">`, `<td>Storage (mooncake):</td>`, `<td>Cost per 1M output tokens (USD):</td>`} {
				if !strings.Contains(page, want) {
					t.Errorf("details=%v, page of the %s lacks %s", details, run.name, want)
				}
			}
		}
	}
}

// TestCacheCostSectionAbsent: a run without a cache report, energy or
// price has neither section.
func TestCacheCostSectionAbsent(t *testing.T) {
	s := reasoningRun(t)
	page := render(t, Run{Name: "run.jsonl", Summary: s})
	for _, h := range []string{"<h2>Prefix cache</h2>", "<h2>Energy and cost</h2>"} {
		if strings.Contains(page, h) {
			t.Errorf("the page has %s", h)
		}
	}
}
