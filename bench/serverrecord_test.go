package bench

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// serverReport is a block with every field the table shows: latencies
// with and without observations and an open last bucket, counters that
// disagree with ours (token-count notes), a hit rate, the three gauges
// over n samples (one read lacks the waiting gauge), failed reads, notes
// and unknown families. Its numbers are awkward floats (0.1 + 0.2,
// thirds) and its offsets are not whole milliseconds.
func serverReport(n int) servermetrics.Report {
	rng := rand.New(rand.NewPCG(1, 2))
	est := func(v, lo, hi float64) servermetrics.Estimate {
		return servermetrics.Estimate{Value: v, Lower: lo, Upper: hi}
	}
	r := servermetrics.Report{
		Source: "http://vllm:8000/metrics", Engine: "vllm", PrefixHitRate: 1.0 / 3,
		Latencies: []servermetrics.Latency{
			{Kind: servermetrics.TTFT, Metric: "vllm:time_to_first_token_seconds", Count: 999, Mean: 0.1 + 0.2,
				P50: est(0.0123456789, 0.01, 0.02), P90: est(0.0567, 0.04, 0.06), P99: est(0.08, 0.08, math.Inf(1))},
			{Kind: servermetrics.Queue, Metric: "vllm:request_queue_time_seconds", Count: 0},
			{Kind: servermetrics.E2E, Metric: "vllm:e2e_request_latency_seconds", Count: 999, Mean: 1.1,
				P50: est(0.7, 0.5, 0.8), P90: est(2.5/3, 0.8, 1), P99: est(0.99, 0.8, 1)},
		},
		Counters: []servermetrics.Count{{Kind: servermetrics.PromptTokens, Delta: 123457}, {Kind: servermetrics.GenerationTokens, Delta: 3.5},
			{Kind: servermetrics.PrefixQueries, Delta: 300}, {Kind: servermetrics.PrefixHits, Delta: 100}, {Kind: servermetrics.Preemptions, Delta: 2}},
		Gauges: []servermetrics.GaugeStats{{Kind: servermetrics.Running, Peak: 64, Mean: 31.25}, {Kind: servermetrics.Waiting, Peak: 7, Mean: 0.1},
			{Kind: servermetrics.KVUsage, Peak: 0.97, Mean: 0.4321}},
		SampleErrors: 3,
		Notes:        []string{"vllm:request_prefill_time_seconds not read: its buckets changed during the run"},
		Unknown:      []string{"vllm:iteration_tokens_total"},
	}
	for i := range n {
		v := map[servermetrics.Kind]float64{servermetrics.Running: float64(rng.IntN(65)), servermetrics.KVUsage: rng.Float64()}
		if i != 5 {
			v[servermetrics.Waiting] = float64(rng.IntN(8))
		}
		off := time.Duration(i)*time.Second + time.Duration(rng.IntN(int(time.Millisecond)))
		r.Samples = append(r.Samples, servermetrics.Sample{Offset: off, Values: v})
	}
	return r
}

// TestServerRecordRoundTrip: a summary with server blocks (one read, one
// that says why it is missing) written, read back and written again is
// the same bytes, in both JSON dialects; the table read back is the
// console's; the series is bounded.
func TestServerRecordRoundTrip(t *testing.T) {
	results, rows := fixture()
	for _, n := range []int{12, 1000} {
		for _, o := range []JSONOptions{{}, {Strict: true}, {Strict: true, Details: true}} {
			t.Run(fmt.Sprintf("samples=%d/strict=%v/details=%v", n, o.Strict, o.Details), func(t *testing.T) {
				p := fixtureParams()
				p.Details = o.Details
				// And the keys written beside the block: the cache report (one
				// response stated the tiers' split), cache_vs_server (the
				// block counts prefix hits), the price and the energy.
				p.CacheCostParams = CacheCostParams{CacheReport: true, CostPerHour: 2.1 + 0.2}
				results := slices.Clone(results)
				results[0].CachedTokens, results[0].CacheDetails = 7, &prober.CacheDetails{Device: 5, Host: 1, Storage: 1, StorageBackend: "mooncake"}
				results[1].CachedTokens = 3
				s, err := Summarize(results, rows, p)
				if err != nil {
					t.Fatal(err)
				}
				s.Server = []servermetrics.Report{serverReport(n), {Source: "http://other/metrics", Missing: "no answer within 2s", PrefixHitRate: math.NaN()}}
				s.Server[0].Energy = &servermetrics.Energy{Method: servermetrics.EnergyPowerEstimate, Joules: 1234.5 + 1.0/3, GPUs: 8}
				line, back := recordRoundTrip(t, &s, o)
				for _, k := range []string{`"cache_report": {`, `"cache_vs_server": [{`, `"energy": {"source": "http://vllm`, `"cost": {`} {
					if !bytes.Contains(line, []byte(k)) {
						t.Errorf("the record lacks %s", k)
					}
				}
				if diff := cmp.Diff(s.CacheCost, back.CacheCost); diff != "" || s.CacheReport.TotalCachedTokens != 10 {
					t.Errorf("parsed cache report and price (-want +got), of 10 cached tokens:\n%s", diff)
				}
				if len(back.Server) != 2 {
					t.Fatalf("parsed %d server blocks, want 2", len(back.Server))
				}
				r := back.Server[0]
				if len(r.Samples) != min(n, ServerSeriesPoints) || r.SamplesRead() != n {
					t.Errorf("parsed series: %d points of %d reads, want %d of %d", len(r.Samples), r.SamplesRead(), min(n, ServerSeriesPoints), n)
				}
				// Everything the block holds but the metric names of its
				// counters and gauges, which the record does not write.
				orig := s.Server[0]
				orig.Samples = ServerSeries(&orig)
				if n > ServerSeriesPoints {
					orig.SampleCount = n
				}
				for i := range orig.Gauges {
					for _, sm := range orig.Samples {
						if _, ok := sm.Values[orig.Gauges[i].Kind]; ok {
							orig.Gauges[i].Samples++
						}
					}
				}
				if diff := cmp.Diff(orig, r, cmpopts.EquateNaNs(), cmpopts.IgnoreFields(servermetrics.Count{}, "Metric")); diff != "" {
					t.Errorf("parsed server block (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(s.Server[1], back.Server[1], cmpopts.EquateNaNs()); diff != "" {
					t.Errorf("parsed missing block (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestServerSeries: up to ServerSeriesPoints samples are kept whole; more
// are thinned evenly by index to exactly that many, the first and the
// last among them, in order; offsets to the millisecond.
func TestServerSeries(t *testing.T) {
	for _, n := range []int{0, 1, ServerSeriesPoints, ServerSeriesPoints + 1, 3600} {
		r := serverReport(n)
		got := ServerSeries(&r)
		if len(got) != min(n, ServerSeriesPoints) {
			t.Errorf("ServerSeries of %d samples: %d points, want %d", n, len(got), min(n, ServerSeriesPoints))
			continue
		}
		if n == 0 {
			continue
		}
		if got[0].Offset != r.Samples[0].Offset.Round(time.Millisecond) || got[len(got)-1].Offset != r.Samples[n-1].Offset.Round(time.Millisecond) {
			t.Errorf("ServerSeries of %d samples does not keep the first and the last", n)
		}
		// Evenly: the gaps between kept indices differ by at most one.
		lo, hi := math.MaxInt, 0
		for i := 1; i < len(got); i++ {
			gap := int((got[i].Offset - got[i-1].Offset).Round(time.Second) / time.Second) // offset i is i s plus under 1 ms
			lo, hi = min(lo, gap), max(hi, gap)
		}
		if len(got) > 1 && (lo < 1 || hi-lo > 1) {
			t.Errorf("ServerSeries of %d samples: kept index gaps from %d to %d, want even", n, lo, hi)
		}
	}
}

// TestFromMs: the ms a record writes (seconds × 1000) read back as
// seconds write the same ms again, for values across magnitudes; the
// byte-identical round trip of a server block rests on it.
func TestFromMs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1_000_000 {
		v := rng.Float64() * math.Pow(10, float64(rng.IntN(14)-7))
		x := v * 1000
		if got := fromMs(x) * 1000; got != x {
			t.Fatalf("fromMs(%v)*1000 = %v, want %v (seconds %v)", x, got, x, v)
		}
	}
}

// TestParseServerErrors: a malformed server block is an error naming the
// block and the key, not a silently empty block.
func TestParseServerErrors(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{`"server": {"source": "u", "engine": "vllm", "ttft_ms": {"count": "many"}}`, "servingprobe.server: ttft_ms:"},
		{`"server": {"source": "u", "series": {"offsets_s": [0, 1], "running": [1]}}`, "servingprobe.server: series: running: 1 values for 2 offsets"},
		{`"server": {"source": "u", "waiting_mean": 1}`, "servingprobe.server: waiting_mean: no waiting_peak before it"},
		{`"server": {"source": "u"}, "server_more": [{"source": 7}]`, "servingprobe.server_more[0]: source:"},
		{`"server": [1]`, "servingprobe.server: want an object"},
	} {
		_, err := ParseRecord([]byte(`{"completed": 1, "servingprobe": {"requests": 1, ` + tc.block + `}}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRecord(%s) error = %v, want one containing %q", tc.block, err, tc.want)
		}
	}
}

// TestTableSections: the sections are the console table's lines, every
// heading and every row, in order.
func TestTableSections(t *testing.T) {
	results, rows := fixture()
	s, err := Summarize(results, rows, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	s.Server = []servermetrics.Report{serverReport(12)}
	sections := tableSectionsAreTheTable(t, &s)
	for _, h := range []string{"Serving Benchmark Result", "servingprobe", "Server metrics", "Time to First Token"} {
		if _, ok := sections[h]; !ok {
			t.Errorf("no section %q", h)
		}
	}
}

// FuzzParseServer: a record's server block, however malformed, is read
// back or refused with an error, never a panic; what is read back writes
// a record that reads back to the same bytes.
func FuzzParseServer(f *testing.F) {
	// Seeds hold the servingprobe object's server keys alone: the fuzzer
	// mutates and minimizes small inputs faster.
	s := &Summary{TotalInputTokens: 5, TotalOutputTokens: 7, TTFT: Stats{Median: 20, P90: 60, P99: 90}}
	missing := servermetrics.Report{Source: "http://other/metrics", Missing: "no answer within 2s", PrefixHitRate: math.NaN()}
	s.Server = []servermetrics.Report{serverReport(3), missing}
	for _, strict := range []bool{false, true} {
		e := &pyfmt.Encoder{Strict: strict}
		if err := e.Object(record{{"servingprobe", s.serverFields()}}); err != nil {
			f.Fatal(err)
		}
		f.Add(e.Bytes())
	}
	f.Add([]byte(`{"servingprobe": {"server": {"source": "u", "series": {"offsets_s": [0, 1.5], "waiting": [null, 2]}, "samples": 9}}}`))
	f.Add([]byte(`{"servingprobe": {"server": {"source": "u", "ttft_ms": {"count": 1, "p50": 1, "p50_bucket": {"lower": 0, "upper": null}}}}}`))
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

// tableSectionsAreTheTable checks that s's TableSections are its console
// table's lines, in order: each section's title the text of a heading
// line, each row the "{:<40} {:<10}" line of its label and value (the
// padding trimmed: some rows, the cache report's percentages among them,
// do not pad the value). It returns the rows by section title.
func tableSectionsAreTheTable(t *testing.T, s *Summary) map[string][]TableRow {
	t.Helper()
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n")
	bySection := map[string][]TableRow{}
	i := 0
	next := func() (string, bool) {
		if i >= len(lines) {
			return "", false
		}
		i++
		return lines[i-1], true
	}
	for _, sec := range s.TableSections() {
		bySection[sec.Title] = sec.Rows
		if l, ok := next(); !ok || strings.Trim(l, "=- ") != sec.Title {
			t.Errorf("line %d: heading %q, table %q", i, sec.Title, l)
		}
		for _, r := range sec.Rows {
			want := strings.TrimRight(fmt.Sprintf("%-40s %s", r.Label, r.Value), " ")
			if l, ok := next(); !ok || strings.TrimRight(l, " ") != want {
				t.Errorf("line %d: row %q, table %q", i, want, l)
			}
		}
	}
	if i != len(lines) {
		t.Errorf("TableSections cover %d lines, the table has %d", i, len(lines))
	}
	return bySection
}
