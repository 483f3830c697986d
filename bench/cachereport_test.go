package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// cacheResults are fixed responses: two successes with the tiers' split
// (one with storage hits on backend "mooncake"), one success with a count
// but no split, and a failure whose counts must not be added.
func cacheTally3() CacheReport {
	c := cacheTally{on: true}
	c.add(&prober.Result{CachedTokens: 300, CacheDetails: &prober.CacheDetails{Device: 200, Host: 60, Storage: 40, StorageBackend: "mooncake"}}, true, 1000)
	c.add(&prober.Result{CachedTokens: 100, CacheDetails: &prober.CacheDetails{Device: 100}}, true, 500)
	c.add(&prober.Result{CachedTokens: 33}, true, 200)
	c.add(&prober.Result{CachedTokens: 999, CacheDetails: &prober.CacheDetails{Device: 999}}, false, 999)
	return c.r
}

// TestCacheReportBlock is the Cache Hit Details block byte for byte. The
// expected text follows sgl-project/sglang
// python/sglang/benchmark/serving.py, benchmark():
//
//	for o in outputs:
//	    if not o.success: continue
//	    total_prompt_tokens += o.prompt_len
//	    total_cached += o.cached_tokens
//	    if o.cached_tokens_details:
//	        has_details = True
//	        total_device += o.cached_tokens_details.get("device") or 0
//	        total_host += o.cached_tokens_details.get("host") or 0
//	        s = o.cached_tokens_details.get("storage") or 0
//	        if s: total_storage += s; storage_backend_name = ...get("storage_backend")
//	hit_rate = total_cached / total_prompt_tokens * 100 if total_prompt_tokens > 0 else 0.0
//	print("{s:{c}^{n}}".format(s="Cache Hit Details", n=50, c="-"))
//	print("{:<40} {:<10}".format("Total prompt tokens:", total_prompt_tokens))
//	print("{:<40} {:<10}".format("Total cached tokens:", total_cached))
//	if has_details and total_cached > 0:
//	    print("{:<40} {:<10}".format("  Device:", total_device))
//	    print("{:<40} {:<10}".format("  Host:", total_host))
//	    if total_storage > 0: print("{:<40} {:<10}".format(f"  Storage ({storage_backend_name}):", total_storage))
//	print("{:<40} {:.1f}%".format("Cache hit rate:", hit_rate))
//	if has_details and total_cached > 0:
//	    print("{:<40} {:.1f}%".format("  Device:", total_device / total_cached * 100))
//	    ... Host, then Storage when total_storage > 0
//
// Totals: prompt 1000+500+200 = 1700, cached 300+100+33 = 433, device
// 300, host 60, storage 40; hit rate 433/1700*100 = 25.47..., device
// 300/433*100 = 69.28..., host 13.85..., storage 9.23...
func TestCacheReportBlock(t *testing.T) {
	pad := func(label, v string) string { return label + strings.Repeat(" ", 40-len(label)) + " " + v }
	for _, tc := range []struct {
		name string
		c    CacheReport
		want []string
	}{
		{"split with storage", cacheTally3(), []string{
			"----------------Cache Hit Details-----------------",
			pad("Total prompt tokens:", "1700      "),
			pad("Total cached tokens:", "433       "),
			pad("  Device:", "300       "),
			pad("  Host:", "60        "),
			pad("  Storage (mooncake):", "40        "),
			pad("Cache hit rate:", "25.5%"),
			pad("  Device:", "69.3%"),
			pad("  Host:", "13.9%"),
			pad("  Storage (mooncake):", "9.2%"),
		}},
		{"no split", CacheReport{TotalPromptTokens: 8, TotalCachedTokens: 1}, []string{
			"----------------Cache Hit Details-----------------",
			pad("Total prompt tokens:", "8         "),
			pad("Total cached tokens:", "1         "),
			pad("Cache hit rate:", "12.5%"),
		}},
		{"nothing cached", CacheReport{HasDetails: true}, []string{
			"----------------Cache Hit Details-----------------",
			pad("Total prompt tokens:", "0         "),
			pad("Total cached tokens:", "0         "),
			pad("Cache hit rate:", "0.0%"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := &Summary{CacheCost: CacheCost{CacheReport: &tc.c}}
			tw := &tableWriter{w: bufio.NewWriter(&buf)}
			s.writeCacheReport(tw)
			tw.w.Flush()
			if diff := cmp.Diff(strings.Join(tc.want, "\n")+"\n", buf.String()); diff != "" {
				t.Errorf("block (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCacheReportRecord: the JSONL's cache_report follows the Python dict
// (serving.py, `result["cache_report"] = {...}`): round(hit_rate, 2), the
// tier totals null without details, storage and its backend null without
// storage hits, right after max_concurrent_requests; and the table and
// the record show the same totals.
func TestCacheReportRecord(t *testing.T) {
	c := cacheTally3()
	s := &Summary{Backend: "sglang", CacheCost: CacheCost{CacheReport: &c}}
	line, err := s.Record(JSONOptions{StandardOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `"max_concurrent_requests": 0, "cache_report": {"total_prompt_tokens": 1700, "total_cached_tokens": 433, "cache_hit_rate_pct": 25.47, "device_cached_tokens": 300, "host_cached_tokens": 60, "storage_cached_tokens": 40, "storage_backend": "mooncake"}}`
	if !strings.HasSuffix(strings.TrimSpace(string(line)), want) {
		t.Errorf("record ends %s\nwant %s", line[max(0, len(line)-len(want)-1):], want)
	}
	bare := CacheReport{TotalPromptTokens: 3, TotalCachedTokens: 1}
	s.CacheReport = &bare
	line, _ = s.Record(JSONOptions{StandardOnly: true})
	var got struct {
		CR map[string]any `json:"cache_report"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	wantMap := map[string]any{"total_prompt_tokens": 3.0, "total_cached_tokens": 1.0, "cache_hit_rate_pct": 33.33,
		"device_cached_tokens": nil, "host_cached_tokens": nil, "storage_cached_tokens": nil, "storage_backend": nil}
	if diff := cmp.Diff(wantMap, got.CR); diff != "" {
		t.Errorf("cache_report (-want +got):\n%s", diff)
	}
}

// TestCacheAgreement: servingprobe's block says whether the report agrees
// with the server's counter, and by how much when it does not; the JSONL
// carries the same numbers.
func TestCacheAgreement(t *testing.T) {
	c := CacheReport{TotalPromptTokens: 100, TotalCachedTokens: 40}
	for _, tc := range []struct {
		name   string
		server float64
		want   string
	}{
		{"agree", 40, "Cached tokens:                           agree"},
		{"differ", 50, "Cached tokens ours - server:             -10 (-20.00% of the server's;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Summary{CacheCost: CacheCost{CacheReport: &c}, Server: []servermetrics.Report{{Source: "http://s/metrics", PrefixHitRate: math.NaN(),
				Counters: []servermetrics.Count{{Kind: servermetrics.CachedTokens, Metric: "sglang:cached_tokens", Delta: tc.server}}}}}
			var buf bytes.Buffer
			tw := &tableWriter{w: bufio.NewWriter(&buf)}
			s.writeCostEnergy(tw)
			tw.w.Flush()
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("block:\n%s\nwant a line starting %q", buf.String(), tc.want)
			}
			rec := s.costEnergyFields()
			cv := rec[0].value.([]record)[0]
			if cv[2].value != tc.server || cv[3].value != 40 || cv[4].value != 40-tc.server {
				t.Errorf("cache_vs_server %v; want server %v, ours 40", cv, tc.server)
			}
		})
	}
}
