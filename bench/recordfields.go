package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/servingprobe/servingprobe/prober"
)

// The record's figures are described here once: each row of the tables
// below is one key (or one block of keys) of the JSONL record, in the
// order bench_serving writes them, with how it is written (Record) and
// read back (ParseRecord). Adding a figure to the record is adding a row.
//
// Subtleness ahead: the order of the rows is the record's key order, which
// parsers of bench_serving's files and our goldens depend on byte for
// byte; a key that is written only sometimes (a goodput, a shard) is a row
// whose writer appends nothing then.

// row is one row of a table of keys of an object held in an H (a
// Summary, a merge's ShardLine): how its key, or block of keys, is
// appended to the object being written, and how it is read back from the
// object's keys (m; v is the whole record, for a row that needs a key of
// another section).
type row[H any] struct {
	write func(h *H, r record) record
	read  func(h *H, m map[string]json.RawMessage, v *recordView) error
	// echo, on a Summary's row of a run parameter that the summary
	// echoes, copies it from Params (Accumulator.Summary) or back into
	// Params (toParams: a merge runs its shards' parameters again).
	echo func(s *Summary, p *Params, toParams bool)
}

// recordField is a row of the record's own keys.
type recordField = row[Summary]

// recordView is a record being read: its top-level keys and its
// servingprobe object's (nil for a bench_serving record).
type recordView struct {
	top, sp map[string]json.RawMessage
}

// percentiles are the servingprobe object's percentile_metrics and
// metric_percentiles, which name the vLLM-style keys.
func (v *recordView) percentiles() (metrics []string, ps []float64, err error) {
	if raw, ok := present(v.sp["percentile_metrics"]); ok {
		if err := json.Unmarshal(raw, &metrics); err != nil {
			return nil, nil, fmt.Errorf("percentile_metrics: %w", err)
		}
	}
	if raw, ok := present(v.sp["metric_percentiles"]); ok {
		if err := json.Unmarshal(raw, &ps); err != nil {
			return nil, nil, fmt.Errorf("metric_percentiles: %w", err)
		}
	}
	return metrics, ps, nil
}

// key is a row of one key whose value is *p(s), written as it is and read
// back with encoding/json (an absent or null key leaves the zero value).
func key[H, T any](k string, p func(*H) *T) row[H] {
	return row[H]{
		write: func(h *H, r record) record { return append(r, field{k, any(*p(h))}) },
		read:  decodeInto(k, p),
	}
}

// nullable is key, written as null while the value is its zero value
// (bench_serving's None for a flag not set).
func nullable[H any, T comparable](k string, p func(*H) *T) row[H] {
	return row[H]{
		write: func(h *H, r record) record {
			var zero T
			if v := *p(h); v != zero {
				return append(r, field{k, any(v)})
			}
			return append(r, field{k, nil})
		},
		read: decodeInto(k, p),
	}
}

// decodeInto reads key k into *p(s) with encoding/json, naming the key in
// an error.
func decodeInto[H, T any](k string, p func(*H) *T) func(*H, map[string]json.RawMessage, *recordView) error {
	return func(h *H, m map[string]json.RawMessage, _ *recordView) error {
		raw, ok := m[k]
		if !ok {
			return nil
		}
		if err := json.Unmarshal(raw, p(h)); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		return nil
	}
}

// number is a row of one float64 key read leniently (jsonNumber: the
// strict record's "inf" too, anything else 0).
func number[H any](k string, p func(*H) *float64) row[H] {
	return row[H]{
		write: func(h *H, r record) record { return append(r, field{k, *p(h)}) },
		read: func(h *H, m map[string]json.RawMessage, _ *recordView) error {
			*p(h) = jsonNumber(m[k])
			return nil
		},
	}
}

// rate is number for a Rate.
func rate[H any](k string, p func(*H) *Rate) row[H] {
	return number(k, func(h *H) *float64 { return (*float64)(p(h)) })
}

// echoKey is key for a run parameter that the summary echoes from
// Params (pp).
func echoKey[T any](k string, ps func(*Summary) *T, pp func(*Params) *T) recordField {
	f := key(k, ps)
	f.echo = echoCopy(ps, pp)
	return f
}

// echoNullable is nullable for a run parameter the summary echoes.
func echoNullable[T comparable](k string, ps func(*Summary) *T, pp func(*Params) *T) recordField {
	f := nullable(k, ps)
	f.echo = echoCopy(ps, pp)
	return f
}

func echoCopy[T any](ps func(*Summary) *T, pp func(*Params) *T) func(*Summary, *Params, bool) {
	return func(s *Summary, p *Params, toParams bool) {
		if toParams {
			*pp(p) = *ps(s)
		} else {
			*ps(s) = *pp(p)
		}
	}
}

// echoes is f with its echo of a run parameter.
func (f row[H]) echoes(echo func(s *Summary, p *Params, toParams bool)) row[H] {
	f.echo = echo
	return f
}

// echoParams copies the run parameters the record echoes from p into s.
func (s *Summary) echoParams(p *Params) {
	for _, f := range recordStandard {
		if f.echo != nil {
			f.echo(s, p, false)
		}
	}
}

// params are the run parameters s echoes, as Params.
func (s *Summary) params() Params {
	var p Params
	for _, f := range recordStandard {
		if f.echo != nil {
			f.echo(s, &p, true)
		}
	}
	return p
}

// stats are the rows "<stat>_<name>_ms" of a Stats, one per stat named
// (mean, median, std, p90, p95, p99), each made by cell: number (read
// leniently, as bench_serving's own records need) or key.
func stats[H any](name string, p func(*H) *Stats, cell func(string, func(*H) *float64) row[H], which ...string) []row[H] {
	out := make([]row[H], len(which))
	for i, w := range which {
		out[i] = cell(w+"_"+name+"_ms", func(h *H) *float64 { return p(h).byKey(w) })
	}
	return out
}

// byKey is the Stats figure a record key names ("mean", "p99", ...).
func (st *Stats) byKey(name string) *float64 {
	switch name {
	case "mean":
		return &st.Mean
	case "median":
		return &st.Median
	case "std":
		return &st.Std
	case "p90":
		return &st.P90
	case "p95":
		return &st.P95
	case "p99":
		return &st.P99
	case "max":
		return &st.Max
	}
	panic("bench: no Stats figure " + name)
}

// block is a row of several keys (or none), written and read by the
// functions named.
func block[H any](write func(h *H, r record) record, read func(h *H, m map[string]json.RawMessage, v *recordView) error) row[H] {
	return row[H]{write: write, read: read}
}

var allStats = []string{"mean", "median", "std", "p90", "p95", "p99"}

// withMax are allStats and the maximum, for the figures only the
// servingprobe object carries.
var withMax = append(slices.Clone(allStats), "max")

// recordStandard are bench_serving's keys, in its order.
var recordStandard = slices.Concat(
	[]recordField{
		echoNullable("tag", func(s *Summary) *string { return &s.Tag }, func(p *Params) *string { return &p.Tag }),
		echoKey("backend", func(s *Summary) *string { return &s.Backend }, func(p *Params) *string { return &p.Backend }),
		echoKey("dataset_name", func(s *Summary) *string { return &s.DatasetName }, func(p *Params) *string { return &p.Dataset }),
		block(func(s *Summary, r record) record {
			var v any = float64(s.RequestRate)
			if s.UseTraceTimestamps {
				v = "trace"
			}
			return append(r, field{"request_rate", v})
		}, func(s *Summary, m map[string]json.RawMessage, _ *recordView) error {
			if bytes.Equal(bytes.TrimSpace(m["request_rate"]), []byte(`"trace"`)) {
				s.UseTraceTimestamps = true
			} else {
				s.RequestRate = Rate(jsonNumber(m["request_rate"]))
			}
			return nil
		}).echoes(func(s *Summary, p *Params, toParams bool) {
			if toParams {
				p.RequestRate, p.UseTraceTimestamps = float64(s.RequestRate), s.UseTraceTimestamps
			} else {
				s.RequestRate, s.UseTraceTimestamps = Rate(p.RequestRate), p.UseTraceTimestamps
			}
		}),
		echoNullable("max_concurrency", func(s *Summary) *int { return &s.MaxConcurrency }, func(p *Params) *int { return &p.MaxConcurrency }),
		echoNullable("sharegpt_output_len", func(s *Summary) *int { return &s.SharegptOutputLen }, func(p *Params) *int { return &p.SharegptOutputLen }),
		echoKey("random_input_len", func(s *Summary) *int { return &s.RandomInputLen }, func(p *Params) *int { return &p.RandomInputLen }),
		echoKey("random_output_len", func(s *Summary) *int { return &s.RandomOutputLen }, func(p *Params) *int { return &p.RandomOutputLen }),
		echoKey("random_range_ratio", func(s *Summary) *float64 { return &s.RandomRangeRatio }, func(p *Params) *float64 { return &p.RandomRangeRatio }),
		echoKey("server_info", func(s *Summary) *json.RawMessage { return &s.ServerInfo }, func(p *Params) *json.RawMessage { return &p.ServerInfo }),
		key("duration", func(s *Summary) *float64 { return &s.Duration }),
		key("completed", func(s *Summary) *int { return &s.Completed }),
		key("total_input_tokens", func(s *Summary) *int { return &s.TotalInputTokens }),
		key("total_input_text_tokens", func(s *Summary) *int { return &s.TotalInputTextTokens }),
		key("total_input_vision_tokens", func(s *Summary) *int { return &s.TotalInputVisionTokens }),
		key("total_output_tokens", func(s *Summary) *int { return &s.TotalOutputTokens }),
		key("total_output_tokens_retokenized", func(s *Summary) *int { return &s.TotalOutputTokensRetokenized }),
		key("request_throughput", func(s *Summary) *float64 { return &s.RequestThroughput }),
		key("input_throughput", func(s *Summary) *float64 { return &s.InputThroughput }),
		key("output_throughput", func(s *Summary) *float64 { return &s.OutputThroughput }),
		key("total_throughput", func(s *Summary) *float64 { return &s.TotalThroughput }),
	},
	stats("e2e_latency", func(s *Summary) *Stats { return &s.E2ELatency }, number, allStats...),
	stats("ttft", func(s *Summary) *Stats { return &s.TTFT }, number, allStats...),
	stats("tpot", func(s *Summary) *Stats { return &s.TPOT }, number, allStats...),
	stats("itl", func(s *Summary) *Stats { return &s.ITL }, number, allStats...),
	[]recordField{
		key("concurrency", func(s *Summary) *float64 { return &s.Concurrency }),
		block(func(s *Summary, r record) record {
			var v any
			if s.AcceptLength != nil {
				v = *s.AcceptLength
			}
			return append(r, field{"accept_length", v})
		}, decodeInto("accept_length", func(s *Summary) **float64 { return &s.AcceptLength })).
			echoes(echoCopy(func(s *Summary) **float64 { return &s.AcceptLength }, func(p *Params) **float64 { return &p.AcceptLength })),
		key("max_output_tokens_per_s", func(s *Summary) *float64 { return &s.MaxOutputTokensPerS }),
		key("max_concurrent_requests", func(s *Summary) *int { return &s.MaxConcurrentRequests }),
		block((*Summary).appendCacheReport, func(s *Summary, m map[string]json.RawMessage, _ *recordView) error {
			raw, ok := present(m["cache_report"])
			if !ok {
				return nil
			}
			c, err := parseCacheReport(raw)
			if err != nil {
				return fmt.Errorf("cache_report: %w", err)
			}
			s.CacheReport = c
			if err := checkDerived(s.appendCacheReport(nil)[0].value, raw, "cache_hit_rate_pct"); err != nil {
				return fmt.Errorf("cache_report%w", err)
			}
			return nil
		}),
	},
)

// recordExtras are servingprobe's keys after bench_serving's (left out
// under JSONOptions.StandardOnly): vLLM's request_goodput and
// p{P}_{metric}_ms, the servingprobe object, and a sweep point's sweep.
var recordExtras = []recordField{
	block(func(s *Summary, r record) record {
		if len(s.Goodput) > 0 {
			r = append(r, field{"request_goodput", s.RequestGoodput})
		}
		return r
	}, decodeInto("request_goodput", func(s *Summary) *float64 { return &s.RequestGoodput })),
	block(appendPercentiles, readPercentiles),
	block(func(s *Summary, r record) record {
		return append(r, field{"servingprobe", writeFields(s, recordServingprobe, nil)})
	}, func(s *Summary, _ map[string]json.RawMessage, v *recordView) error {
		if v.sp == nil {
			// A bench_serving record: every request it counts completed.
			s.Requests = s.Completed
			return nil
		}
		err := readFields(s, recordServingprobe, v.sp, v)
		if err != nil && !strings.HasPrefix(err.Error(), "servingprobe.") {
			// The blocks of other files name their key in full.
			err = fmt.Errorf("servingprobe.%w", err)
		}
		return err
	}),
	block(func(s *Summary, r record) record {
		if s.Sweep != nil {
			r = append(r, field{"sweep", s.Sweep.record()})
		}
		return r
	}, func(s *Summary, m map[string]json.RawMessage, _ *recordView) error {
		raw, ok := present(m["sweep"])
		if !ok {
			return nil
		}
		var w SweepInfo
		if err := json.Unmarshal(raw, &w); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		s.Sweep = &w
		return nil
	}),
}

// recordServingprobe are the servingprobe object's keys, in order.
var recordServingprobe = slices.Concat(
	[]recordField{
		key("requests", func(s *Summary) *int { return &s.Requests }),
		key("not_sent", func(s *Summary) *int { return &s.NotSent }),
		key("stopped", func(s *Summary) *string { return &s.Stopped }),
		key("failed", func(s *Summary) *int { return &s.Failed }),
		block(func(s *Summary, r record) record {
			return append(r, field{"outcomes", countsRecord(prober.Outcomes, s.Outcomes)})
		}, func(s *Summary, m map[string]json.RawMessage, _ *recordView) (err error) {
			s.Outcomes, err = readCounts[prober.Outcome](m, "outcomes")
			return err
		}),
		block(func(s *Summary, r record) record { return append(r, s.engineFields()...) },
			func(s *Summary, m map[string]json.RawMessage, _ *recordView) error { return s.parseEngineNotes(m) }),
		block(func(s *Summary, r record) record {
			if c := countsRecord(prober.Clocks, s.Clocks); len(c) > 0 {
				r = append(r, field{"clocks", c})
			}
			return r
		}, func(s *Summary, m map[string]json.RawMessage, _ *recordView) (err error) {
			s.Clocks, err = readCounts[prober.Clock](m, "clocks")
			return err
		}),
		rate("scheduled_request_rate", func(s *Summary) *Rate { return &s.ScheduledRequestRate }),
		rate("actual_request_rate", func(s *Summary) *Rate { return &s.ActualRequestRate }),
		block(func(s *Summary, r record) record { return append(r, s.embeddingBatchFields()...) },
			func(s *Summary, m map[string]json.RawMessage, _ *recordView) error { return s.parseEmbeddingBatch(m) }),
	},
	stats("client_queue", func(s *Summary) *Stats { return &s.ClientQueue }, number, withMax...),
	stats("e2e_latency_including_client_queue", func(s *Summary) *Stats { return &s.E2EIncludingQueue }, number, withMax...),
	// What the summary holds beyond bench_serving's keys, so that the
	// record alone gives the summary back (ParseRecord): a bench window
	// stores only its record and the API's summary is read from it.
	stats("e2e_latency", func(s *Summary) *Stats { return &s.E2ELatency }, number, "max"),
	stats("ttft", func(s *Summary) *Stats { return &s.TTFT }, number, "max"),
	stats("tpot", func(s *Summary) *Stats { return &s.TPOT }, number, "max"),
	[]recordField{
		key("itl_samples", func(s *Summary) *int { return &s.ITLSamples }),
		key("tpot_samples", func(s *Summary) *int { return &s.TPOTSamples }),
	},
	[]recordField{
		block(appendReasoning, readReasoning),
		block((*Summary).validityRecord, (*Summary).readValidity),
		block((*Summary).conversationsRecord, (*Summary).readConversations),
		block(func(s *Summary, r record) record {
			if len(s.Goodput) == 0 {
				return r
			}
			// The SLOs themselves, so that the record can be read back
			// into the same table (ParseRecord).
			g := record{}
			for _, k := range slices.Sorted(maps.Keys(s.Goodput)) {
				g = append(g, field{k, s.Goodput[k]})
			}
			return append(r, field{"good_requests", s.GoodRequests}, field{"goodput", g})
		}, func(s *Summary, m map[string]json.RawMessage, v *recordView) error {
			if err := decodeInto("good_requests", func(s *Summary) *int { return &s.GoodRequests })(s, m, v); err != nil {
				return err
			}
			var g Goodput
			if err := decodeInto("goodput", func(*Summary) *Goodput { return &g })(s, m, v); err != nil {
				return err
			}
			if len(g) > 0 {
				s.Goodput = g
			}
			return nil
		}),
		block(func(s *Summary, r record) record {
			if len(s.Percentiles) == 0 {
				return r
			}
			var metrics []string
			for _, m := range s.Percentiles {
				metrics = append(metrics, m.Metric)
			}
			var ps []float64
			for _, p := range s.Percentiles[0].Percentiles {
				ps = append(ps, p.P)
			}
			return append(r, field{"percentile_metrics", metrics}, field{"metric_percentiles", ps})
		}, nil), // read with the keys they name (readPercentiles)
		block(func(s *Summary, r record) record {
			if s.Stats == StatsSketch {
				r = append(r, field{"stats", s.Stats}, field{"stats_relative_error", SketchRelativeError})
			}
			return r
		}, decodeInto("stats", func(s *Summary) *string { return &s.Stats })),
		key("max_itl_ms", func(s *Summary) *float64 { return &s.ITL.Max }),
		key("output_throughput_retokenized", func(s *Summary) *float64 { return &s.OutputThroughputRetokenized }),
		key("total_throughput_retokenized", func(s *Summary) *float64 { return &s.TotalThroughputRetokenized }),
		block(func(s *Summary, r record) record {
			compat := s.Compat.Names()
			if compat == nil {
				compat = []string{}
			}
			return append(r, field{"compat", compat})
		}, func(s *Summary, m map[string]json.RawMessage, _ *recordView) error {
			var names []string
			if raw, ok := present(m["compat"]); ok {
				if err := json.Unmarshal(raw, &names); err != nil {
					return fmt.Errorf("compat: %w", err)
				}
			}
			if c, err := ParseCompat(joinComma(names)); err == nil {
				s.Compat = c
			}
			return nil
		}),
		block(func(s *Summary, r record) record { return append(r, s.serverFields()...) },
			func(s *Summary, m map[string]json.RawMessage, _ *recordView) error {
				return s.parseServers(m["server"], m["server_more"])
			}),
		block(func(s *Summary, r record) record { return append(r, s.costEnergyFields()...) },
			func(s *Summary, m map[string]json.RawMessage, _ *recordView) error { return s.parseCostEnergy(m) }),
		// Only a shard and a merge have these keys: a run in one process
		// keeps its record as it always was.
		block(func(s *Summary, r record) record {
			if s.Shard != nil {
				r = append(r, field{"shard", s.Shard.record()})
			}
			return r
		}, func(s *Summary, m map[string]json.RawMessage, _ *recordView) (err error) {
			if raw, ok := present(m["shard"]); ok {
				s.Shard, err = parseShard(raw)
			}
			return err
		}),
		block(func(s *Summary, r record) record {
			if s.Merged != nil {
				r = append(r, field{"merged", s.Merged.record()})
			}
			return r
		}, func(s *Summary, m map[string]json.RawMessage, _ *recordView) (err error) {
			if raw, ok := present(m["merged"]); ok {
				s.Merged, err = parseMerged(raw)
			}
			return err
		}),
		block(func(s *Summary, r record) record {
			if s.CI != nil {
				r = append(r, field{"ci", s.CI.record()})
			}
			return r
		}, func(s *Summary, m map[string]json.RawMessage, _ *recordView) (err error) {
			if raw, ok := present(m["ci"]); ok {
				s.CI, err = parseCI(raw)
			}
			return err
		}),
	},
)

// writeFields appends the rows' keys to r.
func writeFields[H any](h *H, rows []row[H], r record) record {
	for _, f := range rows {
		r = f.write(h, r)
	}
	return r
}

// readFields reads the rows' keys from m, in order.
func readFields[H any](h *H, rows []row[H], m map[string]json.RawMessage, v *recordView) error {
	for _, f := range rows {
		if f.read == nil {
			continue
		}
		if err := f.read(h, m, v); err != nil {
			return err
		}
	}
	return nil
}

// countsRecord is a count per name, in the names' order, leaving out 0.
func countsRecord[K ~string](order []K, counts map[K]int) record {
	r := record{}
	for _, k := range order {
		if n := counts[k]; n > 0 {
			r = append(r, field{string(k), n})
		}
	}
	return r
}

// readCounts reads countsRecord's object back; nil when it is empty.
func readCounts[K ~string](m map[string]json.RawMessage, k string) (map[K]int, error) {
	var c map[K]int
	if raw, ok := present(m[k]); ok {
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if len(c) == 0 {
		return nil, nil
	}
	return c, nil
}

// appendPercentiles appends vLLM's --percentile-metrics keys: mean,
// median and std of each metric, and p{P}, skipping a key the record has
// already (bench_serving's own mean_ttft_ms, say).
func appendPercentiles(s *Summary, r record) record {
	has := make(map[string]bool, len(r))
	for _, f := range r {
		has[f.key] = true
	}
	for _, m := range s.Percentiles {
		for _, f := range []field{
			{"mean_" + m.Metric + "_ms", m.Mean},
			{"median_" + m.Metric + "_ms", m.Median},
			{"std_" + m.Metric + "_ms", m.Std},
		} {
			if !has[f.key] {
				r, has[f.key] = append(r, f), true
			}
		}
		for _, p := range m.Percentiles {
			if k := "p" + percentileWord(p.P) + "_" + m.Metric + "_ms"; !has[k] {
				r, has[k] = append(r, field{k, p.Value}), true
			}
		}
	}
	return r
}

// readPercentiles reads the keys appendPercentiles wrote, for the metrics
// and percentiles the servingprobe object names.
func readPercentiles(s *Summary, m map[string]json.RawMessage, v *recordView) error {
	metrics, ps, err := v.percentiles()
	if err != nil {
		return fmt.Errorf("servingprobe.%w", err)
	}
	for _, name := range metrics {
		ms := MetricStats{Metric: name, Mean: jsonNumber(m["mean_"+name+"_ms"]), Median: jsonNumber(m["median_"+name+"_ms"]), Std: jsonNumber(m["std_"+name+"_ms"])}
		for _, p := range ps {
			ms.Percentiles = append(ms.Percentiles, PercentileValue{P: p, Value: jsonNumber(m["p"+percentileWord(p)+"_"+name+"_ms"])})
		}
		s.Percentiles = append(s.Percentiles, ms)
	}
	return nil
}

// reasoningStats are the answer phase's latencies as the servingprobe
// object holds them: mean, median and P99 (the answer ITL's percentiles
// follow, as the run's --metric-percentiles name them).
func reasoningStats(r *ReasoningSummary) []struct {
	name string
	st   *Stats
} {
	return []struct {
		name string
		st   *Stats
	}{{"ttfat", &r.TTFAT}, {"answer_tpot", &r.AnswerTPOT}, {"answer_itl", &r.AnswerITL}}
}

// appendReasoning appends the answer phase of a run in which some request
// reasoned.
func appendReasoning(s *Summary, sp record) record {
	r := s.Reasoning
	if r == nil {
		return sp
	}
	sp = append(sp,
		field{"reasoning_requests", r.Requests},
		field{"reasoning_counted_requests", r.CountedRequests},
		field{"total_reasoning_tokens", r.ReasoningTokens},
		field{"total_answer_tokens", r.AnswerTokens},
	)
	for _, m := range reasoningStats(r)[:2] {
		sp = append(sp,
			field{"mean_" + m.name + "_ms", m.st.Mean},
			field{"median_" + m.name + "_ms", m.st.Median},
			field{"p99_" + m.name + "_ms", m.st.P99},
		)
	}
	sp = append(sp, field{"mean_answer_itl_ms", r.AnswerITL.Mean}, field{"median_answer_itl_ms", r.AnswerITL.Median})
	for _, p := range r.answerITLPercentiles() {
		sp = append(sp, field{"p" + percentileWord(p.P) + "_answer_itl_ms", p.Value})
	}
	return sp
}

// readReasoning reads appendReasoning's keys back.
func readReasoning(s *Summary, spFlat map[string]json.RawMessage, v *recordView) error {
	n := jsonNumber(spFlat["reasoning_requests"])
	if n <= 0 {
		return nil
	}
	r := &ReasoningSummary{Requests: int(n), CountedRequests: int(jsonNumber(spFlat["reasoning_counted_requests"])),
		ReasoningTokens: int(jsonNumber(spFlat["total_reasoning_tokens"])), AnswerTokens: int(jsonNumber(spFlat["total_answer_tokens"]))}
	for _, m := range reasoningStats(r) {
		m.st.Mean = jsonNumber(spFlat["mean_"+m.name+"_ms"])
		m.st.Median = jsonNumber(spFlat["median_"+m.name+"_ms"])
		m.st.P99 = jsonNumber(spFlat["p99_"+m.name+"_ms"])
	}
	metrics, ps, err := v.percentiles()
	if err != nil {
		return err
	}
	for _, p := range itlPercentiles(metrics, ps) {
		r.AnswerITLPercentiles = append(r.AnswerITLPercentiles, PercentileValue{P: p, Value: jsonNumber(spFlat["p"+percentileWord(p)+"_answer_itl_ms"])})
	}
	s.Reasoning = r
	return nil
}

// searchAnswerKey is the key, in the servingprobe object, of an SLO
// search's answer line: the line the CLI and a bench window append after
// the search's last point, {"servingprobe": {"search_answer": {...}}}. The
// points are written as they end, before the answer is known, so the
// answer is a line of its own; it has no key of bench_serving's, so that
// no reader takes it for a run (ParseLine tells it apart, ParseRecord
// refuses it).
const searchAnswerKey = "search_answer"

// Line is the answer's JSONL line, with its newline.
func (a *SearchAnswer) Line() ([]byte, error) {
	line, err := json.Marshal(map[string]map[string]*SearchAnswer{"servingprobe": {searchAnswerKey: a}})
	if err != nil {
		return nil, fmt.Errorf("encode the search answer: %w", err)
	}
	return append(line, '\n'), nil
}

// readAnswerLine is the answer a line holds, nil for a run's record.
func readAnswerLine(v *recordView) (*SearchAnswer, error) {
	raw, ok := present(v.sp[searchAnswerKey])
	if !ok {
		return nil, nil
	}
	if len(v.top) != 1 {
		return nil, fmt.Errorf("servingprobe.%s: an answer line holds nothing else, this one has %d keys", searchAnswerKey, len(v.top))
	}
	a := &SearchAnswer{}
	if err := json.Unmarshal(raw, a); err != nil {
		return nil, fmt.Errorf("servingprobe.%s: %w", searchAnswerKey, err)
	}
	return a, nil
}

// AppendJSONL appends the answer's line to path, after the search's
// points, as Summary.AppendJSONL appends a run's record (a failed append
// leaves the file as it was).
func (a *SearchAnswer) AppendJSONL(path string) error {
	line, err := a.Line()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	canRead := true
	if errors.Is(err, os.ErrPermission) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		canRead = false
	}
	if err != nil {
		return err
	}
	err = appendRecord(f, canRead, func(w io.Writer) error { _, err := w.Write(line); return err })
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	return nil
}
