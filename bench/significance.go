package bench

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
)

// Alpha is the significance level of a comparison as a whole: a row is
// significant when its p-value, Holm-adjusted over the rows compared
// together (a comparison's table, or a gate's bounds), is below it. So
// two runs of the same server show "~" on every row at least 1-Alpha of
// the time, rather than one row in twenty flagged by chance.
const Alpha = 1 - Confidence

// Tests a comparison row can be decided by.
const (
	// TestMannWhitney is the Mann–Whitney U test (two-sided, normal
	// approximation with the tie correction) on the per-request samples of
	// the two runs' details: the samples of one run tend to be larger
	// than the other's. It decides the mean and median rows where both
	// records kept their details (--output-details).
	TestMannWhitney = "mann-whitney"
	// TestCI is the interval of the difference from the two runs'
	// intervals (servingprobe.ci), by the MOVER method (Zou and Donner,
	// 2008: each side's half-widths added in quadrature), its p-value
	// the normal one whose interval at Confidence that is. It decides the
	// percentile and throughput rows, and the mean and median rows where
	// the details were not kept: the record alone suffices.
	TestCI = "ci"
	// TestNone: neither record holds what a test needs (a record written
	// by bench_serving, or before intervals were recorded); the row is
	// never significant.
	TestNone = "none"
)

// Comparison is one figure of two runs side by side, and whether their
// difference is significant.
type Comparison struct {
	// Figure is the row's name for --fail-on ("ttft:p99",
	// "output_throughput"); Label the table's ("P99 TTFT (ms)").
	Figure, Label string
	// HigherBetter: a throughput (else a latency, lower being better).
	HigherBetter bool
	Base, New    float64
	// Test decided Significant: TestMannWhitney, TestCI (with the
	// difference's interval Diff, at Confidence), or TestNone. P is the
	// test's p-value, PAdj it Holm-adjusted over the rows compared
	// together; Significant is PAdj < Alpha.
	Test        string
	P, PAdj     float64
	Diff        Interval
	Significant bool
	// Why is set when Test is TestNone: what was missing.
	Why string
}

// Delta is New - Base.
func (c Comparison) Delta() float64 { return c.New - c.Base }

// Pct is the difference in % of Base; NaN when Base is 0.
func (c Comparison) Pct() float64 {
	if c.Base == 0 {
		return math.NaN()
	}
	return 100 * c.Delta() / math.Abs(c.Base)
}

// Worse reports whether New is worse than Base: higher for a latency,
// lower for a throughput.
func (c Comparison) Worse() bool {
	if c.HigherBetter {
		return c.New < c.Base
	}
	return c.New > c.Base
}

// Verdict is the row's significance as the tables show it, as benchstat
// writes it: the test's adjusted p-value, behind "~" when not
// significant ("p=0.002 U" for Mann–Whitney, "~ (p=0.41 CI)" for the
// difference's interval), or "?" and why it was not tested.
func (c Comparison) Verdict() string {
	var why string
	switch c.Test {
	case TestMannWhitney:
		why = formatP(c.PAdj) + " U"
	case TestCI:
		why = formatP(c.PAdj) + " CI"
	default:
		return "? (" + c.Why + ")"
	}
	if c.Significant {
		return why
	}
	return "~ (" + why + ")"
}

// DiffText is the difference's interval as the tables show it, "" for a
// row that TestCI did not decide.
func (c Comparison) DiffText() string {
	if c.Test != TestCI {
		return ""
	}
	return strings.TrimSuffix(FormatInterval(math.NaN(), c.Diff), " (few samples)")
}

// formatP is a p-value as benchstat writes it: "p=0.012", "p<0.001".
func formatP(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return "p=" + strconv.FormatFloat(p, 'f', 3, 64)
}

// latencyFigures are the latencies a comparison and the gate know: the
// gate's name, the table's, and where each run keeps them.
var latencyFigures = []struct {
	name, label string
	stats       func(*Summary) Stats
	ci          func(*CI) StatsCI
	samples     func(*DetailSamples) []float64
}{
	{"ttft", "TTFT", func(s *Summary) Stats { return s.TTFT }, func(c *CI) StatsCI { return c.TTFT }, func(d *DetailSamples) []float64 { return d.TTFT }},
	{"tpot", "TPOT", func(s *Summary) Stats { return s.TPOT }, func(c *CI) StatsCI { return c.TPOT }, func(d *DetailSamples) []float64 { return d.TPOT }},
	{"itl", "ITL", func(s *Summary) Stats { return s.ITL }, func(c *CI) StatsCI { return c.ITL }, func(d *DetailSamples) []float64 { return d.ITL }},
	{"e2e", "E2E latency", func(s *Summary) Stats { return s.E2ELatency }, func(c *CI) StatsCI { return c.E2E }, func(d *DetailSamples) []float64 { return d.E2E }},
}

// latencyStats are a latency's rows: the gate's name, the table's, the
// value and the interval.
var latencyStats = []struct {
	name, label string
	value       func(Stats) float64
	ci          func(StatsCI) Interval
}{
	{"mean", "Mean", func(s Stats) float64 { return s.Mean }, func(c StatsCI) Interval { return c.Mean }},
	{"median", "Median", func(s Stats) float64 { return s.Median }, func(c StatsCI) Interval { return c.Median }},
	{"p90", "P90", func(s Stats) float64 { return s.P90 }, func(c StatsCI) Interval { return c.P90 }},
	{"p95", "P95", func(s Stats) float64 { return s.P95 }, func(c StatsCI) Interval { return c.P95 }},
	{"p99", "P99", func(s Stats) float64 { return s.P99 }, func(c StatsCI) Interval { return c.P99 }},
}

// throughputFigures are the throughputs a comparison and the gate know.
var throughputFigures = []struct {
	name, label string
	value       func(*Summary) float64
	ci          func(*CI) Interval
}{
	{"request_throughput", "Request throughput (req/s)", func(s *Summary) float64 { return s.RequestThroughput }, func(c *CI) Interval { return c.RequestThroughput }},
	{"output_throughput", "Output token throughput (tok/s)", func(s *Summary) float64 { return s.OutputThroughput }, func(c *CI) Interval { return c.OutputThroughput }},
	{"total_throughput", "Total token throughput (tok/s)", func(s *Summary) float64 { return s.TotalThroughput }, func(c *CI) Interval { return c.TotalThroughput }},
}

// Compare puts the candidate run cand beside the baseline base, figure
// by figure (throughputs, then each latency's mean, median and
// percentiles), each row decided significant or not by the test its
// kind of figure takes (TestMannWhitney, TestCI, or TestNone where the
// records hold neither details nor intervals). An embedding run's table
// has no TTFT, TPOT or ITL, so neither does its comparison.
func Compare(base, cand *Summary) []Comparison {
	var out []Comparison
	for _, f := range throughputFigures {
		if f.name == "output_throughput" && (base.Embedding || cand.Embedding) {
			continue
		}
		c := Comparison{Figure: f.name, Label: f.label, HigherBetter: true, Base: f.value(base), New: f.value(cand)}
		if base.CI == nil || cand.CI == nil {
			c.none("no intervals in the record")
		} else {
			c.byCI(f.ci(base.CI), f.ci(cand.CI))
		}
		out = append(out, c)
	}
	bd, cd := base.DetailSamples(), cand.DetailSamples()
	for _, f := range latencyFigures {
		if f.name != "e2e" && (base.Embedding || cand.Embedding) {
			continue
		}
		var ub, uc []float64
		if bd != nil && cd != nil {
			ub, uc = f.samples(bd), f.samples(cd)
		}
		u := math.NaN()
		if len(ub) > 0 && len(uc) > 0 {
			u = MannWhitneyU(ub, uc)
		}
		for _, st := range latencyStats {
			c := Comparison{Figure: f.name + ":" + st.name, Label: st.label + " " + f.label + " (ms)",
				Base: st.value(f.stats(base)), New: st.value(f.stats(cand))}
			switch {
			case (st.name == "mean" || st.name == "median") && !math.IsNaN(u):
				c.Test, c.P = TestMannWhitney, u
			case base.CI != nil && cand.CI != nil:
				c.byCI(st.ci(f.ci(base.CI)), st.ci(f.ci(cand.CI)))
			default:
				c.none("no intervals or details in the record")
			}
			out = append(out, c)
		}
	}
	adjust(out)
	return out
}

func (c *Comparison) none(why string) {
	c.Test, c.Why, c.P = TestNone, why, math.NaN()
}

// byCI decides the row by the interval of the difference New - Base.
func (c *Comparison) byCI(base, cand Interval) {
	c.Test = TestCI
	c.Diff = DiffInterval(c.Base, base, c.New, cand)
	c.P = ciPValue(c.Delta(), c.Diff)
}

// ciPValue is the two-sided p-value of a difference d whose interval at
// Confidence is iv, taking the interval's side toward zero as z standard
// errors of a normal estimate: below Alpha exactly when iv leaves out 0.
// An open side gives 1.
func ciPValue(d float64, iv Interval) float64 {
	half := d - iv.Lo
	if d < 0 {
		half = iv.Hi - d
	}
	if d == 0 || math.IsInf(half, 0) || math.IsNaN(half) {
		return 1
	}
	if half <= 0 {
		return 0
	}
	z := math.Abs(d) / (half / zQuantile)
	return math.Min(1, 2*(1-normalCDF(z)))
}

// adjust sets each tested row's PAdj, by Holm's step-down method over the
// tested rows, and Significant.
func adjust(rows []Comparison) {
	var idx []int
	for i, c := range rows {
		if c.Test != TestNone {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(rows[a].P, rows[b].P) })
	run := 0.0
	for k, i := range idx {
		run = math.Max(run, math.Min(1, float64(len(idx)-k)*rows[i].P))
		rows[i].PAdj = run
		rows[i].Significant = run < Alpha
	}
	for i := range rows {
		if rows[i].Test == TestNone {
			rows[i].PAdj, rows[i].Significant = math.NaN(), false
		}
	}
}

// DiffInterval is the interval of b - a from the intervals of a and b
// (each at Confidence), by the MOVER method: the lower end takes b's
// lower and a's upper half-widths in quadrature, the upper end the
// others, so that asymmetric intervals (a percentile's) stay asymmetric.
// An open end of either makes the matching end open.
func DiffInterval(a float64, ia Interval, b float64, ib Interval) Interval {
	d := b - a
	return Interval{
		Lo: d - math.Hypot(b-ib.Lo, ia.Hi-a),
		Hi: d + math.Hypot(ib.Hi-b, a-ia.Lo),
	}
}

// MannWhitneyU is the two-sided p-value of the Mann–Whitney U test that
// samples x and y come from the same distribution, against one tending
// to be larger: the normal approximation of U with the tie correction and
// a continuity correction, good from about ten samples a side. x and y
// are not modified.
func MannWhitneyU(x, y []float64) float64 {
	n1, n2 := float64(len(x)), float64(len(y))
	if n1 == 0 || n2 == 0 {
		return math.NaN()
	}
	// Each sample sorted on its own, then merged: midranks over the
	// groups of equal values, and the tie term sums t³-t over them. Two
	// sorted copies are the only memory it takes.
	xs, ys := slices.Clone(x), slices.Clone(y)
	slices.Sort(xs)
	slices.Sort(ys)
	r1, ties := 0.0, 0.0
	i, j := 0, 0
	for i < len(xs) || j < len(ys) {
		var v float64
		switch {
		case j == len(ys) || (i < len(xs) && xs[i] <= ys[j]):
			v = xs[i]
		default:
			v = ys[j]
		}
		start := i + j // values before this group
		ni, nj := 0, 0
		for i < len(xs) && xs[i] == v {
			i, ni = i+1, ni+1
		}
		for j < len(ys) && ys[j] == v {
			j, nj = j+1, nj+1
		}
		t := float64(ni + nj)
		mid := float64(start) + (t+1)/2 // ranks start+1..start+t
		r1 += float64(ni) * mid
		ties += t*t*t - t
	}
	u := r1 - n1*(n1+1)/2
	n := n1 + n2
	mu := n1 * n2 / 2
	sigma := math.Sqrt(n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1))))
	if sigma == 0 {
		return 1 // every value equal
	}
	z := (math.Abs(u-mu) - 0.5) / sigma
	if z < 0 {
		z = 0
	}
	return math.Min(1, 2*(1-normalCDF(z)))
}

// DetailSamples are a run's per-request latencies read back from its
// details, in ms, over the requests the summary's latencies count: each
// measured success's TTFT, E2E and TPOT as Summary.DetailRequests reads
// them, and every inter-token gap.
type DetailSamples struct {
	TTFT, TPOT, ITL, E2E []float64
	// TTFTReq and E2EReq are the request (its index in the details'
	// arrays) each TTFT and E2E sample is of, so that a caller can set a
	// sample against the request's other fields: the report draws them
	// against send time and prompt length.
	TTFTReq, E2EReq []int
}

// DetailSamples are the summary's per-request latencies, nil when it kept
// no details with times (--output-details).
func (s *Summary) DetailSamples() *DetailSamples {
	if d := s.Details; d == nil || len(d.SentTimes) == 0 {
		return nil
	}
	var v DetailSamples
	for r := range s.DetailRequests() {
		if !r.Measured() {
			continue
		}
		v.E2E, v.E2EReq = append(v.E2E, r.E2E*1000), append(v.E2EReq, r.Index)
		if r.TTFT >= 0 {
			v.TTFT, v.TTFTReq = append(v.TTFT, r.TTFT*1000), append(v.TTFTReq, r.Index)
		}
		if r.TPOT >= 0 {
			v.TPOT = append(v.TPOT, r.TPOT*1000)
		}
		for _, g := range r.ITLs {
			v.ITL = append(v.ITL, g*1000)
		}
	}
	return &v
}

// Bound is one figure of a regression gate (--fail-on): the figure
// fails when its change in % is beyond Pct in the direction of Op (">":
// greater, "<": less) and significant.
type Bound struct {
	Figure string
	Op     byte // '>' or '<'
	Pct    float64
}

func (b Bound) String() string { return fmt.Sprintf("%s%c%+g%%", b.Figure, b.Op, b.Pct) }

// ParseGate reads a --fail-on list: comma-separated bounds such as
// "ttft:p99>+5%,output_throughput<-3%". A latency is named
// metric:statistic, metric one of ttft, tpot, itl, e2e and statistic one
// of mean, median, p90, p95, p99; a throughput by its record key
// (request_throughput, output_throughput, total_throughput). Every error
// is reported, each with the bound it is about.
func ParseGate(spec string) ([]Bound, error) {
	known := map[string]bool{}
	for _, f := range throughputFigures {
		known[f.name] = true
	}
	for _, f := range latencyFigures {
		for _, st := range latencyStats {
			known[f.name+":"+st.name] = true
		}
	}
	var out []Bound
	var errs []error
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.IndexAny(part, "<>")
		if i < 0 {
			errs = append(errs, fmt.Errorf("%q: want figure>+N%% or figure<-N%%", part))
			continue
		}
		b := Bound{Figure: strings.TrimSpace(part[:i]), Op: part[i]}
		if !known[b.Figure] {
			errs = append(errs, fmt.Errorf("%q: unknown figure %q (a throughput: request_throughput, output_throughput, total_throughput; a latency: ttft, tpot, itl or e2e, then :mean, :median, :p90, :p95 or :p99)", part, b.Figure))
			continue
		}
		num, ok := strings.CutSuffix(strings.TrimSpace(part[i+1:]), "%")
		num = strings.TrimSpace(num)
		if !ok {
			errs = append(errs, fmt.Errorf("%q: the bound must be a percentage, such as +5%%", part))
			continue
		}
		pct, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsNaN(pct) || math.IsInf(pct, 0) {
			errs = append(errs, fmt.Errorf("%q: bound %q is not a number", part, num))
			continue
		}
		b.Pct = pct
		out = append(out, b)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, errors.New("no bound given")
	}
	return out, nil
}

// GateResult is one bound checked against a comparison.
type GateResult struct {
	Bound Bound
	Row   Comparison
	// Failed: the change is beyond the bound and significant. Reason
	// says why, or why not, in a line.
	Failed bool
	Reason string
}

// CheckGate checks each bound against the comparison's rows, the
// p-values Holm-adjusted over the bounds' figures (the gate's own family,
// not the whole table's). A bound whose figure the comparison cannot test
// (TestNone) is an error, not a pass: a gate that cannot see a regression
// must not report none.
func CheckGate(bounds []Bound, rows []Comparison) ([]GateResult, error) {
	var out []GateResult
	var errs []error
	var family []Comparison
	for _, b := range bounds {
		if i := slices.IndexFunc(rows, func(c Comparison) bool { return c.Figure == b.Figure }); i >= 0 {
			family = append(family, rows[i])
		}
	}
	adjust(family)
	rows = family
	for _, b := range bounds {
		i := slices.IndexFunc(rows, func(c Comparison) bool { return c.Figure == b.Figure })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s: the runs do not have this figure", b.Figure))
			continue
		}
		c := rows[i]
		if c.Test == TestNone {
			errs = append(errs, fmt.Errorf("%s: cannot be tested: %s (write the records with servingprobe bench; --output-details adds the Mann–Whitney test)", b.Figure, c.Why))
			continue
		}
		pct := c.Pct()
		beyond := !math.IsNaN(pct) && ((b.Op == '>' && pct > b.Pct) || (b.Op == '<' && pct < b.Pct))
		r := GateResult{Bound: b, Row: c, Failed: beyond && c.Significant}
		change := fmt.Sprintf("%s %.2f -> %.2f (%+.1f%%)", c.Label, c.Base, c.New, pct)
		if d := c.DiffText(); d != "" {
			change += ", Δ in " + d
		}
		switch {
		case r.Failed:
			r.Reason = fmt.Sprintf("%s, beyond %c%+g%%, significant: %s", change, b.Op, b.Pct, c.Verdict())
		case beyond:
			r.Reason = fmt.Sprintf("%s, beyond %c%+g%% but not significant: %s", change, b.Op, b.Pct, c.Verdict())
		default:
			r.Reason = fmt.Sprintf("%s, within %c%+g%%: %s", change, b.Op, b.Pct, c.Verdict())
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// WriteComparison writes the rows as a terminal table: each figure of
// the baseline and the candidate, the change in %, the difference's
// interval where that decided it, and the verdict ("~" where not
// significant), then a line saying how significance was decided.
func WriteComparison(w io.Writer, baseName, candName string, rows []Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %12s %12s %8s  %-22s %s\n", "figure", "base", "new", "Δ %", "Δ interval", "significance")
	tested := 0
	for _, c := range rows {
		pct := "–"
		if p := c.Pct(); !math.IsNaN(p) {
			pct = fmt.Sprintf("%+.1f%%", p)
		}
		fmt.Fprintf(&b, "%-34s %12s %12s %8s  %-22s %s\n", c.Label, pyfmt.Fixed2(c.Base), pyfmt.Fixed2(c.New), pct, c.DiffText(), c.Verdict())
		if c.Test != TestNone {
			tested++
		}
	}
	fmt.Fprintf(&b, "base: %s; new: %s\n", baseName, candName)
	fmt.Fprintf(&b, "Significant where the p-value, Holm-adjusted over the %d rows tested, is below %g; ~ where not. "+
		"U: Mann–Whitney U on the per-request samples (--output-details); CI: the %g%% interval of the difference from the records' intervals.\n",
		tested, Alpha, Confidence*100)
	_, err := io.WriteString(w, b.String())
	return err
}

// FigureInterval is the value and recorded interval of the figure a
// comparison's table labels label ("P99 TTFT (ms)", "Request throughput
// (req/s)"), as Compare reads them; false when s has no intervals or no
// figure has that label. The report marks the few-samples figures of
// its comparison table with it.
func (s *Summary) FigureInterval(label string) (float64, Interval, bool) {
	if s.CI == nil {
		return 0, Unknown, false
	}
	for _, f := range throughputFigures {
		if f.label == label {
			return f.value(s), f.ci(s.CI), true
		}
	}
	for _, f := range latencyFigures {
		for _, st := range latencyStats {
			if st.label+" "+f.label+" (ms)" == label {
				return st.value(f.stats(s)), st.ci(f.ci(s.CI)), true
			}
		}
	}
	return 0, Unknown, false
}
