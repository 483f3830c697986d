package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// SweepTable is a finished sweep or SLO search as its table and answer
// show it. The engine (runner.SweepResult.Table) fills it from what
// ran; the table reads only this, so every number in it is one the
// points' summaries, records and per-point tables also show.
type SweepTable struct {
	// Mode is one of the Sweep* modes; SLO, for a search, its
	// objectives as given (the title names them).
	Mode, SLO string
	// Points are the runs in the order run.
	Points []SweepRow
	// Search is an SLO search's answer; a sweep's is the zero value.
	Search SearchAnswer
}

// SweepRow is one point of a sweep: where it sits and what it measured.
type SweepRow struct {
	Info    SweepInfo
	Summary *Summary
}

// SearchAnswer is what an SLO search found, and the search settings its
// answer names: the one answer of a search. The engine fills it as the
// search runs (runner.SweepResult embeds it), the CLI and a bench window
// store it in the JSONL after the points (Line), and every surface (the
// sweep table, the report, the API, the landing page and the capacity
// gauge) reads it; none derives a capacity from the points again. Words
// is the one rendering of it in words.
type SearchAnswer struct {
	// SLO is the objectives as given; By what the search varied
	// (ByRequestRate or ByMaxConcurrency).
	SLO string `json:"slo"`
	By  string `json:"by"`
	// Capacity is the highest value that met every objective (0: none
	// did), Bound the lowest that failed (0: none did, the search
	// stopped at its maximum or its point limit), Broke the objectives
	// that failed at Bound, and GridPoints how many points a fixed grid
	// at the same precision over the values tried would run.
	Capacity float64   `json:"capacity"`
	Bound    float64   `json:"bound"`
	Broke    []Verdict `json:"broke,omitempty"`
	// BrokeGrowing says the point at Bound failed its steady state: its
	// latency kept growing through it (SweepInfo.Growing).
	BrokeGrowing bool `json:"broke_growing,omitempty"`
	GridPoints   int  `json:"grid_points"`
	// Exhausted says the search stopped at MaxPoints before reaching its
	// precision.
	Exhausted bool `json:"exhausted,omitempty"`
	// Interrupted says the search ended before its answer; Capacity and
	// Bound are then only the highest passing and the lowest failing
	// value its points measured. OverBudget says its Budget ran out.
	Interrupted bool `json:"interrupted,omitempty"`
	OverBudget  bool `json:"over_budget,omitempty"`
	// OverMemory says a point outgrew the run's memory budget (a bench
	// window's), which ended the search as the budget would.
	OverMemory bool `json:"over_memory,omitempty"`
	// Saturation is the completion capacity the concurrency ramp
	// measured (req/s; 0: no ramp ran), reached with PeakConcurrency
	// requests in flight; RampStop says why the ramp stopped climbing.
	Saturation      float64 `json:"completion_capacity,omitempty"`
	PeakConcurrency int     `json:"peak_concurrency,omitempty"`
	RampStop        string  `json:"ramp_stop,omitempty"`
	// BoundedBy names the limit of ours that capped the answer (one of
	// the Bounded* values) and BoundLimit its value (req/s, a
	// concurrency, seconds for the budget, prompts for the prompt count,
	// points for the point limit, bytes for the memory budget): the search stopped there
	// before any point the server failed, so the server's capacity is at
	// least Capacity and not known above it. "" when a point that failed
	// the SLO bounds the answer. Every surface says "at least" for it, and
	// the capacity gauges export it as a lower bound only.
	BoundedBy  string  `json:"bounded_by,omitempty"`
	BoundLimit float64 `json:"bound_limit,omitempty"`
	// SteadyErrors, when set, is a share of failed requests that did not
	// fall with the load: the one-at-a-time anchor failed about as often
	// as a search point that failed only its errors objective. Walking
	// the rate down would then only find a point whose few requests
	// happened to avoid the failures, so the search judged the errors
	// objective against twice that share (Allowed) and answers what the
	// latency objectives allow.
	SteadyErrors *SteadyErrors `json:"steady_errors,omitempty"`
	// Confirmed says the answer passed twice; Disagreements counts the
	// answers whose second run failed, and Unstable says there were too
	// many for an answer.
	Confirmed     bool `json:"confirmed,omitempty"`
	Disagreements int  `json:"disagreements,omitempty"`
	Unstable      bool `json:"unstable,omitempty"`
	// TooFewBelow, when set, is the rate (req/s) below which a point
	// could not complete MinPointRequests within PointTime.
	TooFewBelow float64 `json:"too_few_below,omitempty"`
	// PointCount and RequestCount are the points the search ran, anchors
	// included, and the requests they sent; NotIdlePoints the 1-based
	// points that started on a server not back at its idle state.
	PointCount    int   `json:"points"`
	RequestCount  int   `json:"requests"`
	NotIdlePoints []int `json:"not_idle_points,omitempty"`

	// The search's settings, as the answer names them (durations are
	// written as Go durations, "30s", so that they read back exactly).
	Precision        float64       `json:"precision"`
	IdleTimeout      time.Duration `json:"-"`
	Budget           time.Duration `json:"-"`
	PointTime        time.Duration `json:"-"`
	MaxPoints        int           `json:"max_points"`
	MinPointRequests int           `json:"min_point_requests"`
}

// The limits of ours that can bound a search's answer (SearchAnswer.BoundedBy).
const (
	// BoundedRequestRate: the run's own request rate (--request-rate,
	// bench.max_request_rate in a bench window) paced the concurrency
	// ramp, or was the highest rate searched, and the SLO held there.
	BoundedRequestRate = "max_request_rate"
	// BoundedConcurrency: the run's own max concurrency (or the ramp's
	// cap, MaxRampConcurrency) stopped the ramp while the throughput
	// still rose, or was the highest concurrency searched.
	BoundedConcurrency = "max_concurrency"
	// BoundedSLOMax: the SLO held up to the search's maximum (slo_max).
	BoundedSLOMax = "slo_max"
	// BoundedBudget: the search's time budget ran out first.
	BoundedBudget = "slo_budget"
	// BoundedPrompts: the run's prompt count (--num-prompts; a bench
	// window's num_prompts, within bench.max_prompts) stopped the
	// concurrency ramp while the throughput still rose: a step at the
	// next concurrency would not have filled its slots twice.
	BoundedPrompts = "num_prompts"
	// BoundedMemory: a point outgrew the memory a bench window may hold.
	BoundedMemory = "memory_budget"
	// BoundedMaxPoints: the SLO still held when the search ran its most
	// points (slo_max_points).
	BoundedMaxPoints = "slo_max_points"
)

// SteadyErrors is the share of requests that failed whatever the load
// (SearchAnswer.SteadyErrors).
type SteadyErrors struct {
	// Percent is the share of requests, in percent, that failed one at a
	// time and at the first search point that failed only on errors,
	// taken together over their Requests (cancelled ones left out).
	Percent  float64 `json:"percent"`
	Requests int     `json:"requests"`
	// Outcomes counts those failures by outcome (http_5xx, ...).
	Outcomes map[string]int `json:"outcomes"`
	// Allowed is the error share (percent) the search then allowed at a
	// point: twice Percent, or the objective's own if larger, so that
	// errors rising with the load still fail a point.
	Allowed float64 `json:"allowed_percent"`
}

// outcomes lists the failures as "http_5xx: 12, timeout: 1", most first.
func (e *SteadyErrors) outcomes() string {
	type kv struct {
		k string
		n int
	}
	var l []kv
	for k, n := range e.Outcomes {
		l = append(l, kv{k, n})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || (l[i].n == l[j].n && l[i].k < l[j].k) })
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprintf("%s: %d", x.k, x.n)
	}
	return strings.Join(parts, ", ")
}

// LowerBound says whether the capacity is only a lower bound: a limit
// of ours, not the server, bounded it (BoundedBy names which). It is the
// one rule: the words' "at least", the bench gauges'
// servingprobe_bench_last_slo_capacity_lower_bound_* and the capacity
// check's servingprobe_capacity_lower_bound all read it. The search
// names a limit wherever its answer has no failing end that the server
// set: the SLO held up to slo_max, the request rate or concurrency limit
// or the point limit, or the time budget, the prompt count or the memory
// budget stopped it first.
func (a *SearchAnswer) LowerBound() bool { return a.BoundedBy != "" }

// boundWords names the limit that bounded the answer, with where it is set.
func (a *SearchAnswer) boundWords() string {
	switch a.BoundedBy {
	case BoundedRequestRate:
		return fmt.Sprintf("the request rate limit, %s (--request-rate; bench.max_request_rate in a bench window)", FormatValue(ByRequestRate, a.BoundLimit))
	case BoundedConcurrency:
		return fmt.Sprintf("the concurrency limit, %d in flight (--max-concurrency; bench.max_concurrency in a bench window)", int(a.BoundLimit))
	case BoundedSLOMax:
		return fmt.Sprintf("the search's maximum, %s (--slo-max, slo_max in a bench window)", FormatValue(a.By, a.BoundLimit))
	case BoundedBudget:
		return fmt.Sprintf("the search's budget, %s (--slo-budget, slo_budget in a bench window)", a.Budget)
	case BoundedPrompts:
		return fmt.Sprintf("the prompt count, %d (--num-prompts; num_prompts, within bench.max_prompts, in a bench window): the concurrency ramp stopped where a step would not fill its slots twice", int(a.BoundLimit))
	case BoundedMemory:
		return fmt.Sprintf("the bench window's memory budget, %.0f MiB", a.BoundLimit/(1<<20))
	case BoundedMaxPoints:
		return fmt.Sprintf("the most points a search runs, %d (--slo-max-points, slo_max_points in a bench window)", int(a.BoundLimit))
	}
	return a.BoundedBy
}

// searchAnswerJSON is SearchAnswer with its durations as strings.
type searchAnswerJSON struct {
	IdleTimeout string `json:"idle_timeout"`
	Budget      string `json:"budget"`
	PointTime   string `json:"point_time"`
}

// MarshalJSON writes the answer with its durations as Go durations.
func (a SearchAnswer) MarshalJSON() ([]byte, error) {
	type plain SearchAnswer
	return json.Marshal(struct {
		plain
		searchAnswerJSON
	}{plain(a), searchAnswerJSON{a.IdleTimeout.String(), a.Budget.String(), a.PointTime.String()}})
}

// UnmarshalJSON reads MarshalJSON's form.
func (a *SearchAnswer) UnmarshalJSON(b []byte) error {
	type plain SearchAnswer
	var w struct {
		*plain
		searchAnswerJSON
	}
	w.plain = (*plain)(a)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	for _, d := range []struct {
		key string
		s   string
		to  *time.Duration
	}{{"idle_timeout", w.searchAnswerJSON.IdleTimeout, &a.IdleTimeout}, {"budget", w.searchAnswerJSON.Budget, &a.Budget}, {"point_time", w.searchAnswerJSON.PointTime, &a.PointTime}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return fmt.Errorf("%s: %w", d.key, err)
		}
		*d.to = v
	}
	return nil
}

// FormatValue prints a point's value in its unit (req/s or a concurrency).
func FormatValue(by string, v float64) string {
	if by == ByMaxConcurrency {
		return fmt.Sprintf("%d", int(v))
	}
	return fmt.Sprintf("%.4g req/s", v)
}

// Write prints the sweep: one row per point, in the order run, then an
// SLO search's answer. Every number is read from the points' summaries,
// the same ones the per-point tables and records show.
func (r *SweepTable) Write(w io.Writer) error {
	if len(r.Points) == 0 {
		return nil
	}
	var b strings.Builder
	by := r.Points[0].Info.By
	head := "req/s"
	if by == ByMaxConcurrency {
		head = "concurrency"
	}
	title := map[string]string{
		SweepRates: "Sweep: request rates", SweepConcurrency: "Sweep: max concurrency",
		SweepAuto: "Sweep: auto", SweepSLO: "SLO search: " + r.SLO,
	}[r.Mode]
	fmt.Fprintf(&b, "%s\n", Center(" "+title+" ", '=', 110))
	infos := make([]*SweepInfo, len(r.Points))
	for i := range r.Points {
		infos[i] = &r.Points[i].Info
	}
	cols := LatencyColumns(r.Mode, infos)
	head1, head2 := fmt.Sprintf("%5s %12s %10s %11s", "point", head, "achieved", "output"), fmt.Sprintf("%5s %12s %10s %11s", "", "", "req/s", "tok/s")
	for _, c := range cols {
		head1 += fmt.Sprintf(" %*s", c.width(), c.Name())
		head2 += fmt.Sprintf(" %*s", c.width(), "ms")
	}
	fmt.Fprintf(&b, "%s %9s  %s\n%s %9s\n", head1, "goodput", "result", head2, "req/s")
	for _, p := range r.Points {
		s := p.Summary
		value := FormatValue(by, p.Info.Value)
		if by == ByRequestRate {
			value = fmt.Sprintf("%.3g", p.Info.Value)
		}
		switch {
		case p.Info.Role == "ramp":
			value = fmt.Sprintf("ramp c=%d", p.Info.Concurrency)
		case p.Info.Role != "":
			value = p.Info.Role
		}
		good := "-"
		if len(s.Goodput) > 0 {
			good = fmt.Sprintf("%.2f", s.RequestGoodput)
		}
		fmt.Fprintf(&b, "%5d %12s %10.2f %11.1f", p.Info.Index, value, s.RequestThroughput, s.OutputThroughput)
		for _, c := range cols {
			b.WriteString(" " + c.cell(s))
		}
		fmt.Fprintf(&b, " %9s  %s\n", good, p.Info.Verdict(s))
	}
	if r.Mode == SweepSLO {
		b.WriteString(r.Search.Words())
	}
	b.WriteString(strings.Repeat("=", 110) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// LatencyColumn is one latency column of a sweep's table, the
// console's and the report's alike: a metric's percentile, in ms.
type LatencyColumn struct {
	Metric string
	P      float64
}

// Name is the column's head: "TTFT p90".
func (c LatencyColumn) Name() string {
	m := map[string]string{MetricTTFT: "TTFT", MetricITL: "ITL", MetricTPOT: "TPOT", MetricE2EL: "E2E"}[c.Metric]
	return fmt.Sprintf("%s p%s", m, percentileWord(c.P))
}

// Value is the column's value for a point: the summary's own percentile,
// the one an objective on it is judged by (SLO.Check); false where the
// summary does not hold that percentile.
func (c LatencyColumn) Value(s *Summary) (float64, bool) {
	switch {
	case c.Metric == MetricTTFT && c.P == 50:
		return s.TTFT.Median, true
	case c.Metric == MetricTTFT && c.P == 99:
		return s.TTFT.P99, true
	case c.Metric == MetricITL && c.P == 50:
		return s.ITL.Median, true
	case c.Metric == MetricITL && c.P == 99:
		return s.ITL.P99, true
	case c.Metric == MetricE2EL && c.P == 90:
		return s.E2ELatency.P90, true
	}
	v, ok := s.percentile(c.Metric, c.P)
	return v, ok && !math.IsNaN(v)
}

// width is the column's width in the console table: the head's, and at
// least the table's layout of old (9 for ITL, 10 for the others).
func (c LatencyColumn) width() int {
	w := 10
	if c.Metric == MetricITL {
		w = 9
	}
	return max(w, len(c.Name()))
}

// cell is the column's console cell for a point, "-" where it has no
// value.
func (c LatencyColumn) cell(s *Summary) string {
	if v, ok := c.Value(s); ok {
		return fmt.Sprintf("%*.1f", c.width(), v)
	}
	return fmt.Sprintf("%*s", c.width(), "-")
}

// LatencyColumns are a sweep table's latency columns, given its mode and
// its points: a sweep's TTFT and ITL at p50 and p99 and E2E at p90; an
// SLO search's the median TTFT and then each latency objective's own
// percentile, so that the value an objective was judged by is the one
// the table shows (p90 for "ttft:p90<=2s", not p99). The objectives are
// read from the points' verdicts (the SLO's text need not parse back:
// "60s" prints as "1m0s").
func LatencyColumns(mode string, points []*SweepInfo) []LatencyColumn {
	def := []LatencyColumn{{MetricTTFT, 50}, {MetricTTFT, 99}, {MetricITL, 50}, {MetricITL, 99}, {MetricE2EL, 90}}
	if mode != SweepSLO {
		return def
	}
	var slo []Verdict
	for _, p := range points {
		if p != nil && len(p.SLO) > 0 {
			slo = p.SLO
			break
		}
	}
	cols := []LatencyColumn{{MetricTTFT, 50}}
	for _, o := range slo {
		c := LatencyColumn{o.Metric, o.Percentile}
		latency := o.Metric == MetricTTFT || o.Metric == MetricITL || o.Metric == MetricTPOT || o.Metric == MetricE2EL
		if latency && !slices.Contains(cols, c) && len(cols) < 6 {
			cols = append(cols, c)
		}
	}
	if len(cols) == 1 {
		return def // shares alone (errors): no latency the SLO names
	}
	return cols
}

// Words states what an SLO search found, how sure it is, and what it
// cost next to a fixed grid: the answer's one rendering, which the sweep
// table, the report, the API's answer and the landing page print. It
// reads only the answer, so that a surface holding the answer (read back
// from the JSONL, say) prints the same words as the console did.
func (a *SearchAnswer) Words() string {
	var b strings.Builder
	by := a.By
	what := "request rate"
	if by == ByMaxConcurrency {
		what = "concurrency"
	}
	if a.Saturation > 0 {
		fmt.Fprintf(&b, "Completion capacity: %s, measured by the concurrency ramp at %d in flight (it stopped: %s); a rate at or above it queues without end.\n",
			FormatValue(ByRequestRate, a.Saturation), a.PeakConcurrency, a.RampStop)
	}
	if len(a.NotIdlePoints) > 0 {
		busy := make([]string, len(a.NotIdlePoints))
		for i, p := range a.NotIdlePoints {
			busy[i] = fmt.Sprint(p)
		}
		fmt.Fprintf(&b, "The server was not back at its idle state within %s before point %s: a point there may have started on an earlier one's queue.\n",
			a.IdleTimeout, strings.Join(busy, ", "))
	}
	if e := a.SteadyErrors; e != nil {
		fmt.Fprintf(&b, "%.1f%% of requests fail at every rate tried (%s), independent of load: one at a time as often as under load. The errors objective cannot hold at any rate; the search allowed up to %.1f%% at a point and judged the latency objectives.\n",
			e.Percent, e.outcomes(), e.Allowed)
	}
	if a.Interrupted {
		// Only what was measured: no answer, no grid to compare with.
		if a.OverBudget {
			fmt.Fprintf(&b, "The search's budget (--slo-budget, slo_budget in a bench window: %s) ran out after %d points, before its answer.\n", a.Budget, a.PointCount)
		} else if a.OverMemory {
			fmt.Fprintf(&b, "A point outgrew the bench window's memory budget after %d points, before the search's answer.\n", a.PointCount)
		} else {
			fmt.Fprintf(&b, "The search was interrupted after %d points, before its answer.\n", a.PointCount)
		}
		switch {
		case a.Capacity > 0:
			fmt.Fprintf(&b, "The SLO held at %s (the highest %s measured to hold)", FormatValue(by, a.Capacity), what)
		default:
			fmt.Fprintf(&b, "No point measured held the SLO")
		}
		if a.Bound > 0 {
			fmt.Fprintf(&b, "; it failed at %s.\n", FormatValue(by, a.Bound))
		} else {
			fmt.Fprintf(&b, "; no point measured failed it.\n")
		}
		if a.LowerBound() {
			fmt.Fprintf(&b, "Bounded by %s: the capacity is at least %s, not a measure of the server's own.\n", a.boundWords(), FormatValue(by, a.Capacity))
		}
		return b.String()
	}
	switch {
	case a.Unstable:
		fmt.Fprintf(&b, "No stable answer: %d times a %s that held failed when run again, so the server's verdicts vary more than the precision (%.0f%%); no capacity is given. Search a quieter server, or widen --slo-precision (slo_precision in a bench window).\n",
			a.Disagreements, what, 100*a.Precision)
	case a.Capacity == 0:
		fmt.Fprintf(&b, "No %s tried meets the SLO (the lowest, %s, did not).\n", what, FormatValue(by, a.Bound))
		if a.TooFewBelow > 0 {
			fmt.Fprintf(&b, "Lower rates were not tried: below %s a point completes fewer than %d requests within --slo-point-time (%s), too few to decide.\n",
				FormatValue(by, a.TooFewBelow), a.MinPointRequests, a.PointTime)
		}
	case a.LowerBound():
		fmt.Fprintf(&b, "%s meeting the SLO: at least %s, bounded by %s, not by the server: no point failed the SLO below that limit, so the server's own capacity is not known above it.\n",
			capitalize(what), FormatValue(by, a.Capacity), a.boundWords())
	case a.Bound == 0:
		fmt.Fprintf(&b, "The SLO holds at every %s tried, up to %s: the limit is higher (raise --slo-max, slo_max in a bench window).\n", what, FormatValue(by, a.Capacity))
	default:
		held, meeting := "held twice", "the SLO"
		if a.SteadyErrors != nil {
			meeting = "the latency objectives"
		}
		if !a.Confirmed {
			held = "held once, not confirmed"
		}
		breaks := "it breaks by " + FormatValue(by, a.Bound)
		if a.Bound == a.Saturation {
			breaks = "below the completion capacity, " + FormatValue(by, a.Bound)
		}
		fmt.Fprintf(&b, "Highest %s meeting %s: %s (%s; %s; the limit is within %.0f%% of the answer).\n",
			what, meeting, FormatValue(by, a.Capacity), held, breaks, 100*(a.Bound-a.Capacity)/a.Capacity)
	}
	if len(a.Broke) > 0 || a.BrokeGrowing {
		var parts []string
		for _, v := range a.Broke {
			parts = append(parts, BrokeValue(v))
		}
		if a.BrokeGrowing {
			parts = append(parts, "the steady state (the wait to the first token kept growing through the point: a queue building up)")
		}
		fmt.Fprintf(&b, "Broke first: %s.\n", strings.Join(parts, ", "))
	}
	if a.Exhausted {
		fmt.Fprintf(&b, "Stopped after the most runs allowed (--slo-max-points, slo_max_points in a bench window: %d), before reaching the precision.\n", a.MaxPoints)
	}
	per := 0
	if a.PointCount > 0 {
		per = a.RequestCount / a.PointCount
	}
	fmt.Fprintf(&b, "%d points, %d requests; a fixed grid at the same precision over the values tried would run %d points (about %d requests).\n",
		a.PointCount, a.RequestCount, a.GridPoints, a.GridPoints*per)
	return b.String()
}

// HasCapacity says whether the answer gives a capacity to export: not
// when it found no stable answer, nor when the search was interrupted
// (cancelled, or a point failed to run), whose figures are only what its
// points measured. A search that a limit of ours ended (its budget, the
// window's memory budget) gives the highest value its points held at, as
// its words say.
func (a *SearchAnswer) HasCapacity() bool {
	return !a.Unstable && (!a.Interrupted || a.OverBudget || a.OverMemory)
}

// Knee is the value the answer marks on a sweep's curves (the capacity,
// or the highest value measured to hold), and false when it marks none.
func (a *SearchAnswer) Knee() (float64, bool) {
	return a.Capacity, !a.Unstable && a.Capacity > 0
}

// Measured is the highest value a counted point held at and the lowest
// one failed at (0: none), read as the table reads them. An interrupted
// search's Capacity and Bound are these.
func (r *SweepTable) Measured() (held, failedAt float64) {
	for _, p := range r.Points {
		counted, pass := p.Info.SearchVerdict()
		switch {
		case !counted:
		case pass:
			held = max(held, p.Info.Value)
		case failedAt == 0 || p.Info.Value < failedAt:
			failedAt = p.Info.Value
		}
	}
	return held, failedAt
}

// capitalize upper-cases the first letter of an ASCII phrase.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
