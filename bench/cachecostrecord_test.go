package bench

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// cacheCostSummary is a run with every key of the cache report, the price
// and the energy: the cache report of cacheTally3 (tiers and storage on
// "mooncake"), an sglang endpoint whose cached-tokens counter is 3 short
// of ours, and a DCGM exporter's energy counter. Its numbers are awkward
// floats, so that a figure derived a second way would show.
func cacheCostSummary() *Summary {
	c := cacheTally3()
	return &Summary{Backend: "sglang", DatasetName: "random", Completed: 3, Requests: 4, Failed: 1, Duration: 12.5 + 1.0/3,
		TotalInputTokens: 1700, TotalOutputTokens: 641,
		CacheCost: CacheCost{CacheReport: &c, CostPerHour: 2.1 + 0.2},
		Server: []servermetrics.Report{
			{Source: "http://sglang:30000/metrics", Engine: "sglang", PrefixHitRate: math.NaN(),
				Counters: []servermetrics.Count{{Kind: servermetrics.PromptTokens, Delta: 1700}, {Kind: servermetrics.CachedTokens, Delta: 430}}},
			{Source: "http://dcgm:9400/metrics", PrefixHitRate: math.NaN(),
				Energy: &servermetrics.Energy{Method: servermetrics.EnergyCounter, Joules: 5000.1 + 0.2, GPUs: 2}},
		}}
}

// TestCacheCostRoundTrip: a summary with the cache report, the price and
// the energy, in each of the shapes the writer has, written, read back and
// written again is the same bytes in both JSON dialects; the table and
// its sections read back are the console's; and what was read is what
// was written (the report, the price, the energy Energy picks).
func TestCacheCostRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(s *Summary)
	}{
		{"every key", func(*Summary) {}},
		{"counter agrees", func(s *Summary) { s.Server[0].Counters[1].Delta = 433 }},
		{"vLLM's prefix hits", func(s *Summary) {
			s.Server[0].Counters[1] = servermetrics.Count{Kind: servermetrics.PrefixHits, Delta: 0}
		}},
		{"no split", func(s *Summary) { s.CacheReport = &CacheReport{TotalPromptTokens: 8, TotalCachedTokens: 1} }},
		{"split, nothing cached", func(s *Summary) { s.CacheReport = &CacheReport{TotalPromptTokens: 8, HasDetails: true} }},
		{"storage without a backend's name", func(s *Summary) { s.CacheReport.StorageBackend = "" }},
		{"power estimate", func(s *Summary) {
			s.Server[1].Energy = &servermetrics.Energy{Method: servermetrics.EnergyPowerEstimate, Joules: 1.0 / 3, GPUs: 8}
		}},
		{"energy missing at its source", func(s *Summary) {
			s.Server[1].Energy = &servermetrics.Energy{Missing: "neither DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION nor two samples of DCGM_FI_DEV_POWER_USAGE in the run"}
		}},
		{"the second of two DCGM sources", func(s *Summary) {
			s.Server[0].Energy = &servermetrics.Energy{Missing: "it fell"}
		}},
		{"no DCGM source among two", func(s *Summary) { s.Server[1].Energy = nil }},
		{"no output tokens", func(s *Summary) { s.TotalOutputTokens = 0 }},
		{"no tokens and no duration", func(s *Summary) { s.TotalOutputTokens, s.TotalInputTokens, s.Duration = 0, 0, 0 }},
		{"no price", func(s *Summary) { s.CostPerHour = 0 }},
		{"no cache report", func(s *Summary) { s.CacheReport = nil }},
		{"one server block", func(s *Summary) { s.Server = s.Server[:1] }},
	} {
		for _, o := range []JSONOptions{{}, {Strict: true}} {
			t.Run(fmt.Sprintf("%s/strict=%v", tc.name, o.Strict), func(t *testing.T) {
				s := cacheCostSummary()
				tc.edit(s)
				_, back := recordRoundTrip(t, s, o)
				if diff := cmp.Diff(s.TableSections(), back.TableSections()); diff != "" {
					t.Errorf("TableSections of the parsed record (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(s.CacheCost, back.CacheCost); diff != "" {
					t.Errorf("parsed cache report and price (-want +got):\n%s", diff)
				}
				we, wsrc, wok := s.Energy()
				ge, gsrc, gok := back.Energy()
				if diff := cmp.Diff(we, ge); diff != "" || wsrc != gsrc || wok != gok {
					t.Errorf("parsed energy from %q (want %q), ok %v (want %v) (-want +got):\n%s", gsrc, wsrc, gok, wok, diff)
				}
			})
		}
	}
}

// TestCacheCostSections: the Cache Hit Details rows, the percentages
// among them, are rows of TableSections under their heading, as the
// console prints them; and the cost, energy and agreement sections are
// there with the console's values.
func TestCacheCostSections(t *testing.T) {
	s := cacheCostSummary()
	bySection := tableSectionsAreTheTable(t, s)
	for title, want := range map[string][]TableRow{
		"Cache Hit Details": {{"Total prompt tokens:", "1700"}, {"Total cached tokens:", "433"}, {"  Device:", "300"}, {"  Host:", "60"},
			{"  Storage (mooncake):", "40"}, {"Cache hit rate:", "25.5%"}, {"  Device:", "69.3%"}, {"  Host:", "13.9%"}, {"  Storage (mooncake):", "9.2%"}},
		"Cache Report vs Server": {{"Server cached_tokens:", "430 (ours 433)"},
			{"Cached tokens ours - server:", "3 (0.70% of the server's; other traffic, warm-up or a response that stated no count)"}},
	} {
		if diff := cmp.Diff(want, bySection[title]); diff != "" {
			t.Errorf("section %q (-want +got):\n%s", title, diff)
		}
	}
	for _, title := range []string{"Energy", "Cost"} {
		if len(bySection[title]) == 0 {
			t.Errorf("no %q section", title)
		}
	}
}

// TestParseBenchServingCacheReport: bench_serving's own record with its
// cache_report (json.dumps of sgl-project/sglang
// python/sglang/benchmark/serving.py's result dict: the tiers null
// without details, storage and its backend null without storage hits)
// reads back into the block bench_serving printed, and servingprobe's
// bench_serving record of it is the same cache_report bytes.
func TestParseBenchServingCacheReport(t *testing.T) {
	head := `{"tag": null, "backend": "sglang-oai-chat", "dataset_name": "random", "request_rate": Infinity, "max_concurrency": null, ` +
		`"sharegpt_output_len": null, "random_input_len": 1024, "random_output_len": 128, "random_range_ratio": 0.0, "server_info": null, ` +
		`"duration": 10.5, "completed": 3, "total_input_tokens": 1700, "total_input_text_tokens": 1700, "total_input_vision_tokens": 0, ` +
		`"total_output_tokens": 384, "total_output_tokens_retokenized": 384, "request_throughput": 0.2857, "input_throughput": 161.9, ` +
		`"output_throughput": 36.57, "total_throughput": 198.5, "mean_e2e_latency_ms": 900.0, "median_e2e_latency_ms": 880.0, ` +
		`"std_e2e_latency_ms": 20.0, "p90_e2e_latency_ms": 950.0, "p95_e2e_latency_ms": 960.0, "p99_e2e_latency_ms": 970.0, ` +
		`"mean_ttft_ms": 50.0, "median_ttft_ms": 48.0, "std_ttft_ms": 4.0, "p90_ttft_ms": 55.0, "p95_ttft_ms": 56.0, "p99_ttft_ms": 57.0, ` +
		`"mean_tpot_ms": 6.0, "median_tpot_ms": 6.0, "std_tpot_ms": 0.5, "p90_tpot_ms": 6.5, "p95_tpot_ms": 6.6, "p99_tpot_ms": 6.7, ` +
		`"mean_itl_ms": 6.0, "median_itl_ms": 6.0, "std_itl_ms": 1.0, "p90_itl_ms": 7.0, "p95_itl_ms": 8.0, "p99_itl_ms": 9.0, ` +
		`"concurrency": 0.26, "accept_length": null, "max_output_tokens_per_s": 60.0, "max_concurrent_requests": 3, `
	pad := func(label, v string) string { return label + strings.Repeat(" ", 40-len(label)) + " " + v }
	for _, tc := range []struct {
		name, report string
		want         CacheReport
		block        []string
	}{
		{"tiers and storage",
			`{"total_prompt_tokens": 1700, "total_cached_tokens": 433, "cache_hit_rate_pct": 25.47, "device_cached_tokens": 300, "host_cached_tokens": 60, "storage_cached_tokens": 40, "storage_backend": "mooncake"}`,
			cacheTally3(),
			[]string{"----------------Cache Hit Details-----------------", pad("Total prompt tokens:", "1700      "), pad("Total cached tokens:", "433       "),
				pad("  Device:", "300       "), pad("  Host:", "60        "), pad("  Storage (mooncake):", "40        "),
				pad("Cache hit rate:", "25.5%"), pad("  Device:", "69.3%"), pad("  Host:", "13.9%"), pad("  Storage (mooncake):", "9.2%")}},
		{"no details",
			`{"total_prompt_tokens": 1700, "total_cached_tokens": 1, "cache_hit_rate_pct": 0.06, "device_cached_tokens": null, "host_cached_tokens": null, "storage_cached_tokens": null, "storage_backend": null}`,
			CacheReport{TotalPromptTokens: 1700, TotalCachedTokens: 1},
			[]string{"----------------Cache Hit Details-----------------", pad("Total prompt tokens:", "1700      "), pad("Total cached tokens:", "1         "),
				pad("Cache hit rate:", "0.1%")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseRecord([]byte(head + `"cache_report": ` + tc.report + "}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if s.CacheReport == nil {
				t.Fatal("no cache report read back")
			}
			if diff := cmp.Diff(tc.want, *s.CacheReport); diff != "" {
				t.Errorf("cache report (-want +got):\n%s", diff)
			}
			var table bytes.Buffer
			if err := s.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if block := strings.Join(tc.block, "\n") + "\n" + strings.Repeat("=", 50) + "\n"; !strings.Contains(table.String(), block) {
				t.Errorf("table lacks bench_serving's block\n%s\nin\n%s", block, table.String())
			}
			line, err := s.Record(JSONOptions{StandardOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if want := `"max_concurrent_requests": 3, "cache_report": ` + tc.report + "}"; !strings.HasSuffix(strings.TrimSpace(string(line)), want) {
				t.Errorf("record ends\n%s\nwant\n%s", line[max(0, len(line)-len(want)-1):], want)
			}
		})
	}
}

// TestParseCacheCostErrors: a malformed cache report, price, energy or
// agreement, or one whose derived figures do not follow from its inputs,
// is an error naming the key, not a silently different block.
func TestParseCacheCostErrors(t *testing.T) {
	good, err := cacheCostSummary().Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"total_prompt_tokens": 1700, "total_cached_tokens": 433, "cache_hit_rate_pct": 25.47`, `"per_hour": 2.3`,
		`"joules": 5000.3`, `"gpus": 2`, `"ours_minus_server": 3.0`, `"per_million_output_tokens": `, `"storage_backend": "mooncake"`} {
		if !bytes.Contains(good, []byte(k)) {
			t.Fatalf("the fixture's record lacks %s:\n%s", k, good)
		}
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"report not an object", `"cache_report": {`, `"cache_report": [1], "x": {`, "cache_report: want an object"},
		{"count a string", `"total_prompt_tokens": 1700`, `"total_prompt_tokens": "1700"`, "cache_report: total_prompt_tokens:"},
		{"count null", `"total_cached_tokens": 433`, `"total_cached_tokens": null`, "cache_report: total_cached_tokens: null, want a count"},
		{"count missing", `"total_prompt_tokens": 1700, `, ``, "cache_report: total_prompt_tokens: missing"},
		{"tier not whole", `"host_cached_tokens": 60`, `"host_cached_tokens": 60.5`, "cache_report: host_cached_tokens:"},
		{"backend a number", `"storage_backend": "mooncake"`, `"storage_backend": 7`, "cache_report: storage_backend:"},
		{"hit rate off", `"cache_hit_rate_pct": 25.47`, `"cache_hit_rate_pct": 25.5`, "cache_report.cache_hit_rate_pct: 25.5, but the record's own figures give 25.47"},
		{"price a string", `"per_hour": 2.3`, `"per_hour": "2.3"`, "servingprobe.cost.per_hour:"},
		{"price zero", `"per_hour": 2.3`, `"per_hour": 0`, "servingprobe.cost.per_hour: 0, want a price above 0"},
		{"price missing", `"per_hour": 2.3, `, ``, "servingprobe.cost.per_hour: missing, want a price above 0"},
		{"cost off", `"per_million_input_tokens": `, `"per_million_input_tokens": 1, "x": `, "servingprobe.cost.per_million_input_tokens: 1, but the record's own figures give"},
		{"energy source unknown", `"source": "http://dcgm:9400/metrics", "joules"`, `"source": "http://elsewhere/metrics", "joules"`, `servingprobe.energy.source: "http://elsewhere/metrics" is no server block's source`},
		{"energy method unknown", `"method": "counter"`, `"method": "guess"`, `servingprobe.energy.method: "guess", want "counter" or "power_estimate"`},
		{"energy gpus a string", `"gpus": 2`, `"gpus": "2"`, "servingprobe.energy.gpus:"},
		{"energy joules missing", `"joules": 5000.3, `, ``, "servingprobe.energy.joules: missing"},
		{"energy per token off", `"joules_per_output_token": `, `"joules_per_output_token": 1, "x": `, "servingprobe.energy.joules_per_output_token: 1, but the record's own figures give"},
		{"agreement off", `"ours_minus_server": 3.0`, `"ours_minus_server": 4.0`, "servingprobe.cache_vs_server[0].ours_minus_server: 4, but the record's own figures give 3"},
		{"agreement not a list", `"cache_vs_server": [`, `"cache_vs_server": 1, "x": [`, "servingprobe.cache_vs_server: 1, the record's own figures give 1 entries"},
		{"agreement without a report", `"cache_report": {`, `"cache_report": null, "x": {`, "servingprobe.cache_vs_server: the record holds nothing it could come from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !bytes.Contains(good, []byte(tc.old)) {
				t.Fatalf("the fixture's record lacks %s", tc.old)
			}
			line := bytes.Replace(good, []byte(tc.old), []byte(tc.new), 1)
			_, err := ParseRecord(line)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseRecord error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// cacheResults gives a run's results prefix-cache hits as a server would
// state them: every second response with the tiers' split (every fourth
// with storage hits on one backend), the others a plain count. Every
// shard of three gets responses of each kind.
func cacheResults(results []prober.Result) []prober.Result {
	for i := range results {
		r := &results[i]
		r.CachedTokens = i % 37
		if i%2 == 0 {
			d := &prober.CacheDetails{Device: i % 29, Host: i % 5}
			if i%4 == 0 {
				d.Storage, d.StorageBackend = 1+i%7, "mooncake"
			}
			r.CachedTokens = d.Device + d.Host + d.Storage
			r.CacheDetails = d
		}
	}
	return results
}

// TestMergeCacheCost: shards' cache reports merge into the single run's,
// exactly (they are sums over the successful requests), from details and
// from sketches alike; the price is the shards' and the cost is charged
// over the merged duration (the single run's, to rounding); the merged
// record reads back to itself.
func TestMergeCacheCost(t *testing.T) {
	results, rows := sketchRun(300)
	results = cacheResults(results)
	p := fixtureParams()
	p.Duration = 3 * time.Second
	p.MaxConcurrency = 0
	p.CacheCostParams = CacheCostParams{CacheReport: true, CostPerHour: 2.5}
	a := NewAccumulator(p)
	a.SetStart(base)
	for i := range results {
		a.Add(i, results[i], rows[i])
	}
	want, err := a.Summary(p.Duration)
	if err != nil {
		t.Fatal(err)
	}
	if want.CacheReport.Storage == 0 || want.CacheReport.Host == 0 {
		t.Fatalf("the fixture's cache report has no storage or host hits: %+v", want.CacheReport)
	}
	for _, details := range []bool{true, false} {
		t.Run(fmt.Sprintf("details=%v", details), func(t *testing.T) {
			q := p
			if !details {
				q.Stats = StatsSketch
			}
			got, err := Merge(shardRecords(t, results, rows, q, 3, details))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.CacheReport, got.CacheReport); diff != "" {
				t.Errorf("merged cache report (-single run +merged):\n%s", diff)
			}
			wc, wok := want.Cost()
			gc, gok := got.Cost()
			if !wok || !gok || gc.PerHour != 2.5 || !relClose(gc.PerMillionInputTokens, wc.PerMillionInputTokens, 1e-9) ||
				!relClose(gc.PerMillionOutputTokens, wc.PerMillionOutputTokens, 1e-9) {
				t.Errorf("merged cost %+v (%v), single run's %+v (%v)", gc, gok, wc, wok)
			}
			line, err := got.Record(JSONOptions{Details: details})
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseRecord(line)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got.CacheCost, back.CacheCost, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("merged record read back (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMergeCacheCostRefuses: shards run with and without --cache-report,
// or at different prices, are refused with the shards named; shards that
// named different storage backends name them all.
func TestMergeCacheCostRefuses(t *testing.T) {
	results, rows := sketchRun(30)
	results = cacheResults(results)
	p := fixtureParams()
	p.CacheCostParams = CacheCostParams{CacheReport: true, CostPerHour: 2.5}
	recs := shardRecords(t, results, rows, p, 3, true) // indices 2, 1, 0
	noReport := *recs[1]
	noReport.CacheReport = nil
	cheaper := *recs[0]
	cheaper.CostPerHour = 2
	for _, tc := range []struct {
		name string
		in   []*Summary
		want string
	}{
		{"a shard without the report", []*Summary{recs[0], &noReport, recs[2]}, "merge: shard 0/3 has a cache report and shard 1/3 none"},
		{"another price", []*Summary{&cheaper, recs[1], recs[2]}, "merge: shard 0/3 was run with --cost-per-hour 2.5 and shard 2/3 with 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Merge() = %v, want an error with %q", err, tc.want)
			}
		})
	}
	other := *recs[0]
	c := *other.CacheReport
	c.StorageBackend = "3fs"
	other.CacheReport = &c
	got, err := Merge([]*Summary{recs[1], &other, recs[2]})
	if err != nil {
		t.Fatal(err)
	}
	if got.CacheReport.StorageBackend != "mooncake, 3fs" {
		t.Errorf("storage backend %q, want both shards' in shard order", got.CacheReport.StorageBackend)
	}
}

// FuzzParseCacheCost: a record's cache report, price, energy and
// agreement, however malformed, are read back or refused with an error,
// never a panic; what is read back writes a record that reads back to the
// same bytes.
func FuzzParseCacheCost(f *testing.F) {
	// Seeds hold the keys these figures are written from alone: the
	// fuzzer mutates small inputs faster.
	for _, edit := range []func(*Summary){func(*Summary) {}, func(s *Summary) { s.Server[1].Energy = nil; s.TotalOutputTokens = 0 }} {
		s := cacheCostSummary()
		edit(s)
		for _, strict := range []bool{false, true} {
			e := &pyfmt.Encoder{Strict: strict}
			if err := e.Object(record{{"duration", s.Duration}, {"total_input_tokens", s.TotalInputTokens}, {"total_output_tokens", s.TotalOutputTokens},
				s.appendCacheReport(nil)[0], {"servingprobe", append(s.serverFields(), s.costEnergyFields()...)}}); err != nil {
				f.Fatal(err)
			}
			f.Add(e.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		s, err := ParseRecord(line)
		if err != nil {
			return
		}
		once, err := s.Record(JSONOptions{Strict: true})
		if err != nil {
			return // a value strict JSON cannot hold
		}
		back, err := ParseRecord(once)
		if err != nil {
			t.Fatalf("ParseRecord of Record's own line: %v\n%s", err, once)
		}
		twice, err := back.Record(JSONOptions{Strict: true})
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("record read back differs (%v):\n%s", err, cmp.Diff(string(once), string(twice)))
		}
	})
}

// recordRoundTrip writes s's record with o, parses it back and checks that
// the parsed Summary writes the same bytes and the same console table. It
// returns the record and the parsed Summary.
func recordRoundTrip(t *testing.T, s *Summary, o JSONOptions) ([]byte, *Summary) {
	t.Helper()
	line, err := s.Record(o)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseRecord(line)
	if err != nil {
		t.Fatalf("ParseRecord: %v\n%s", err, line)
	}
	again, err := back.Record(o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(line, again) {
		t.Errorf("Record → ParseRecord → Record differs:\n%s", cmp.Diff(string(line), string(again)))
	}
	var want, got bytes.Buffer
	if err := s.WriteTable(&want); err != nil {
		t.Fatal(err)
	}
	if err := back.WriteTable(&got); err != nil {
		t.Fatal(err)
	}
	if want.String() != got.String() {
		t.Errorf("table of the parsed record differs:\n%s", cmp.Diff(want.String(), got.String()))
	}
	return line, back
}
