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
// together (a comparison's table, or a gate's bounds), is below it.
const Alpha = 1 - Confidence

// Power is the chance of detecting a change that MinDetectable reports:
// the usual 80%.
const Power = 0.8

// Tests a comparison row can be decided by.
//
// The unit of a comparison is the run, not the request. A server's speed
// drifts between runs (load on the machine, caches, another tenant) and
// every request of a run shares that drift, so a test that counts the
// requests of one run as independent draws (a Mann–Whitney U on the
// per-request samples, or the runs' own intervals) flags drift as a
// change. Significance comes only from the spread between runs.
const (
	// TestRuns is Welch's t test on the run-level figures (each run's
	// median, P99, throughput, ...), on their logarithms so that the test
	// is of a ratio, as a drift that slows everything by some percent
	// is: it needs at least two runs on each side. Its false-positive
	// rate holds for small counts (TestRunLevelCoverage simulates it).
	TestRuns = "runs"
	// TestOneRun: one side has a single run, from which the drift between
	// runs cannot be told; the row shows the change and, where the
	// records have intervals, the difference's interval from them, but it
	// is never significant.
	TestOneRun = "one-run"
	// TestNone: a run lacks the figure (a record written by bench_serving
	// lacks some); the row is never significant.
	TestNone = "none"
)

// Comparison is one figure of two sets of runs side by side, and whether
// their difference is significant.
type Comparison struct {
	// Figure is the row's name for --fail-on ("ttft:p99",
	// "output_throughput"); Label the table's ("P99 TTFT (ms)").
	Figure, Label string
	// HigherBetter: a throughput (else a latency, lower being better).
	HigherBetter bool
	// Base and New are the mean over each side's runs of the figure;
	// BaseRuns and NewRuns each run's.
	Base, New         float64
	BaseRuns, NewRuns []float64
	// Test decided Significant: TestRuns, TestOneRun or TestNone. P is
	// the test's p-value, PAdj it Holm-adjusted over the rows compared
	// together; Significant is PAdj < Alpha (never for TestOneRun).
	Test        string
	P, PAdj     float64
	Significant bool
	// Diff is the difference's interval at Confidence: TestRuns' from the
	// spread between runs, TestOneRun's from the two runs' own intervals
	// (MOVER), Unknown where those are not recorded.
	Diff Interval
	// Why is set when Test is TestNone: what was missing.
	Why string
	// se and df are TestRuns' standard error of the difference (of the
	// logarithms when logScale) and its Welch degrees of freedom, for
	// MinDetectable.
	se, df   float64
	logScale bool
}

// Runs is the count of runs on each side.
func (c Comparison) Runs() (base, cand int) { return len(c.BaseRuns), len(c.NewRuns) }

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

// MinDetectable is the smallest change, in % of Base, that TestRuns
// detects with probability Power at two-sided level alpha, given the
// spread between the runs compared: (t(1-alpha/2) + t(Power)) standard
// errors of the difference. NaN for a row TestRuns did not decide.
func (c Comparison) MinDetectable(alpha float64) float64 {
	if c.Test != TestRuns || math.IsNaN(c.se) {
		return math.NaN()
	}
	k := (studentQuantile(1-alpha/2, c.df) + studentQuantile(Power, c.df)) * c.se
	if c.logScale {
		return 100 * (math.Exp(k) - 1)
	}
	if c.Base == 0 {
		return math.NaN()
	}
	return 100 * k / math.Abs(c.Base)
}

// Verdict is the row's significance as the tables show it, as benchstat
// writes it: the test's adjusted p-value, behind "~" when not significant
// ("p=0.002 t" for the test on the runs, "~ (p=0.41 t)"), "? (one run)"
// where a side has a single run, or "?" and why it was not tested.
func (c Comparison) Verdict() string {
	switch c.Test {
	case TestRuns:
		why := formatP(c.PAdj) + " t"
		if c.Significant {
			return why
		}
		return "~ (" + why + ")"
	case TestOneRun:
		return "? (one run)"
	}
	return "? (" + c.Why + ")"
}

// DiffText is the difference's interval as the tables show it, "" where
// there is none.
func (c Comparison) DiffText() string {
	if c.Test == TestNone || !c.Diff.Known() {
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
}{
	{"ttft", "TTFT", func(s *Summary) Stats { return s.TTFT }, func(c *CI) StatsCI { return c.TTFT }},
	{"tpot", "TPOT", func(s *Summary) Stats { return s.TPOT }, func(c *CI) StatsCI { return c.TPOT }},
	{"itl", "ITL", func(s *Summary) Stats { return s.ITL }, func(c *CI) StatsCI { return c.ITL }},
	{"e2e", "E2E latency", func(s *Summary) Stats { return s.E2ELatency }, func(c *CI) StatsCI { return c.E2E }},
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

// figure is one row a comparison can have: its value in a run, and its
// interval where the run recorded intervals.
type figure struct {
	name, label  string
	higherBetter bool
	latency      bool // an embedding run has only the E2E latency
	e2e          bool
	value        func(*Summary) float64
	ci           func(*CI) Interval
}

// figures are the rows of a comparison, in the table's order:
// throughputs, then each latency's mean, median and percentiles.
func figures() []figure {
	var out []figure
	for _, f := range throughputFigures {
		out = append(out, figure{name: f.name, label: f.label, higherBetter: true, value: f.value, ci: f.ci})
	}
	for _, f := range latencyFigures {
		for _, st := range latencyStats {
			out = append(out, figure{name: f.name + ":" + st.name, label: st.label + " " + f.label + " (ms)",
				latency: true, e2e: f.name == "e2e",
				value: func(s *Summary) float64 { return st.value(f.stats(s)) },
				ci:    func(c *CI) Interval { return st.ci(f.ci(c)) }})
		}
	}
	return append(out, validFigure)
}

// Compare puts the candidate run cand beside the baseline base: one run a
// side, so every row is TestOneRun (see CompareRuns).
func Compare(base, cand *Summary) []Comparison {
	return CompareRuns([]*Summary{base}, []*Summary{cand})
}

// CompareRuns puts the candidate's runs cand beside the baseline's runs
// base, figure by figure (throughputs, then each latency's mean, median
// and percentiles). With two runs or more a side each row is decided by
// TestRuns on the runs' figures; with one run on a side, by none
// (TestOneRun). An embedding run's table has no output throughput, TTFT,
// TPOT or ITL, so neither does its comparison.
func CompareRuns(base, cand []*Summary) []Comparison {
	embedding := slices.ContainsFunc(base, func(s *Summary) bool { return s.Embedding }) ||
		slices.ContainsFunc(cand, func(s *Summary) bool { return s.Embedding })
	var out []Comparison
	for _, f := range figures() {
		if embedding && (f.name == "output_throughput" || (f.latency && !f.e2e)) {
			continue
		}
		if f.name == FigureValid && !judged(base) && !judged(cand) {
			continue // no run had answer checks
		}
		c := Comparison{Figure: f.name, Label: f.label, HigherBetter: f.higherBetter, Diff: Unknown}
		for _, s := range base {
			c.BaseRuns = append(c.BaseRuns, f.value(s))
		}
		for _, s := range cand {
			c.NewRuns = append(c.NewRuns, f.value(s))
		}
		c.Base, c.New = mean(c.BaseRuns), mean(c.NewRuns)
		switch {
		case len(base) == 0 || len(cand) == 0 || slices.ContainsFunc(append(slices.Clone(c.BaseRuns), c.NewRuns...), math.IsNaN):
			c.none("a run lacks the figure")
		case len(base) < 2 || len(cand) < 2:
			c.Test, c.P = TestOneRun, math.NaN()
			if len(base) == 1 && len(cand) == 1 && base[0].CI != nil && cand[0].CI != nil {
				c.Diff = DiffInterval(c.Base, f.ci(base[0].CI), c.New, f.ci(cand[0].CI))
			}
		default:
			c.byRuns()
		}
		if f.name == FigureValid && c.Test == TestNone {
			c.Why = "a run judged no answer; give both sides the same answer checks"
		}
		out = append(out, c)
	}
	adjust(out)
	return out
}

func (c *Comparison) none(why string) {
	c.Test, c.Why, c.P = TestNone, why, math.NaN()
}

// byRuns decides the row by Welch's t test on the runs' figures: on their
// logarithms when every figure is positive (a change then reads as a
// ratio, and a drift that scales a server's speed is symmetric there),
// else on the figures themselves.
func (c *Comparison) byRuns() {
	x, y := c.BaseRuns, c.NewRuns
	c.logScale = !slices.ContainsFunc(append(slices.Clone(x), y...), func(v float64) bool { return v <= 0 || math.IsInf(v, 0) })
	if c.logScale {
		x, y = logs(x), logs(y)
	}
	c.Test = TestRuns
	d, se, df := welch(x, y)
	c.se, c.df = se, df
	switch {
	case se == 0 && d == 0:
		c.P = 1
	case se == 0:
		c.P = 0
	default:
		c.P = 2 * studentSF(math.Abs(d)/se, df)
	}
	if se == 0 {
		c.Diff = Interval{c.Delta(), c.Delta()}
		return
	}
	h := studentQuantile(1-(1-Confidence)/2, df) * se
	if c.logScale {
		// The ratio's interval, as a difference from the baseline.
		c.Diff = Interval{c.Base * (math.Exp(d-h) - 1), c.Base * (math.Exp(d+h) - 1)}
	} else {
		c.Diff = Interval{d - h, d + h}
	}
}

// welch is the difference of means of y and x, its standard error and
// Welch–Satterthwaite degrees of freedom; x and y have two values or more.
func welch(x, y []float64) (d, se, df float64) {
	nx, ny := float64(len(x)), float64(len(y))
	vx, vy := variance(x)/nx, variance(y)/ny
	d = mean(y) - mean(x)
	se = math.Sqrt(vx + vy)
	if se == 0 {
		return d, 0, nx + ny - 2
	}
	df = (vx + vy) * (vx + vy) / (vx*vx/(nx-1) + vy*vy/(ny-1))
	return d, se, df
}

// variance is the sample variance (n-1).
func variance(v []float64) float64 {
	n := float64(len(v))
	sd := std(v)
	return sd * sd * n / (n - 1)
}

func logs(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Log(x)
	}
	return out
}

// studentSF is P(T > t) for Student's t with df degrees of freedom (df
// need not be whole), from the regularized incomplete beta function.
func studentSF(t, df float64) float64 {
	if math.IsInf(t, 1) {
		return 0
	}
	p := 0.5 * incBeta(df/2, 0.5, df/(df+t*t))
	if t < 0 {
		return 1 - p
	}
	return p
}

// studentQuantile is the q-th quantile of Student's t with df degrees of
// freedom, by bisection on studentSF: accurate to 1e-9, which the few
// calls of a comparison afford.
func studentQuantile(q, df float64) float64 {
	lo, hi := -1e3, 1e3
	for hi-lo > 1e-9 {
		mid := (lo + hi) / 2
		if 1-studentSF(mid, df) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// incBeta is the regularized incomplete beta function I_x(a, b), by its
// continued fraction (Numerical Recipes' betacf, modified Lentz).
func incBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaCF(b, a, 1-x)/b
	}
	return front * betaCF(a, b, x) / a
}

func betaCF(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d, c = 1+num*d, 1+num/c
		if math.Abs(d) < tiny {
			d = tiny
		}
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d, c = 1+num*d, 1+num/c
		if math.Abs(d) < tiny {
			d = tiny
		}
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

// adjust sets each tested row's PAdj, by Holm's step-down method over the
// rows TestRuns decided, and Significant.
func adjust(rows []Comparison) {
	var idx []int
	for i, c := range rows {
		if c.Test == TestRuns {
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
		if rows[i].Test != TestRuns {
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

// CanonicalFigure is name as the comparison's rows name it: "p50" is
// accepted for "median" ("ttft:p50" is "ttft:median"), as a percentile is
// usually written.
func CanonicalFigure(name string) string {
	if m, ok := strings.CutSuffix(name, ":p50"); ok {
		return m + ":median"
	}
	return name
}

// ParseGate reads a --fail-on list: comma-separated bounds such as
// "ttft:p99>+5%,output_throughput<-3%". A latency is named
// metric:statistic, metric one of ttft, tpot, itl, e2e and statistic one
// of mean, median (or p50), p90, p95, p99; a throughput by its record key
// (request_throughput, output_throughput, total_throughput); the share of
// valid answers as valid (FigureValid). A bound is a
// regression's direction: a latency's is ">" and not negative, a
// throughput's "<" and not positive; the other way round it would fail on
// an unchanged run, so it is refused with the form meant. Every error is
// reported, each with the bound it is about.
func ParseGate(spec string) ([]Bound, error) {
	higher := map[string]bool{}
	for _, f := range figures() {
		higher[f.name] = f.higherBetter
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
		b := Bound{Figure: CanonicalFigure(strings.TrimSpace(part[:i])), Op: part[i]}
		hb, known := higher[b.Figure]
		if !known {
			errs = append(errs, fmt.Errorf("%q: unknown figure %q (a throughput: request_throughput, output_throughput, total_throughput; a latency: ttft, tpot, itl or e2e, then :mean, :median (or :p50), :p90, :p95 or :p99; with answer checks, valid)", part, strings.TrimSpace(part[:i])))
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
		switch {
		case hb && (b.Op != '<' || pct > 0):
			errs = append(errs, fmt.Errorf("%q: %s regresses when it falls, so its bound is a fall: write %s<-%g%%", part, b.Figure, b.Figure, math.Abs(pct)))
			continue
		case !hb && (b.Op != '>' || pct < 0):
			errs = append(errs, fmt.Errorf("%q: %s regresses when it grows, so its bound is a rise: write %s>+%g%%", part, b.Figure, b.Figure, math.Abs(pct)))
			continue
		}
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
	// Failed: the change is beyond the bound and, with two runs or more
	// a side, significant. Reason says why, or why not, in a line.
	Failed bool
	Reason string
}

// OneRunNote is what a comparison or gate says where a side has a single
// run.
const OneRunNote = "one run cannot separate a change from the drift between runs of the same server; bench --runs 3 or more on each side lets a test decide"

// CheckGate checks each bound against the comparison's rows. With two
// runs or more a side, a bound fails when the change is beyond it and
// significant, the p-values Holm-adjusted over the bounds' figures (the
// gate's own family, not the whole table's), and the reason gives the
// runs a side and the smallest change their spread lets the test detect.
// With one run on a side nothing can be significant: a bound fails on
// the change alone, and the reason says so. A bound whose figure a run
// lacks (TestNone) is an error, not a pass: a gate that cannot see a
// regression must not report none.
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
	tested := 0
	for _, c := range family {
		if c.Test == TestRuns {
			tested++
		}
	}
	rows = family
	for _, b := range bounds {
		i := slices.IndexFunc(rows, func(c Comparison) bool { return c.Figure == b.Figure })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s: the runs do not have this figure", b.Figure))
			continue
		}
		c := rows[i]
		if c.Test == TestNone {
			errs = append(errs, fmt.Errorf("%s: cannot be tested: %s (write the records with servingprobe bench)", b.Figure, c.Why))
			continue
		}
		pct := c.Pct()
		beyond := !math.IsNaN(pct) && ((b.Op == '>' && pct > b.Pct) || (b.Op == '<' && pct < b.Pct))
		r := GateResult{Bound: b, Row: c}
		nb, nc := c.Runs()
		change := fmt.Sprintf("%s %.2f -> %.2f (%+.1f%%)", c.Label, c.Base, c.New, pct)
		if d := c.DiffText(); d != "" {
			change += ", Δ in " + d
		}
		if c.Test == TestOneRun {
			r.Failed = beyond
			where := map[bool]string{true: "beyond", false: "within"}[beyond]
			r.Reason = fmt.Sprintf("%s, %s %c%+g%%; runs %d v %d: judged against the bound alone, as %s", change, where, b.Op, b.Pct, nb, nc, OneRunNote)
			out = append(out, r)
			continue
		}
		r.Failed = beyond && c.Significant
		power := fmt.Sprintf("runs %d v %d, whose spread lets the test detect a change of %.1f%% or more (%g%% of the time)",
			nb, nc, c.MinDetectable(Alpha/float64(max(tested, 1))), Power*100)
		switch {
		case r.Failed:
			r.Reason = fmt.Sprintf("%s, beyond %c%+g%%, significant: %s; %s", change, b.Op, b.Pct, c.Verdict(), power)
		case beyond:
			r.Reason = fmt.Sprintf("%s, beyond %c%+g%% but not significant: %s; %s", change, b.Op, b.Pct, c.Verdict(), power)
		default:
			r.Reason = fmt.Sprintf("%s, within %c%+g%%: %s; %s", change, b.Op, b.Pct, c.Verdict(), power)
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// WriteComparison writes the rows as a terminal table: each figure of
// the baseline and the candidate (the mean over each side's runs), the
// change in %, the difference's interval and the verdict ("~" where not
// significant), then lines saying how significance was decided.
func WriteComparison(w io.Writer, baseName, candName string, rows []Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %12s %12s %8s  %-22s %s\n", "figure", "base", "new", "Δ %", "Δ interval", "significance")
	tested, nb, nc := 0, 0, 0
	for _, c := range rows {
		pct := "–"
		if p := c.Pct(); !math.IsNaN(p) {
			pct = fmt.Sprintf("%+.1f%%", p)
		}
		fmt.Fprintf(&b, "%-34s %12s %12s %8s  %-22s %s\n", c.Label, pyfmt.Fixed2(c.Base), pyfmt.Fixed2(c.New), pct, c.DiffText(), c.Verdict())
		if c.Test == TestRuns {
			tested++
		}
		nb, nc = max(nb, len(c.BaseRuns)), max(nc, len(c.NewRuns))
	}
	fmt.Fprintf(&b, "base: %s (%s); new: %s (%s)\n", baseName, plural(nb, "run"), candName, plural(nc, "run"))
	if nb < 2 || nc < 2 {
		fmt.Fprintf(&b, "Nothing is marked significant: %s. Δ interval: the %g%% interval of the difference from the runs' own intervals, which holds for this pair of runs only.\n",
			OneRunNote, Confidence*100)
	} else {
		fmt.Fprintf(&b, "Base and new are the means over the runs. Significant where the p-value, Holm-adjusted over the %d rows tested, is below %g; ~ where not. "+
			"t: Welch's t test on the runs' figures (their logarithms), so the spread between runs decides, not the count of requests; Δ interval: its %g%% interval.\n",
			tested, Alpha, Confidence*100)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
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
