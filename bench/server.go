package bench

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// serverLatencyNames are the block's names of the server's histograms.
var serverLatencyNames = map[servermetrics.Kind]string{
	servermetrics.TTFT:     "TTFT",
	servermetrics.Queue:    "queue time",
	servermetrics.Prefill:  "prefill time",
	servermetrics.Decode:   "decode time",
	servermetrics.E2E:      "E2E",
	servermetrics.PerToken: "per-token time",
}

// ServerTTFTGap is our TTFT minus the server's at p50, p90 and p99, in
// ms: the time outside the engine's own clock (network, HTTP, the API
// server's queue in front of the engine). ok is false when the server has
// no TTFT for the run. A negative gap is a disagreement the table states:
// the server's value is a bucket estimate, its clock starts at another
// point, or other traffic reached it.
func (s *Summary) ServerTTFTGap(r *servermetrics.Report) (gap [3]float64, ok bool) {
	l, ok := r.Latency(servermetrics.TTFT)
	if !ok || l.Count == 0 {
		return gap, false
	}
	ours := [3]float64{s.TTFT.Median, s.TTFT.P90, s.TTFT.P99}
	for i, e := range [3]servermetrics.Estimate{l.P50, l.P90, l.P99} {
		gap[i] = ours[i] - e.Value*1000
	}
	return gap, true
}

// serverTokens compares the server's token counters with ours: the
// counts of the run's completed requests (bench_serving's totals).
func (s *Summary) serverTokens(r *servermetrics.Report) (lines []string) {
	for _, c := range []struct {
		kind servermetrics.Kind
		what string
		ours int
	}{
		{servermetrics.PromptTokens, "prompt", s.TotalInputTokens},
		{servermetrics.GenerationTokens, "generation", s.TotalOutputTokens},
	} {
		v, ok := r.Count(c.kind)
		if !ok || v == float64(c.ours) {
			continue
		}
		more := "more"
		if v < float64(c.ours) {
			more = "fewer"
			if c.kind == servermetrics.PromptTokens && r.PromptExcludesCached() {
				lines = append(lines, s.promptCacheLine(v))
				continue
			}
		}
		lines = append(lines, fmt.Sprintf("the server counted %s %s %s tokens than our completed requests (other traffic, failed requests, or another tokenization)",
			fmtCount(math.Abs(v-float64(c.ours))), more, c.what))
	}
	return lines
}

// promptCacheLine explains a server prompt count v below ours when the
// server's counter leaves out the tokens its prompt cache served
// (llama.cpp's): exactly, when the responses stated the cached tokens
// (--cache-report) and ours less them is the server's count; else it
// names the cache as a cause the counter cannot show.
func (s *Summary) promptCacheLine(v float64) string {
	diff := fmtCount(float64(s.TotalInputTokens) - v)
	if c := s.CacheReport; c != nil && c.TotalCachedTokens > 0 && float64(s.TotalInputTokens-c.TotalCachedTokens) == v {
		return fmt.Sprintf("the server counted %s fewer prompt tokens than our completed requests: the %d tokens its prompt cache served, as the responses stated; its prompt counter leaves them out",
			diff, c.TotalCachedTokens)
	}
	return fmt.Sprintf("the server counted %s fewer prompt tokens than our completed requests: its prompt counter leaves out the tokens its prompt cache served, which it does not count (other traffic, failed requests, or another tokenization may add to the difference)",
		diff)
}

func fmtCount(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

func ms(v float64) string { return pyfmt.Fixed2(v * 1000) }

// estimateText is a bucket estimate as the table prints it: the
// interpolated value, or "≤ upper" when it fell in the first bucket, where
// the interpolation says nothing (a queue time whose waits are all
// microseconds reads as half the first bucket's width), or "> lower" past
// the last finite bound.
func estimateText(e servermetrics.Estimate) string {
	switch {
	case math.IsInf(e.Upper, 1):
		return "> " + ms(e.Lower)
	case e.Lower == 0 && e.Upper > 0:
		return "≤ " + ms(e.Upper)
	}
	return ms(e.Value)
}

// ServerAboveOurs reports whether the server's estimate e (seconds) lies
// wholly above our figure ours (ms): its bucket's lower bound is above
// ours, so the server's true percentile exceeds ours whatever the
// interpolation. Within the bucket, the two cannot be told apart.
func ServerAboveOurs(ours float64, e servermetrics.Estimate) bool {
	return e.Lower*1000 > ours
}

func bucketText(e servermetrics.Estimate) string {
	if math.IsInf(e.Upper, 1) {
		return fmt.Sprintf("> %s", ms(e.Lower))
	}
	return fmt.Sprintf("(%s, %s]", ms(e.Lower), ms(e.Upper))
}

// writeServer writes the Server metrics section of servingprobe's block.
func (s *Summary) writeServer(t *tableWriter) {
	for i := range s.Server {
		r := &s.Server[i]
		t.line(center("Server metrics", '-', 50))
		t.row("Source:", r.Source)
		if r.Missing != "" {
			t.row("Not read:", r.Missing)
			continue
		}
		t.row("Engine:", r.Engine)
		for _, l := range r.Latencies {
			name := serverLatencyNames[l.Kind]
			if l.Count == 0 {
				t.row("Server "+name+":", "no observation in the run")
				continue
			}
			t.row("Server "+name+" mean (ms):", ms(l.Mean))
			t.row("Server "+name+" P50/P90/P99 (ms):", estimateText(l.P50)+" / "+estimateText(l.P90)+" / "+estimateText(l.P99))
			t.row("  from buckets (ms):", bucketText(l.P50)+" / "+bucketText(l.P90)+" / "+bucketText(l.P99))
			switch {
			case l.P99.Lower == 0 && l.P99.Upper > 0 && !math.IsInf(l.P99.Upper, 1):
				// Every percentile is in the first bucket: the layout
				// cannot resolve them (vLLM's queue time starts at 300
				// ms), and the interpolated values say only that.
				t.row("  resolution:", "all in the first bucket, (0, "+ms(l.P99.Upper)+"] ms; the mean ("+ms(l.Mean)+") is exact")
			case l.P50.Lower == 0 && l.P50.Upper > 0:
				t.row("  resolution:", "P50 in the first bucket, (0, "+ms(l.P50.Upper)+"] ms, which its buckets cannot resolve; the mean ("+ms(l.Mean)+") is exact")
			}
		}
		if len(r.Latencies) > 0 {
			t.row("Percentiles:", "bucket estimates, linear within the bucket, as histogram_quantile")
		}
		if gap, ok := s.ServerTTFTGap(r); ok {
			t.row("TTFT ours - server P50/P90/P99 (ms):", pyfmt.Fixed2(gap[0])+" / "+pyfmt.Fixed2(gap[1])+" / "+pyfmt.Fixed2(gap[2]))
			l, _ := r.Latency(servermetrics.TTFT)
			ours := [3]float64{s.TTFT.Median, s.TTFT.P90, s.TTFT.P99}
			for i, p := range []string{"P50", "P90", "P99"} {
				// Only a disagreement the buckets resolve: where ours
				// lies in the server's bucket, a negative gap is the
				// interpolation's, not the server's.
				if e := [3]servermetrics.Estimate{l.P50, l.P90, l.P99}[i]; gap[i] < 0 && ServerAboveOurs(ours[i], e) {
					t.row("TTFT disagreement:", fmt.Sprintf("the server's %s lies in %s ms, wholly above our %s ms (another clock start, or other traffic)", p, bucketText(e), pyfmt.Fixed2(ours[i])))
				}
			}
		}
		if v, ok := r.Count(servermetrics.PromptTokens); ok {
			t.row("Server prompt tokens:", fmtCount(v)+" (ours "+fmt.Sprint(s.TotalInputTokens)+")")
		}
		if v, ok := r.Count(servermetrics.GenerationTokens); ok {
			t.row("Server generation tokens:", fmtCount(v)+" (ours "+fmt.Sprint(s.TotalOutputTokens)+")")
		}
		for _, l := range s.serverTokens(r) {
			t.row("Token counts:", l)
		}
		if !math.IsNaN(r.PrefixHitRate) {
			t.row("Prefix cache hit rate:", pyfmt.Fixed2(r.PrefixHitRate*100)+"%")
		}
		if g, ok := r.Gauge(servermetrics.KVUsage); ok {
			t.row("KV cache usage peak/mean:", pyfmt.Fixed2(g.Peak*100)+"% / "+pyfmt.Fixed2(g.Mean*100)+"%")
		}
		if g, ok := r.Gauge(servermetrics.Running); ok {
			t.row("Running requests peak:", fmtCount(g.Peak))
		}
		if g, ok := r.Gauge(servermetrics.Waiting); ok {
			t.row("Waiting requests peak:", fmtCount(g.Peak))
		}
		if v, ok := r.Count(servermetrics.Preemptions); ok {
			t.row("Preemptions:", fmtCount(v))
		}
		samples := fmt.Sprint(r.SamplesRead())
		if r.SampleErrors > 0 {
			samples += fmt.Sprintf(" (%d reads failed)", r.SampleErrors)
		}
		t.row("Gauge samples:", samples)
		for _, n := range r.Notes {
			t.row("Note:", n)
		}
		if len(r.Unknown) > 0 {
			t.row("Metrics not read:", fmt.Sprintf("%d (listed in the JSONL)", len(r.Unknown)))
		}
	}
}

// serverRecord is one endpoint's block in the JSONL's servingprobe
// object: the table's numbers, durations in ms, each percentile with the
// bucket it came from.
func (s *Summary) serverRecord(r *servermetrics.Report) record {
	rec := record{{"source", r.Source}}
	if r.Missing != "" {
		return append(rec, field{"missing", r.Missing})
	}
	rec = append(rec, field{"engine", r.Engine})
	for _, l := range r.Latencies {
		lr := record{{"metric", l.Metric}, {"count", l.Count}}
		if l.Count > 0 {
			lr = append(lr, field{"mean", l.Mean * 1000})
			for _, p := range []struct {
				name string
				e    servermetrics.Estimate
			}{{"p50", l.P50}, {"p90", l.P90}, {"p99", l.P99}} {
				upper := any(p.e.Upper * 1000)
				if math.IsInf(p.e.Upper, 1) {
					upper = nil
				}
				lr = append(lr, field{p.name, p.e.Value * 1000}, field{p.name + "_bucket", record{{"lower", p.e.Lower * 1000}, {"upper", upper}}})
			}
		}
		rec = append(rec, field{string(l.Kind) + "_ms", lr})
	}
	if gap, ok := s.ServerTTFTGap(r); ok {
		rec = append(rec, field{"ttft_minus_server_ms", record{{"p50", gap[0]}, {"p90", gap[1]}, {"p99", gap[2]}}})
	}
	for _, c := range r.Counters {
		rec = append(rec, field{string(c.Kind), c.Delta})
	}
	if _, ok := r.Count(servermetrics.PromptTokens); ok {
		rec = append(rec, field{"prompt_tokens_ours", s.TotalInputTokens})
	}
	if _, ok := r.Count(servermetrics.GenerationTokens); ok {
		rec = append(rec, field{"generation_tokens_ours", s.TotalOutputTokens})
	}
	if !math.IsNaN(r.PrefixHitRate) {
		rec = append(rec, field{"prefix_cache_hit_rate", r.PrefixHitRate})
	}
	for _, g := range r.Gauges {
		rec = append(rec, field{string(g.Kind) + "_peak", g.Peak}, field{string(g.Kind) + "_mean", g.Mean})
	}
	rec = append(rec, field{"samples", r.SamplesRead()}, field{"sample_errors", r.SampleErrors})
	if ser := ServerSeries(r); len(ser) > 0 {
		rec = append(rec, field{"series", serverSeriesRecord(ser)})
	}
	if n := slices.Concat(r.Notes, s.serverTokens(r)); len(n) > 0 {
		rec = append(rec, field{"notes", n})
	}
	if len(r.Unknown) > 0 {
		rec = append(rec, field{"unknown_metrics", r.Unknown})
	}
	return rec
}

// ServerSeriesPoints bounds the gauge samples a record keeps for each
// endpoint: a run of an hour, sampled each second, would carry 3,600
// points of every gauge; 240 draw a run's shape on the report's
// 640-pixel charts (one point per 2.5 pixels).
const ServerSeriesPoints = 240

// ServerSeries is the samples of r that the record keeps and the report
// draws: all of them up to ServerSeriesPoints, else ServerSeriesPoints
// taken evenly by index, the first (the run's start) and the last (its
// end) among them, their offsets to the millisecond (the reads are a
// second apart; finer digits are the scheduler's noise), so that a report
// drawn from the record and one drawn from the run are the same. The
// block's peaks and means are over every sample, so a thinned series can
// miss a short peak the block states.
func ServerSeries(r *servermetrics.Report) []servermetrics.Sample {
	n := len(r.Samples)
	out := make([]servermetrics.Sample, min(n, ServerSeriesPoints))
	for i := range out {
		j := i
		if n > ServerSeriesPoints {
			j = i * (n - 1) / (ServerSeriesPoints - 1)
		}
		out[i] = servermetrics.Sample{Offset: r.Samples[j].Offset.Round(time.Millisecond), Values: r.Samples[j].Values}
	}
	return out
}

// serverSeriesRecord is the series as arrays: "offsets_s", then one
// array per gauge kind that any sample holds, in GaugeKinds' order, NaN
// (null in strict JSON) where a sample lacks it.
func serverSeriesRecord(ser []servermetrics.Sample) record {
	at := make([]float64, len(ser))
	for i, sm := range ser {
		at[i] = sm.Offset.Seconds()
	}
	rec := record{{"offsets_s", at}}
	for _, k := range servermetrics.GaugeKinds {
		vals, seen := make([]float64, len(ser)), false
		for i, sm := range ser {
			v, ok := sm.Values[k]
			if !ok {
				v = math.NaN()
			}
			vals[i], seen = v, seen || ok
		}
		if seen {
			rec = append(rec, field{string(k), vals})
		}
	}
	return rec
}

// serverFields are the servingprobe object's server keys: "server" for
// the first endpoint, "server_more" for any others.
func (s *Summary) serverFields() record {
	if len(s.Server) == 0 {
		return nil
	}
	out := record{{"server", s.serverRecord(&s.Server[0])}}
	if len(s.Server) > 1 {
		var more []record
		for i := range s.Server[1:] {
			more = append(more, s.serverRecord(&s.Server[1+i]))
		}
		out = append(out, field{"server_more", more})
	}
	return out
}
