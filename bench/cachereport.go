package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// CacheReport is bench_serving's --cache-report: the prefix-cache hits the
// server stated per response, added up over the successful requests
// (sgl-project/sglang python/sglang/benchmark/serving.py, benchmark(),
// "if args.cache_report:").
//
// A request's cached count is, in bench_serving's order: on an OpenAI
// route, the sum of sglext.cached_tokens_details' device, host and storage
// (asked for with "return_cached_tokens_details": true); on /generate,
// meta_info.cached_tokens, with meta_info.cached_tokens_details as the
// split. Where neither is stated servingprobe takes the count the server
// states in its usage block (usage.prompt_tokens_details.cached_tokens,
// Anthropic's cache_read_input_tokens, the Responses API's
// input_tokens_details.cached_tokens), which bench_serving does not read
// and counts as 0: a vLLM server's hits are then reported rather than a 0.
// A request's prompt tokens are the server's count where it stated one,
// else the dataset row's, as bench_serving's prompt_len
// (_record_server_prompt_len) and as input_lens.
type CacheReport struct {
	TotalPromptTokens int `json:"total_prompt_tokens"`
	TotalCachedTokens int `json:"total_cached_tokens"`
	// HasDetails: some successful response stated the tiers' split; the
	// tier totals below are then the sums over those that did.
	HasDetails bool `json:"has_details,omitempty"`
	Device     int  `json:"device_cached_tokens,omitempty"`
	Host       int  `json:"host_cached_tokens,omitempty"`
	Storage    int  `json:"storage_cached_tokens,omitempty"`
	// StorageBackend is the storage backend the last response with storage
	// hits named, as bench_serving keeps it (a merge of shards: see
	// mergeCacheCost).
	StorageBackend string `json:"storage_backend,omitempty"`
}

// HitRatePct is bench_serving's hit_rate: cached over prompt tokens in
// percent, 0 when there were no prompt tokens.
func (c *CacheReport) HitRatePct() float64 {
	if c.TotalPromptTokens <= 0 {
		return 0
	}
	return float64(c.TotalCachedTokens) / float64(c.TotalPromptTokens) * 100
}

// cacheTally adds up the cache report as the results arrive.
type cacheTally struct {
	on bool
	r  CacheReport
}

// add counts one result; ok says whether it succeeded, promptLen is its
// prompt tokens (inputTokens).
func (c *cacheTally) add(r *prober.Result, ok bool, promptLen int) {
	if !c.on || !ok {
		return
	}
	c.r.TotalPromptTokens += promptLen
	c.r.TotalCachedTokens += r.CachedTokens
	if d := r.CacheDetails; d != nil {
		c.r.HasDetails = true
		c.r.Device += d.Device
		c.r.Host += d.Host
		if d.Storage != 0 {
			c.r.Storage += d.Storage
			c.r.StorageBackend = d.StorageBackend
		}
	}
}

// fill sets the summary's report when --cache-report was given, and the
// price the cost is computed from.
func (c *cacheTally) fill(s *Summary, costPerHour float64) {
	s.CostPerHour = costPerHour
	if c.on {
		r := c.r
		s.CacheReport = &r
	}
}

// CacheCostParams are the run's --cache-report and --cost-per-hour.
type CacheCostParams struct {
	// CacheReport collects bench_serving's Cache Hit Details block.
	CacheReport bool `json:"cache_report"`
	// CostPerHour is the price of the serving hardware per hour in USD; 0
	// means not given.
	CostPerHour float64 `json:"cost_per_hour"`
}

// CacheCost are the summary's cache report, price and energy, which the
// table and the JSONL write in the sections of their own.
type CacheCost struct {
	// CacheReport is set under --cache-report.
	CacheReport *CacheReport `json:"cache_report,omitempty"`
	// CostPerHour is --cost-per-hour; 0: not given.
	CostPerHour float64 `json:"cost_per_hour,omitempty"`
}

// storageLabel is bench_serving's label of the storage rows.
func (c *CacheReport) storageLabel() string {
	if c.StorageBackend != "" {
		return "  Storage (" + c.StorageBackend + "):"
	}
	return "  Storage:"
}

// pctRow is bench_serving's "{:<40} {:.1f}%": a row (TableSections
// carries it under its heading) whose value is not padded to 10, as the
// other rows' are.
func (t *tableWriter) pctRow(label string, v float64) {
	value := strconv.FormatFloat(v, 'f', 1, 64) + "%"
	t.w.WriteString(fmt.Sprintf("%-40s %s\n", label, value))
	if t.sections != nil && len(*t.sections) > 0 {
		last := &(*t.sections)[len(*t.sections)-1]
		last.Rows = append(last.Rows, TableRow{label, value})
	}
}

// writeCacheReport writes bench_serving's Cache Hit Details section, at
// its place: after the latency sections, before the closing line.
func (s *Summary) writeCacheReport(t *tableWriter) {
	c := s.CacheReport
	if c == nil {
		return
	}
	t.line(center("Cache Hit Details", '-', 50))
	t.int("Total prompt tokens:", c.TotalPromptTokens)
	t.int("Total cached tokens:", c.TotalCachedTokens)
	split := c.HasDetails && c.TotalCachedTokens > 0
	if split {
		t.int("  Device:", c.Device)
		t.int("  Host:", c.Host)
		if c.Storage > 0 {
			t.int(c.storageLabel(), c.Storage)
		}
	}
	t.pctRow("Cache hit rate:", c.HitRatePct())
	if split {
		total := float64(c.TotalCachedTokens)
		t.pctRow("  Device:", float64(c.Device)/total*100)
		t.pctRow("  Host:", float64(c.Host)/total*100)
		if c.Storage > 0 {
			t.pctRow(c.storageLabel(), float64(c.Storage)/total*100)
		}
	}
}

// pyRound2 is Python's round(x, 2): correctly rounded from the exact
// binary value, which strconv's formatting is too.
func pyRound2(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return v
}

// appendCacheReport adds bench_serving's "cache_report" key, last of its
// result keys.
func (s *Summary) appendCacheReport(r record) record {
	c := s.CacheReport
	if c == nil {
		return r
	}
	orNil := func(ok bool, v any) any {
		if ok {
			return v
		}
		return nil
	}
	return append(r, field{"cache_report", record{
		{"total_prompt_tokens", c.TotalPromptTokens},
		{"total_cached_tokens", c.TotalCachedTokens},
		{"cache_hit_rate_pct", pyRound2(c.HitRatePct())},
		{"device_cached_tokens", orNil(c.HasDetails, c.Device)},
		{"host_cached_tokens", orNil(c.HasDetails, c.Host)},
		{"storage_cached_tokens", orNil(c.Storage > 0, c.Storage)},
		{"storage_backend", orNil(c.StorageBackend != "", c.StorageBackend)},
	}})
}

// CacheAgreement compares the cache report's cached tokens with a
// server's own prefix-cache counter over the run: sglang's
// cached_tokens_total, else vLLM's prefix_cache_hits_total (both count
// tokens). ok is false when there is no report or the server has neither.
func (s *Summary) CacheAgreement(r *servermetrics.Report) (server float64, metric servermetrics.Kind, ok bool) {
	if s.CacheReport == nil || r.Missing != "" {
		return 0, "", false
	}
	for _, k := range []servermetrics.Kind{servermetrics.CachedTokens, servermetrics.PrefixHits} {
		if v, ok := r.Count(k); ok {
			return v, k, true
		}
	}
	return 0, "", false
}

// cacheAgreement is one server endpoint's prefix-cache counter beside the
// cache report's cached tokens.
type cacheAgreement struct {
	source string
	metric servermetrics.Kind
	server float64
	ours   int
}

// diff is ours minus the server's, the figure the table and the JSONL
// state when the two do not agree.
func (a cacheAgreement) diff() float64 { return float64(a.ours) - a.server }

// cacheAgreements are the endpoints whose counter the report can be
// compared with, in the server blocks' order: what the table's "Cache
// Report vs Server" sections and the JSONL's cache_vs_server both show.
func (s *Summary) cacheAgreements() []cacheAgreement {
	var out []cacheAgreement
	for i := range s.Server {
		r := &s.Server[i]
		if v, k, ok := s.CacheAgreement(r); ok {
			out = append(out, cacheAgreement{source: r.Source, metric: k, server: v, ours: s.CacheReport.TotalCachedTokens})
		}
	}
	return out
}

// writeCacheAgreement writes, in servingprobe's block, whether the cache
// report agrees with each server's counter, and by how much when not.
func (s *Summary) writeCacheAgreement(t *tableWriter) {
	for _, a := range s.cacheAgreements() {
		t.line(center("Cache Report vs Server", '-', 50))
		t.row("Server "+string(a.metric)+":", fmtCount(a.server)+" (ours "+strconv.Itoa(a.ours)+")")
		if a.diff() == 0 {
			t.row("Cached tokens:", "agree")
			continue
		}
		rel := "the server counted none"
		if a.server != 0 {
			rel = pyfmt.Fixed2(a.diff()/a.server*100) + "% of the server's"
		}
		t.row("Cached tokens ours - server:", fmtCount(a.diff())+" ("+rel+"; other traffic, warm-up or a response that stated no count)")
	}
}

// cacheAgreementFields are the servingprobe object's "cache_vs_server":
// one entry per server endpoint with a counter.
func (s *Summary) cacheAgreementFields() record {
	var out []record
	for _, a := range s.cacheAgreements() {
		out = append(out, record{{"source", a.source}, {"metric", string(a.metric)}, {"server", a.server},
			{"ours", a.ours}, {"ours_minus_server", a.diff()}})
	}
	if out == nil {
		return nil
	}
	return record{{"cache_vs_server", out}}
}

// parseCacheReport reads a record's "cache_report" back, ours or
// bench_serving's (the same dict, serving.py's result["cache_report"]):
// the two totals; the device and host tiers, null when no response
// stated the split (has_details false); storage, null when there was
// none; the storage backend, null when none was named. The hit rate is
// derived from the totals (HitRatePct): ParseRecord checks the record's
// against it rather than reading it. Errors name the key.
func parseCacheReport(raw json.RawMessage) (*CacheReport, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return nil, err
	}
	c := &CacheReport{}
	var prompt, cached bool
	for _, f := range fields {
		var err error
		switch f.key {
		case "total_prompt_tokens":
			c.TotalPromptTokens, err = countField(f.value)
			prompt = true
		case "total_cached_tokens":
			c.TotalCachedTokens, err = countField(f.value)
			cached = true
		case "device_cached_tokens", "host_cached_tokens", "storage_cached_tokens":
			if string(f.value) == "null" {
				break
			}
			var n int
			n, err = countField(f.value)
			switch f.key {
			case "device_cached_tokens":
				c.Device, c.HasDetails = n, true
			case "host_cached_tokens":
				c.Host, c.HasDetails = n, true
			default:
				c.Storage = n
			}
		case "storage_backend":
			var v *string
			err = json.Unmarshal(f.value, &v)
			if v != nil {
				c.StorageBackend = *v
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
	}
	switch {
	case !prompt:
		return nil, errors.New("total_prompt_tokens: missing")
	case !cached:
		return nil, errors.New("total_cached_tokens: missing")
	}
	return c, nil
}

// countField reads a count of tokens: a whole number, not null.
func countField(raw json.RawMessage) (int, error) {
	if string(raw) == "null" {
		return 0, errors.New("null, want a count")
	}
	var n int
	err := json.Unmarshal(raw, &n)
	return n, err
}
