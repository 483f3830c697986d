package simulator

import (
	"bytes"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MetricsNames is the engine whose metric names GET /metrics serves. It is
// a closed enum. One server serves one engine's names, as a real one does:
// serving both at once would count every request twice for a reader that
// sums what it knows.
type MetricsNames string

// The name sets.
const (
	// MetricsVLLM is vLLM v1's PrometheusStatLogger
	// (vllm/v1/metrics/loggers.py): "vllm:" names, labels model_name and
	// engine="0", counters with _total samples, its bucket layouts.
	MetricsVLLM MetricsNames = "vllm"
	// MetricsSGLang is sglang's TokenizerMetricsCollector and
	// SchedulerMetricsCollector (python/sglang/srt/metrics/collector.py):
	// "sglang:" names; the tokenizer's families carry model_name and
	// engine_type, the scheduler's also tp_rank, pp_rank and moe_ep_rank
	// (python/sglang/srt/managers/scheduler_metrics_mixin.py).
	MetricsSGLang MetricsNames = "sglang"
)

// blockSize is the prefix cache's block under each name set: vLLM's
// default block_size and sglang's default page_size (see prefixCache).
func (m MetricsNames) blockSize() int {
	if m == MetricsSGLang {
		return 1
	}
	return 16
}

// Bucket layouts, copied from the engines' sources so that a reader's
// bucket estimates are the ones it would make against the engine.
var (
	// vllm/v1/metrics/loggers.py: histogram_time_to_first_token.
	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	// vllm/v1/metrics/loggers.py: histogram_inter_token_latency (and
	// the time_per_output_token histogram before it).
	vllmITLBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	// vllm/v1/metrics/loggers.py: request_latency_buckets, shared by the
	// e2e, queue, prefill, decode and inference histograms.
	vllmRequestBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	// python/sglang/srt/metrics/collector.py: TokenizerMetricsCollector's
	// default bucket_time_to_first_token.
	sglangTTFTBuckets = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	// ... its default bucket_inter_token_latency.
	sglangITLBuckets = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000}
	// ... its default bucket_e2e_request_latency.
	sglangE2EBuckets = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}
	// ... SchedulerMetricsCollector's queue_time.
	sglangQueueBuckets = []float64{0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
)

// histogram is a classic histogram: counts[i] observations in bucket i
// (not cumulative), the last bucket +Inf.
type histogram struct {
	bounds []float64
	counts []uint64
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// observeN adds n observations in the bucket of v and adds sum to the
// sum: prometheus_client's observe is observeN(v, 1, v); sglang's
// inter-token latency puts n tokens of one chunk in the bucket of the
// chunk's gap over n and adds the gap once.
func (h *histogram) observeN(v float64, n uint64, sum float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // le: the first bound ≥ v
	h.counts[i] += n
	h.sum += sum
}

func (h *histogram) observe(v float64) { h.observeN(v, 1, v) }

// engineMetrics are the histograms and counters /metrics serves, fed once
// per request by observe. The gauges are read live from the Server.
type engineMetrics struct {
	names   MetricsNames
	model   string
	created float64 // Unix seconds, the _created samples' value

	mu                                 sync.Mutex
	ttft, queue, prefill, decode, e2e  *histogram
	itl                                *histogram
	promptTokens, generationTokens     uint64
	prefixQueries, prefixHits, preempt uint64
	// completed counts the admitted requests that ended, as vLLM's
	// request_success_total and sglang's num_requests_total count them:
	// the served traffic a live headroom divides by a capacity.
	completed uint64
}

func newEngineMetrics(names MetricsNames, model string, created time.Time) *engineMetrics {
	m := &engineMetrics{names: names, model: model, created: float64(created.UnixNano()) / 1e9}
	switch names {
	case MetricsSGLang:
		m.ttft = newHistogram(sglangTTFTBuckets)
		m.itl = newHistogram(sglangITLBuckets)
		m.e2e = newHistogram(sglangE2EBuckets)
		m.queue = newHistogram(sglangQueueBuckets)
	default:
		m.ttft = newHistogram(vllmTTFTBuckets)
		m.itl = newHistogram(vllmITLBuckets)
		m.e2e = newHistogram(vllmRequestBuckets)
		m.queue = newHistogram(vllmRequestBuckets)
		m.prefill = newHistogram(vllmRequestBuckets)
		m.decode = newHistogram(vllmRequestBuckets)
	}
	return m
}

// observe adds one finished request, the one place a request becomes
// metric samples. It reads the request's stats, which are summed from the
// same flush times its Truth holds, so a truth reduced on its own gives
// the same numbers (the tests do that). A request never admitted (refused,
// a fault before its slot, a client gone while waiting) adds nothing. An
// admitted one adds its queue time, its prompt tokens and its prefix-cache
// query, and, once a chunk carrying tokens was sent:
//
//   - TTFT: the first token chunk's time − Arrived (the engines' clock
//     starts when the API server takes the request: vLLM's arrival_time,
//     sglang's created_time);
//   - queue: Admitted − Arrived (vLLM's scheduled − queued, sglang's
//     forward_entry − wait_queue_entry);
//   - prefill: the first token chunk − Admitted; decode: the last token
//     chunk − the first (vLLM's RequestStateStats; sglang has neither);
//   - E2E: the last token chunk − Arrived;
//   - inter-token latency: each gap between consecutive token chunks —
//     one observation per gap under vLLM (one per engine step); under
//     sglang the chunk's n tokens are counted in the bucket of gap/n and
//     the gap is added to the sum once (observe_inter_token_latency);
//   - generation tokens: the tokens of the chunks sent.
//
// Under sglang the prefix cache adds cached_tokens (its hits); under vLLM
// prefix_cache_queries (the prompt tokens) and prefix_cache_hits.
// Preemptions stay zero: the simulator never preempts a request.
func (m *engineMetrics) observe(r *record) {
	if r.admitted < 0 {
		return
	}
	st := &r.stats
	sec := func(d int64) float64 { return time.Duration(d).Seconds() }
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queue.observe(sec(r.admitted))
	m.completed++
	m.promptTokens += uint64(r.promptTokens)
	m.prefixQueries += uint64(r.promptTokens)
	m.prefixHits += uint64(r.cachedTokens)
	m.generationTokens += uint64(st.generated)
	if st.firstOff < 0 {
		return
	}
	m.ttft.observe(sec(st.firstOff))
	m.e2e.observe(sec(st.lastOff))
	if m.prefill != nil {
		m.prefill.observe(sec(st.firstOff - r.admitted))
		m.decode.observe(sec(st.lastOff - st.firstOff))
	}
	for i, c := range st.itl {
		m.itl.counts[i] += c
	}
	m.itl.sum += st.itlSum
}

// gauges are the live values of one read of /metrics.
type gauges struct {
	running, waiting int
	kvUsage          float64
}

// family is one metric family of the exposition.
type family struct {
	name, help, typ string
	labels          [][2]string // sorted by name, as prometheus_client writes them
	value           float64     // counter or gauge
	hist            *histogram
}

// write renders the families in Prometheus text format 0.0.4 as
// prometheus_client's generate_latest does: HELP and TYPE lines, labels
// sorted by name, floats as Python's repr, counters as name_total with a
// name_created sample, histograms as cumulative _bucket lines with le,
// then _count, _sum and _created.
func write(b *bytes.Buffer, fams []family, created float64) {
	for _, f := range fams {
		b.WriteString("# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.typ + "\n")
		switch f.typ {
		case "counter":
			sample(b, f.name+"_total", f.labels, f.value)
			sample(b, f.name+"_created", f.labels, created)
		case "gauge":
			sample(b, f.name, f.labels, f.value)
		case "histogram":
			var cum uint64
			for i, c := range f.hist.counts {
				cum += c
				le := math.Inf(1)
				if i < len(f.hist.bounds) {
					le = f.hist.bounds[i]
				}
				sample(b, f.name+"_bucket", withLabel(f.labels, "le", pyFloat(le)), float64(cum))
			}
			sample(b, f.name+"_count", f.labels, float64(cum))
			sample(b, f.name+"_sum", f.labels, f.hist.sum)
			sample(b, f.name+"_created", f.labels, created)
		}
	}
}

func withLabel(ls [][2]string, name, value string) [][2]string {
	out := append(slices.Clone(ls), [2]string{name, value})
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

func sample(b *bytes.Buffer, name string, labels [][2]string, v float64) {
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l[0] + `="`)
			labelEscaper.WriteString(b, l[1])
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(pyFloat(v))
	b.WriteByte('\n')
}

// labelEscaper escapes a label value as the text format allows, and only
// so: backslash, double quote and newline (Go's %q would also write \u
// and \x escapes, which a Prometheus parser refuses).
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// pyFloat writes v as prometheus_client's floatToGoString does: Python's
// repr (1.0, 0.25, 1e-05), switched to an exponent above 1e6 as Go
// writes it, +Inf. The digits are the shortest that read back to v, so a
// reader gets the exact sum.
func pyFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	a := math.Abs(v)
	if a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(v, 'e', -1, 64)
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	if dot := strings.IndexByte(s, '.'); v > 0 && dot > 6 {
		digits := strings.TrimRight(strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0"), ".")
		return digits + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// families lists what one read serves, in the order the engine registers
// them.
func (m *engineMetrics) families(g gauges) []family {
	m.mu.Lock()
	defer m.mu.Unlock()
	clone := func(h *histogram) *histogram {
		return &histogram{bounds: h.bounds, counts: slices.Clone(h.counts), sum: h.sum}
	}
	if m.names == MetricsSGLang {
		tok := [][2]string{{"engine_type", "unified"}, {"model_name", m.model}}
		sched := [][2]string{{"engine_type", "unified"}, {"model_name", m.model}, {"moe_ep_rank", "0"}, {"pp_rank", "0"}, {"tp_rank", "0"}}
		return []family{
			{name: "sglang:num_running_reqs", help: "The number of running requests.", typ: "gauge", labels: sched, value: float64(g.running)},
			{name: "sglang:token_usage", help: "The token usage.", typ: "gauge", labels: sched, value: g.kvUsage},
			{name: "sglang:num_queue_reqs", help: "The number of requests in the waiting queue.", typ: "gauge", labels: sched, value: float64(g.waiting)},
			{name: "sglang:num_retracted_requests", help: "Total number of retracted requests.", typ: "counter", labels: sched, value: float64(m.preempt)},
			{name: "sglang:queue_time_seconds", help: "Histogram of queueing time in seconds.", typ: "histogram", labels: sched, hist: clone(m.queue)},
			{name: "sglang:num_requests", help: "Number of requests processed.", typ: "counter", labels: tok, value: float64(m.completed)},
			{name: "sglang:prompt_tokens", help: "Number of prefill tokens processed.", typ: "counter", labels: tok, value: float64(m.promptTokens)},
			{name: "sglang:generation_tokens", help: "Number of generation tokens processed.", typ: "counter", labels: tok, value: float64(m.generationTokens)},
			{name: "sglang:cached_tokens", help: "Number of cached prompt tokens.", typ: "counter", labels: tok, value: float64(m.prefixHits)},
			{name: "sglang:time_to_first_token_seconds", help: "Histogram of time to first token in seconds.", typ: "histogram", labels: tok, hist: clone(m.ttft)},
			{name: "sglang:inter_token_latency_seconds", help: "Histogram of inter-token latency in seconds.", typ: "histogram", labels: tok, hist: clone(m.itl)},
			{name: "sglang:e2e_request_latency_seconds", help: "Histogram of End-to-end request latency in seconds", typ: "histogram", labels: tok, hist: clone(m.e2e)},
		}
	}
	ls := [][2]string{{"engine", "0"}, {"model_name", m.model}}
	return []family{
		{name: "vllm:num_requests_running", help: "Number of requests in model execution batches.", typ: "gauge", labels: ls, value: float64(g.running)},
		{name: "vllm:num_requests_waiting", help: "Number of requests waiting to be processed.", typ: "gauge", labels: ls, value: float64(g.waiting)},
		{name: "vllm:kv_cache_usage_perc", help: "KV-cache usage. 1 means 100 percent usage.", typ: "gauge", labels: ls, value: g.kvUsage},
		{name: "vllm:prefix_cache_queries", help: "Prefix cache queries, in terms of number of queried tokens.", typ: "counter", labels: ls, value: float64(m.prefixQueries)},
		{name: "vllm:prefix_cache_hits", help: "Prefix cache hits, in terms of number of cached tokens.", typ: "counter", labels: ls, value: float64(m.prefixHits)},
		{name: "vllm:num_preemptions", help: "Cumulative number of preemption from the engine.", typ: "counter", labels: ls, value: float64(m.preempt)},
		{name: "vllm:request_success", help: "Count of successfully processed requests.", typ: "counter", labels: ls, value: float64(m.completed)},
		{name: "vllm:prompt_tokens", help: "Number of prefill tokens processed.", typ: "counter", labels: ls, value: float64(m.promptTokens)},
		{name: "vllm:generation_tokens", help: "Number of generation tokens processed.", typ: "counter", labels: ls, value: float64(m.generationTokens)},
		{name: "vllm:time_to_first_token_seconds", help: "Histogram of time to first token in seconds.", typ: "histogram", labels: ls, hist: clone(m.ttft)},
		{name: "vllm:inter_token_latency_seconds", help: "Histogram of inter-token latency in seconds.", typ: "histogram", labels: ls, hist: clone(m.itl)},
		{name: "vllm:e2e_request_latency_seconds", help: "Histogram of e2e request latency in seconds.", typ: "histogram", labels: ls, hist: clone(m.e2e)},
		{name: "vllm:request_queue_time_seconds", help: "Histogram of time spent in WAITING phase for request.", typ: "histogram", labels: ls, hist: clone(m.queue)},
		{name: "vllm:request_prefill_time_seconds", help: "Histogram of time spent in PREFILL phase for request.", typ: "histogram", labels: ls, hist: clone(m.prefill)},
		{name: "vllm:request_decode_time_seconds", help: "Histogram of time spent in DECODE phase for request.", typ: "histogram", labels: ls, hist: clone(m.decode)},
	}
}

// Scrape is the gauges one read of /metrics served, kept as ground truth
// for whoever sampled them.
type Scrape struct {
	At               time.Time
	Running, Waiting int
	// KVUsage is the KV-cache usage served, a fraction.
	KVUsage float64
}

// scrapeLogSize bounds the scrapes kept: a read a second for 17 minutes.
const scrapeLogSize = 1024

// liveGauges reads the running and waiting requests and the KV-cache
// usage: the blocks reserved by running requests over the cache's blocks,
// at most 1 (the simulator admits by --sim.max-running-requests, not by
// KV space, so an oversubscribed cache reads full rather than above it).
func (s *Server) liveGauges() gauges {
	bs := int64(s.cfg.MetricsNames.blockSize())
	capacity := int64(s.cfg.KVCacheTokens) / bs * bs
	used := s.kvUsed.Load()
	u := 1.0
	if capacity > 0 && used < capacity {
		u = float64(used) / float64(capacity)
	}
	return gauges{running: int(s.running.Load()), waiting: int(s.waiting.Load()), kvUsage: u}
}

// kvBlocks is the KV space, in tokens rounded up to whole blocks, that a
// request of prompt plus output tokens reserves from admission to its end.
func (s *Server) kvBlocks(tokens int) int64 {
	bs := s.cfg.MetricsNames.blockSize()
	return int64((tokens + bs - 1) / bs * bs)
}

// metricsHandler serves GET /metrics.
func (s *Server) metricsHandler(w http.ResponseWriter, _ *http.Request) {
	g := s.liveGauges()
	var b bytes.Buffer
	write(&b, s.metrics.families(g), s.metrics.created)
	s.scrapeMu.Lock()
	s.scrapes[s.scrapeNext%scrapeLogSize] = Scrape{At: time.Now(), Running: g.running, Waiting: g.waiting, KVUsage: g.kvUsage}
	s.scrapeNext++
	s.scrapeMu.Unlock()
	// prometheus_client's CONTENT_TYPE_LATEST.
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// Scrapes returns the gauges of the last reads of /metrics (at most 1024),
// oldest first.
func (s *Server) Scrapes() []Scrape {
	s.scrapeMu.Lock()
	defer s.scrapeMu.Unlock()
	n := min(s.scrapeNext, scrapeLogSize)
	out := make([]Scrape, 0, n)
	for i := s.scrapeNext - n; i < s.scrapeNext; i++ {
		out = append(out, s.scrapes[i%scrapeLogSize])
	}
	return out
}

// flushCache empties the prefix cache: vLLM's POST /reset_prefix_cache
// and sglang's POST /flush_cache.
func (s *Server) flushCache(w http.ResponseWriter, _ *http.Request) {
	s.prefix.reset()
	w.WriteHeader(http.StatusOK)
}
