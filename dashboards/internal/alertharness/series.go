package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/exporter"
)

// encoder writes one series in promtool's expanding notation, folding each
// run of equal steps into "start+stepxN", so that days of counters that grow
// by the same amount every scrape stay short.
type encoder struct {
	b           strings.Builder
	have        bool
	start, last float64
	step        float64
	n           int // steps folded after start
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func (e *encoder) add(v float64) {
	switch {
	case !e.have:
		e.have, e.start, e.last, e.n = true, v, v, 0
	case e.n == 0:
		e.step, e.n, e.last = v-e.last, 1, v
	case v-e.last == e.step:
		e.n++
		e.last = v
	default:
		e.flush()
		e.have, e.start, e.last, e.n = true, v, v, 0
	}
}

func (e *encoder) flush() {
	if !e.have {
		return
	}
	if e.b.Len() > 0 {
		e.b.WriteByte(' ')
	}
	e.b.WriteString(fmtNum(e.start))
	if e.n > 0 {
		if e.step >= 0 {
			e.b.WriteByte('+')
		}
		fmt.Fprintf(&e.b, "%sx%d", fmtNum(e.step), e.n)
	}
	e.have = false
}

func (e *encoder) String() string { e.flush(); return e.b.String() }

// histogram holds the cumulative classic buckets of one exporter histogram,
// or, native, its exponential buckets as a Prometheus that ingests only
// native histograms (3.x with scrape_native_histograms) stores them.
type histogram struct {
	name   string
	bounds []float64
	counts []float64 // cumulative per bound, then +Inf
	bucket []*encoder
	count  *encoder

	native  bool
	nb      map[int]float64 // observations per native bucket index
	sum, n  float64
	scrapes strings.Builder
}

// nativeSchema is the exporter's native resolution: the largest schema
// whose bucket growth 2^(2^-schema) stays within its bucket factor of 1.1
// (client_golang picks it the same way), far from its 160-bucket limit for
// these latencies.
const nativeSchema = 3

// nativeIndex is the native bucket of v > 0: bucket i holds
// (2^((i-1)/2^schema), 2^(i/2^schema)].
func nativeIndex(v float64) int {
	return int(math.Ceil(math.Log2(v) * (1 << nativeSchema)))
}

func newHistogram(name string, bounds []float64, native bool) *histogram {
	h := &histogram{name: name, bounds: bounds, counts: make([]float64, len(bounds)+1), native: native, nb: map[int]float64{}}
	for range h.counts {
		h.bucket = append(h.bucket, &encoder{})
	}
	h.count = &encoder{}
	return h
}

func (h *histogram) observe(v float64) {
	if h.native {
		h.nb[nativeIndex(v)]++
		h.sum += v
		h.n++
		return
	}
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
		}
	}
	h.counts[len(h.bounds)]++
}

func (h *histogram) scrape() {
	if h.native {
		// promtool's notation for a native sample: absolute counts of the
		// buckets from offset on, one contiguous span.
		if h.scrapes.Len() > 0 {
			h.scrapes.WriteByte(' ')
		}
		fmt.Fprintf(&h.scrapes, "{{schema:%d sum:%s count:%s", nativeSchema, fmtNum(h.sum), fmtNum(h.n))
		if len(h.nb) > 0 {
			lo, hi := math.MaxInt, math.MinInt
			for i := range h.nb {
				lo, hi = min(lo, i), max(hi, i)
			}
			h.scrapes.WriteString(" buckets:[")
			for i := lo; i <= hi; i++ {
				if i > lo {
					h.scrapes.WriteByte(' ')
				}
				h.scrapes.WriteString(fmtNum(h.nb[i]))
			}
			fmt.Fprintf(&h.scrapes, "] offset:%d", lo)
		}
		h.scrapes.WriteString("}}")
		return
	}
	for i, c := range h.counts {
		h.bucket[i].add(c)
	}
	h.count.add(h.counts[len(h.bounds)])
}

func (h *histogram) write(w io.Writer, labels string) {
	if h.native {
		fmt.Fprintf(w, "  - series: '%s{%s}'\n    values: '%s'\n", h.name, labels, h.scrapes.String())
		return
	}
	for i, e := range h.bucket {
		le := "+Inf"
		if i < len(h.bounds) {
			le = fmtNum(h.bounds[i])
		}
		fmt.Fprintf(w, "  - series: '%s_bucket{%s, le=\"%s\"}'\n    values: '%s'\n", h.name, labels, le, e)
	}
	fmt.Fprintf(w, "  - series: '%s_count{%s}'\n    values: '%s'\n", h.name, labels, h.count)
}

// outcomes are the exporter's outcome labels the model produces.
var outcomes = []string{"success", "timeout", "http_5xx"}

// target accumulates what the exporter would expose for one target.
type target struct {
	name             string
	ttft, itl, tpot  *histogram
	requests         map[string]float64
	reqEnc           map[string]*encoder
	success, lastTS  float64
	lastOK           float64
	successE, lastTE *encoder
	lastOKE          *encoder
	// The answer check's verdicts, the conversation's turns (one
	// histogram per turn) and the capacity gauges.
	checks   map[string]float64
	checkEnc map[string]*encoder
	turns    []*histogram
	headroom float64
	headE    *encoder
}

// checkResults are the answer checks' results (prober.CheckOutcomes).
var checkResults = []string{"pass", "fail", "error"}

func newTarget(name string, native bool, turns int) *target {
	req, tok, _ := exporter.ClassicBuckets()
	t := &target{
		name:     name,
		ttft:     newHistogram("servingprobe_time_to_first_token_seconds", req, native),
		itl:      newHistogram("servingprobe_inter_token_latency_seconds", tok, native),
		tpot:     newHistogram("servingprobe_time_per_output_token_seconds", tok, native),
		requests: map[string]float64{},
		reqEnc:   map[string]*encoder{},
		success:  1,
		successE: &encoder{}, lastTE: &encoder{}, lastOKE: &encoder{},
		checks: map[string]float64{}, checkEnc: map[string]*encoder{}, headE: &encoder{},
	}
	for _, o := range outcomes {
		t.reqEnc[o] = &encoder{}
	}
	for _, r := range checkResults {
		t.checkEnc[r] = &encoder{}
	}
	for range turns {
		t.turns = append(t.turns, newHistogram("servingprobe_turn_time_to_first_token_seconds", req, native))
	}
	return t
}

func (t *target) observe(p Probe) {
	t.requests[p.Outcome]++
	t.lastTS = p.At.Seconds()
	if p.Outcome != "success" {
		t.success = 0
		return
	}
	t.success = 1
	t.lastOK = p.At.Seconds()
	t.ttft.observe(p.TTFT)
	for _, g := range p.ITLs {
		t.itl.observe(g)
	}
	t.tpot.observe(p.TPOT)
	if p.Check != "" {
		t.checks[p.Check]++
	}
	for k, v := range p.Turns {
		t.turns[k].observe(v)
	}
}

func (t *target) scrape() {
	t.ttft.scrape()
	t.itl.scrape()
	t.tpot.scrape()
	for _, o := range outcomes {
		t.reqEnc[o].add(t.requests[o])
	}
	t.successE.add(t.success)
	t.lastTE.add(t.lastTS)
	t.lastOKE.add(t.lastOK)
	for _, r := range checkResults {
		t.checkEnc[r].add(t.checks[r])
	}
	for _, h := range t.turns {
		h.scrape()
	}
	// Rounded as a gauge's noise does not need 17 digits: shorter input.
	t.headE.add(math.Round(t.headroom*1e4) / 1e4)
}

func (t *target) write(w io.Writer) {
	short := fmt.Sprintf(`job="servingprobe", instance="sp:9090", target="%s", module="chat", model="m"`, t.name)
	labels := short + `, mode="probe"`
	t.ttft.write(w, labels)
	t.itl.write(w, labels)
	t.tpot.write(w, labels)
	for _, o := range outcomes {
		fmt.Fprintf(w, "  - series: 'servingprobe_requests_total{%s, outcome=\"%s\"}'\n    values: '%s'\n", labels, o, t.reqEnc[o])
	}
	fmt.Fprintf(w, "  - series: 'servingprobe_probe_success{%s}'\n    values: '%s'\n", short, t.successE)
	fmt.Fprintf(w, "  - series: 'servingprobe_last_probe_timestamp_seconds{%s}'\n    values: '%s'\n", short, t.lastTE)
	fmt.Fprintf(w, "  - series: 'servingprobe_last_success_timestamp_seconds{%s}'\n    values: '%s'\n", short, t.lastOKE)
	base := fmt.Sprintf(`job="servingprobe", instance="sp:9090", target="%s"`, t.name)
	for _, r := range checkResults {
		fmt.Fprintf(w, "  - series: 'servingprobe_answer_checks_total{%s, module=\"chat\", check=\"json_schema\", result=\"%s\"}'\n    values: '%s'\n", base, r, t.checkEnc[r])
	}
	for k, h := range t.turns {
		h.write(w, fmt.Sprintf(`%s, module="conv", model="m", turn="%d"`, base, k+1))
	}
	fmt.Fprintf(w, "  - series: 'servingprobe_capacity_headroom_ratio{%s}'\n    values: '%s'\n", base, t.headE)
}

// Run is one simulated series: Span of probes of one affected target (and
// Scenario.OtherTargets healthy ones), scraped every Scrape.
type Run struct {
	Seed       uint64
	Span       time.Duration
	Scrape     time.Duration
	Scenario   *Scenario
	ScenarioAt time.Duration
	// Native writes the latency histograms as native histograms only.
	Native bool
}

// cost is the work promtool does on r, in target-time: evaluation is about
// linear in the span and the number of targets.
func (r Run) cost() time.Duration {
	n := 1
	if r.Scenario != nil {
		n += r.Scenario.OtherTargets
	}
	return r.Span * time.Duration(n)
}

// writeSeries writes the input_series of r in promtool's test format.
func (r Run) writeSeries(m Model, w io.Writer) {
	n := 1
	if r.Scenario != nil {
		n += r.Scenario.OtherTargets
	}
	targets := make([]*target, n)
	servers := make([]*Server, n)
	for i := range targets {
		targets[i] = newTarget(fmt.Sprintf("t%d", i), r.Native, m.ConversationTurns)
		servers[i] = NewServer(m, r.Seed*1000+uint64(i), r.Span)
	}
	// Probes end at a fixed offset inside the probe interval, so that a
	// scrape never lands on a probe.
	offset := m.ProbeInterval / 3
	next := offset
	reload := &encoder{}
	for at := time.Duration(0); at <= r.Span; at += r.Scrape {
		for ; next <= at; next += m.ProbeInterval {
			for i, s := range servers {
				sc := r.Scenario
				if i > 0 {
					sc = nil
				}
				targets[i].observe(s.Probe(next, sc, r.ScenarioAt))
			}
		}
		for i, t := range targets {
			sc := r.Scenario
			if i > 0 {
				sc = nil
			}
			t.headroom = servers[i].Headroom(at, sc, r.ScenarioAt)
			t.scrape()
		}
		reload.add(1)
	}
	for _, t := range targets {
		t.write(w)
	}
	fmt.Fprintf(w, "  - series: 'servingprobe_config_last_reload_successful{job=\"servingprobe\", instance=\"sp:9090\"}'\n    values: '%s'\n", reload)
	// Every scrape succeeds: the exporter's own alerts read up.
	fmt.Fprintf(w, "  - series: 'up{job=\"servingprobe\", instance=\"sp:9090\"}'\n    values: '%s'\n", reload)
}
