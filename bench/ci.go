package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
)

// Confidence is the level of every confidence interval servingprobe
// reports.
const Confidence = 0.95

// FewSamplesWidth is the "enough samples" rule: a figure whose confidence
// interval spans more than this fraction of the figure itself (or has an
// open end, where the samples are too few to bound it at all) is marked
// "(few samples)" in the table and the report.
const FewSamplesWidth = 0.2

// Interval is a confidence interval [Lo, Hi] at Confidence. An end the
// samples are too few to bound is infinite (Lo -Inf, Hi +Inf), and the
// record writes it as null.
type Interval struct {
	Lo, Hi float64
}

// Unknown is the interval of a figure with no samples to bound it: both
// ends open.
var Unknown = Interval{math.Inf(-1), math.Inf(1)}

// Known reports whether either end is bounded.
func (iv Interval) Known() bool { return !math.IsInf(iv.Lo, -1) || !math.IsInf(iv.Hi, 1) }

// Bounded reports whether both ends are finite.
func (iv Interval) Bounded() bool { return !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) }

// FewSamples is the one "enough samples" rule: the interval of a figure
// of value v has an open end, or is wider than FewSamplesWidth of |v|.
func FewSamples(v float64, iv Interval) bool {
	if !iv.Bounded() {
		return true
	}
	return iv.Hi-iv.Lo > FewSamplesWidth*math.Abs(v)
}

// EnoughSamples is FewSamples' first half for a caller that has a count
// and no interval: whether n samples bound the p-th percentile (0 to 100)
// on both sides at Confidence (QuantileRanks), whatever the values.
// A P99 needs 368, a P90 36.
func EnoughSamples(n int, p float64) bool {
	lo, hi := QuantileRanks(n, p/100)
	return lo >= 0 && hi < n
}

// MarshalJSON writes [lo, hi], an open end as null, for the HTTP API.
func (iv Interval) MarshalJSON() ([]byte, error) {
	end := func(f float64) any {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil
		}
		return f
	}
	return json.Marshal([2]any{end(iv.Lo), end(iv.Hi)})
}

// UnmarshalJSON reads MarshalJSON's form: a null end is open.
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var a [2]*float64
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*iv = Interval{math.Inf(-1), math.Inf(1)}
	if a[0] != nil {
		iv.Lo = *a[0]
	}
	if a[1] != nil {
		iv.Hi = *a[1]
	}
	return nil
}

// record is the interval as the JSONL record holds it: {"lo": x, "hi": y},
// an open end null.
func (iv Interval) record() record {
	end := func(f float64) any {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil
		}
		return f
	}
	return record{{"lo", end(iv.Lo)}, {"hi", end(iv.Hi)}}
}

// StatsCI are the confidence intervals of a latency's Stats, in ms, and
// how many samples they are over.
type StatsCI struct {
	N                           int      `json:"n"`
	Mean, Median, P90, P95, P99 Interval `json:"-"`
}

// intervals names the percentile intervals as the record keys them.
func (c *StatsCI) intervals() []struct {
	key string
	iv  *Interval
} {
	return []struct {
		key string
		iv  *Interval
	}{{"mean", &c.Mean}, {"median", &c.Median}, {"p90", &c.P90}, {"p95", &c.P95}, {"p99", &c.P99}}
}

// MarshalJSON writes the intervals by the record's keys.
func (c StatsCI) MarshalJSON() ([]byte, error) {
	m := map[string]any{"n": c.N}
	for _, f := range c.intervals() {
		m[f.key] = *f.iv
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads MarshalJSON's form.
func (c *StatsCI) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = unknownStatsCI(0)
	if raw, ok := m["n"]; ok {
		if err := json.Unmarshal(raw, &c.N); err != nil {
			return err
		}
	}
	for _, f := range c.intervals() {
		if raw, ok := m[f.key]; ok {
			if err := json.Unmarshal(raw, f.iv); err != nil {
				return fmt.Errorf("%s: %w", f.key, err)
			}
		}
	}
	return nil
}

func unknownStatsCI(n int) StatsCI {
	return StatsCI{N: n, Mean: Unknown, Median: Unknown, P90: Unknown, P95: Unknown, P99: Unknown}
}

// Methods of a CI.
const (
	// CIOrderStatistics: every percentile's interval is between two
	// order statistics of the kept samples, at the ranks the binomial
	// distribution bounds (exact, distribution-free).
	CIOrderStatistics = "order_statistics"
	// CISketch: the same ranks read from the sketch, each end widened by
	// the sketch's relative error (SketchRelativeError).
	CISketch = "sketch"
	// CIWindows: a throughput's interval is the spread of its value over
	// ThroughputWindows equal windows of the run (batch means).
	CIWindows = "windows"
)

// CI is a run's confidence intervals at Confidence: each latency's (in
// ms) and the throughputs' (per second).
type CI struct {
	Confidence float64 `json:"confidence"`
	// Method is CIOrderStatistics or CISketch, for the percentiles. The
	// means' intervals are the normal approximation in either.
	Method string `json:"method"`

	TTFT StatsCI `json:"ttft_ms"`
	TPOT StatsCI `json:"tpot_ms"`
	ITL  StatsCI `json:"itl_ms"`
	E2E  StatsCI `json:"e2e_latency_ms"`

	// Windows is how many windows the throughputs' intervals are over
	// (CIWindows); 0 when the run was too short to split, and the
	// intervals are Unknown.
	Windows           int      `json:"windows"`
	RequestThroughput Interval `json:"request_throughput"`
	OutputThroughput  Interval `json:"output_throughput"`
	TotalThroughput   Interval `json:"total_throughput"`
}

// record is the CI as the record's "servingprobe"."ci" object holds it.
func (c *CI) record() record {
	lat := func(s StatsCI) record {
		r := record{{"n", s.N}}
		for _, f := range s.intervals() {
			r = append(r, field{f.key, f.iv.record()})
		}
		return r
	}
	return record{
		{"confidence", c.Confidence},
		{"method", c.Method},
		{"ttft_ms", lat(c.TTFT)},
		{"tpot_ms", lat(c.TPOT)},
		{"itl_ms", lat(c.ITL)},
		{"e2e_latency_ms", lat(c.E2E)},
		{"throughput_method", CIWindows},
		{"windows", c.Windows},
		{"request_throughput", c.RequestThroughput.record()},
		{"output_throughput", c.OutputThroughput.record()},
		{"total_throughput", c.TotalThroughput.record()},
	}
}

// parseCI reads the record's "ci" object back (CI.record's inverse).
func parseCI(raw json.RawMessage) (*CI, error) {
	type iv struct{ Lo, Hi *float64 }
	conv := func(v *iv) Interval {
		if v == nil {
			return Unknown
		}
		out := Interval{math.Inf(-1), math.Inf(1)}
		if v.Lo != nil {
			out.Lo = *v.Lo
		}
		if v.Hi != nil {
			out.Hi = *v.Hi
		}
		return out
	}
	type lat struct {
		N                           int
		Mean, Median, P90, P95, P99 *iv
	}
	var r struct {
		Confidence        float64 `json:"confidence"`
		Method            string  `json:"method"`
		TTFT              lat     `json:"ttft_ms"`
		TPOT              lat     `json:"tpot_ms"`
		ITL               lat     `json:"itl_ms"`
		E2E               lat     `json:"e2e_latency_ms"`
		Windows           int     `json:"windows"`
		RequestThroughput *iv     `json:"request_throughput"`
		OutputThroughput  *iv     `json:"output_throughput"`
		TotalThroughput   *iv     `json:"total_throughput"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("ci: %w", err)
	}
	if r.Confidence <= 0 || r.Confidence >= 1 {
		return nil, fmt.Errorf("ci: confidence %v is not between 0 and 1", r.Confidence)
	}
	l := func(x lat) StatsCI {
		return StatsCI{N: x.N, Mean: conv(x.Mean), Median: conv(x.Median), P90: conv(x.P90), P95: conv(x.P95), P99: conv(x.P99)}
	}
	return &CI{
		Confidence: r.Confidence, Method: r.Method,
		TTFT: l(r.TTFT), TPOT: l(r.TPOT), ITL: l(r.ITL), E2E: l(r.E2E),
		Windows:           r.Windows,
		RequestThroughput: conv(r.RequestThroughput), OutputThroughput: conv(r.OutputThroughput), TotalThroughput: conv(r.TotalThroughput),
	}, nil
}

// zQuantile is the standard normal's quantile at 1-(1-Confidence)/2.
var zQuantile = normalQuantile(1 - (1-Confidence)/2)

// normalQuantile is the standard normal distribution's quantile function,
// by bisection on math.Erfc: exact to float64 precision, and called only
// for a few constants.
func normalQuantile(p float64) float64 {
	lo, hi := -40.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if normalCDF(mid) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// QuantileRanks are the 0-based ranks [lo, hi] of the order statistics
// that bound the quantile q (0 < q < 1) of n samples with probability at
// least Confidence, whatever the distribution (continuous): the number of
// samples below the true quantile is Binomial(n, q), and the ranks are its
// equal-tailed quantiles. lo is -1 when no sample is low enough to bound
// it below, hi is n when none is high enough above (too few samples).
//
// For a count of n·q·(1-q) above 10⁶ the binomial's quantiles come from
// the normal approximation, which is then exact to a rank or less.
func QuantileRanks(n int, q float64) (lo, hi int) {
	return quantileRanks(n, q, 1-Confidence)
}

func quantileRanks(n int, q, alpha float64) (lo, hi int) {
	if n <= 0 {
		return -1, 0
	}
	// With B the count of samples below the true quantile and x(k) the
	// k-th smallest (1-based), P(x(l) <= ξ < x(u)) = P(l <= B <= u-1).
	// l is the largest with P(B <= l-1) <= alpha/2, u the smallest with
	// P(B >= u) <= alpha/2; 0-based ranks are l-1 and u-1.
	l, u := binomialTails(n, q, alpha/2)
	return l - 1, u - 1
}

// binomialTails returns, for B ~ Binomial(n, q), the largest l with
// P(B <= l-1) <= a (0 when even P(B <= -1)=0 is all there is: l >= 1
// whenever P(B=0) <= a) and the smallest u with P(B >= u) <= a (n+1 when
// P(B >= n) > a).
func binomialTails(n int, q, a float64) (l, u int) {
	nf := float64(n)
	sd := math.Sqrt(nf * q * (1 - q))
	if sd > 1000 {
		z := normalQuantile(1 - a)
		// Continuity-corrected normal tails.
		l = int(math.Floor(nf*q-z*sd+0.5)) + 1
		u = int(math.Ceil(nf*q+z*sd-0.5)) + 1
		return max(l, 0), min(u, n+1)
	}
	// The pmf over a window of ±(12 sd + 12) around the mean holds all but
	// a negligible mass (below 1e-30).
	w := int(12*sd) + 12
	from := max(int(nf*q)-w, 0)
	to := min(int(nf*q)+w, n)
	lgN, _ := math.Lgamma(nf + 1)
	lq, l1q := math.Log(q), math.Log1p(-q)
	pmf := func(k int) float64 {
		a, _ := math.Lgamma(float64(k) + 1)
		b, _ := math.Lgamma(nf - float64(k) + 1)
		return math.Exp(lgN - a - b + float64(k)*lq + float64(n-k)*l1q)
	}
	// Lower: the CDF from below.
	l = 0
	cdf := 0.0
	for k := from; k <= to; k++ {
		cdf += pmf(k)
		if cdf > a {
			break
		}
		l = k + 1 // P(B <= k) <= a, so l-1 = k is allowed
	}
	// Upper: the survival from above.
	u = n + 1
	sf := 0.0
	for k := to; k >= from; k-- {
		sf += pmf(k)
		if sf > a {
			break
		}
		u = k // P(B >= k) <= a
	}
	if to < n && u == n+1 {
		u = to + 1 // the mass above the window is negligible
	}
	if from > 0 && l == 0 {
		l = from
	}
	return l, u
}

// tQuantile975 is Student's t distribution's 0.975 quantile for 1 to 30
// degrees of freedom (index df-1), for the batch means' interval.
var tQuantile975 = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// rankedDist is a distribution whose order statistics can be read: the
// value at a 0-based rank, and how far (as a fraction of the value) it may
// be from the true order statistic.
type rankedDist interface {
	distribution
	atRank(i int) float64
	rankError() float64
}

func (s exactDist) atRank(i int) float64 { return s.at(i) }
func (s exactDist) rankError() float64   { return 0 }

// atRank is the sketch's value at 0-based rank i, within SketchRelativeError.
func (s *Sketch) atRank(i int) float64 {
	if s.n == 0 {
		return 0
	}
	if uint64(i) < s.zeros {
		return 0
	}
	seen := s.zeros
	gamma := math.Exp(s.lnGamma)
	for k, c := range s.counts {
		seen += c
		if seen > uint64(i) {
			return min(2*math.Exp(float64(s.offset+k)*s.lnGamma)/(gamma+1), s.max)
		}
	}
	return s.max
}

func (s *Sketch) rankError() float64 { return SketchRelativeError }

// statsCI is the intervals of d's Stats, in ms: each percentile between
// the order statistics at QuantileRanks (widened by the sketch's error),
// the mean by the normal approximation (mean ± z·sd/√n), which for
// latencies' skewed distributions is itself an approximation that holds
// as n grows.
func statsCI(d distribution) StatsCI {
	n := d.Count()
	if n == 0 {
		return unknownStatsCI(0)
	}
	st := d.Stats()
	c := unknownStatsCI(n)
	if n >= 2 {
		// Stats' std is NumPy's, over n; the interval wants the sample
		// standard deviation, over n-1.
		sd := st.Std * math.Sqrt(float64(n)/float64(n-1))
		half := zQuantile * sd / math.Sqrt(float64(n))
		if n <= len(tQuantile975) {
			half = tQuantile975[n-2] * sd / math.Sqrt(float64(n))
		}
		// A latency is never negative.
		c.Mean = Interval{max(st.Mean-half, 0), st.Mean + half}
	}
	rd, ok := d.(rankedDist)
	if !ok {
		return c // the percentiles' intervals need the order statistics
	}
	e := rd.rankError()
	pct := func(q float64) Interval {
		lo, hi := QuantileRanks(n, q)
		iv := Interval{math.Inf(-1), math.Inf(1)}
		if lo >= 0 {
			iv.Lo = rd.atRank(lo) * 1000 / (1 + e)
		}
		if hi < n {
			iv.Hi = rd.atRank(hi) * 1000 / (1 - e)
		}
		return iv
	}
	c.Median, c.P90, c.P95, c.P99 = pct(0.5), pct(0.9), pct(0.95), pct(0.99)
	return c
}

// ThroughputWindows is how many equal windows a run is split into for
// its throughputs' intervals.
const ThroughputWindows = 10

// throughputSlot is the resolution of the completions' tally; it doubles
// when the tally would pass maxThroughputSlots, so that its memory stays
// bounded whatever the run's length.
const (
	throughputSlot     = 0.01 // seconds
	maxThroughputSlots = 1 << 16
)

// throughputTally counts the successes' completions by the time they
// ended, per slot, for the throughputs' intervals.
type throughputTally struct {
	width float64 // slot width in seconds
	base  int     // slot index of slots[0]
	slots []throughputSlotCount
}

type throughputSlotCount struct {
	requests, inTokens, outTokens int64
}

// add counts a success that ended at t seconds from the accumulator's
// origin.
func (t *throughputTally) add(end float64, in, out int) {
	if t.width == 0 {
		t.width = throughputSlot
	}
	i := int(math.Floor(end / t.width))
	t.slots = grow(t.slots, &t.base, i)
	s := &t.slots[i-t.base]
	s.requests++
	s.inTokens += int64(in)
	s.outTokens += int64(out)
	if len(t.slots) > maxThroughputSlots {
		t.coarsen()
	}
}

// coarsen halves the resolution: slot i goes to floor(i/2).
func (t *throughputTally) coarsen() {
	floorDiv := func(i int) int { return int(math.Floor(float64(i) / 2)) }
	nb := floorDiv(t.base)
	out := make([]throughputSlotCount, floorDiv(t.base+len(t.slots)-1)-nb+1)
	for k, s := range t.slots {
		o := &out[floorDiv(t.base+k)-nb]
		o.requests += s.requests
		o.inTokens += s.inTokens
		o.outTokens += s.outTokens
	}
	t.base, t.slots, t.width = nb, out, t.width*2
}

// intervals are the request, output and total throughputs' intervals for
// a run of dur seconds that started at start seconds from the origin, and
// the windows they are over: the run is split into ThroughputWindows equal
// windows, each window's throughput taken (a completion counted in the
// window its slot starts in), and the interval is the reported
// throughput ± t·s/√k with s the windows' standard deviation (batch
// means). It treats the windows as independent draws of a steady rate: a
// run's ramp-up and drain make them differ, which widens the interval, as
// it should for a run too short to have a steady state. A run shorter
// than 10 slots a window gets no interval (windows 0).
func (t *throughputTally) intervals(start, dur float64, req, out, total float64) (k int, r, o, tot Interval) {
	k = ThroughputWindows
	if t.width == 0 || dur < float64(k)*10*t.width {
		return 0, Unknown, Unknown, Unknown
	}
	wlen := dur / float64(k)
	var reqs, outs, tots [ThroughputWindows]float64
	for i, s := range t.slots {
		ts := float64(t.base+i)*t.width - start
		w := min(max(int(math.Floor(ts/wlen)), 0), k-1)
		reqs[w] += float64(s.requests)
		outs[w] += float64(s.outTokens)
		tots[w] += float64(s.inTokens + s.outTokens)
	}
	iv := func(v float64, counts []float64) Interval {
		var m float64
		for _, c := range counts {
			m += c / wlen
		}
		m /= float64(len(counts))
		var ss float64
		for _, c := range counts {
			d := c/wlen - m
			ss += d * d
		}
		sd := math.Sqrt(ss / float64(len(counts)-1))
		h := tQuantile975[len(counts)-2] * sd / math.Sqrt(float64(len(counts)))
		return Interval{max(v-h, 0), v + h} // a throughput is never negative
	}
	return k, iv(req, reqs[:]), iv(out, outs[:]), iv(total, tots[:])
}

// ci is the run's intervals: the latencies' from their distributions, the
// throughputs' from the completions' tally over the run that started at
// start and lasted s.Duration.
func (a *Accumulator) ci(l latencies, start time.Time, s *Summary) *CI {
	c := &CI{Confidence: Confidence, Method: CIOrderStatistics,
		TTFT: statsCI(l.ttft), TPOT: statsCI(l.tpot), ITL: statsCI(l.itl), E2E: statsCI(l.e2e)}
	if a.p.Stats == StatsSketch {
		c.Method = CISketch
	}
	from := 0.0
	if !a.origin.IsZero() && !start.IsZero() {
		from = start.Sub(a.origin).Seconds()
	}
	c.Windows, c.RequestThroughput, c.OutputThroughput, c.TotalThroughput =
		a.tput.intervals(from, s.Duration, s.RequestThroughput, s.OutputThroughput, s.TotalThroughput)
	return c
}

// writeCI is the table's block of intervals: each latency's mean, median
// and P99, and the throughputs, each marked where FewSamples holds. The
// record has the P90 and P95 too.
func (s *Summary) writeCI(t *tableWriter) {
	c := s.CI
	if c == nil {
		return
	}
	var rows [][2]string
	show := func(label string, v float64, iv Interval) {
		if !iv.Known() {
			return // nothing to bound it: no samples, or a run too short to split
		}
		rows = append(rows, [2]string{label, FormatInterval(v, iv)})
	}
	type lat struct {
		name string
		st   Stats
		ci   StatsCI
	}
	lats := []lat{{"E2E", s.E2ELatency, c.E2E}}
	if !s.Embedding {
		lats = append(lats, lat{"TTFT", s.TTFT, c.TTFT}, lat{"TPOT", s.TPOT, c.TPOT}, lat{"ITL", s.ITL, c.ITL})
	}
	for _, l := range lats {
		if l.ci.N == 0 {
			continue
		}
		show("Mean "+l.name+" (ms):", l.st.Mean, l.ci.Mean)
		show("Median "+l.name+" (ms):", l.st.Median, l.ci.Median)
		show("P99 "+l.name+" (ms):", l.st.P99, l.ci.P99)
	}
	show("Request throughput (req/s):", s.RequestThroughput, c.RequestThroughput)
	if !s.Embedding {
		show("Output token throughput (tok/s):", s.OutputThroughput, c.OutputThroughput)
	}
	show("Total token throughput (tok/s):", s.TotalThroughput, c.TotalThroughput)
	if len(rows) == 0 {
		return
	}
	t.line(center(fmt.Sprintf("Confidence Intervals (%g%%)", c.Confidence*100), '-', 50))
	for _, r := range rows {
		t.row(r[0], r[1])
	}
	how := "order statistics"
	if c.Method == CISketch {
		how = fmt.Sprintf("sketch ranks ±%g%%", SketchRelativeError*100)
	}
	if c.Windows > 0 {
		how += fmt.Sprintf("; throughput over %d windows", c.Windows)
	}
	t.row("Intervals:", how)
}

// FormatInterval is an interval as the table shows it, "[lo, hi]" in
// bench_serving's two decimals ("…" for an open end), marked
// "(few samples)" where FewSamples holds for the figure's value v.
func FormatInterval(v float64, iv Interval) string {
	end := func(f float64) string {
		if math.IsInf(f, 0) {
			return "…"
		}
		return pyfmt.Fixed2(f)
	}
	out := "[" + end(iv.Lo) + ", " + end(iv.Hi) + "]"
	if FewSamples(v, iv) {
		out += " (few samples)"
	}
	return out
}
