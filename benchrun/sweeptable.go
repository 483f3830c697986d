package benchrun

import (
	"fmt"
	"io"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
)

// WriteTable prints the sweep: one row per point, in the order run, then
// an SLO search's answer. Every number is read from the points'
// summaries, the same ones the per-point tables and records show.
func (r *SweepResult) WriteTable(w io.Writer) error {
	if len(r.Points) == 0 {
		return nil
	}
	var b strings.Builder
	by := r.Points[0].Info.By
	head := "req/s"
	if by == bench.ByMaxConcurrency {
		head = "concurrency"
	}
	title := map[string]string{
		bench.SweepRates: "Sweep: request rates", bench.SweepConcurrency: "Sweep: max concurrency",
		bench.SweepAuto: "Sweep: auto", bench.SweepSLO: "SLO search: " + r.Spec.SLO.String(),
	}[r.Spec.Mode]
	fmt.Fprintf(&b, "%s\n", bench.Center(" "+title+" ", '=', 110))
	fmt.Fprintf(&b, "%5s %12s %10s %11s %10s %10s %9s %9s %10s %9s  %s\n",
		"point", head, "achieved", "output", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "E2E p90", "goodput", "result")
	fmt.Fprintf(&b, "%5s %12s %10s %11s %10s %10s %9s %9s %10s %9s\n",
		"", "", "req/s", "tok/s", "ms", "ms", "ms", "ms", "ms", "req/s")
	for _, p := range r.Points {
		s := p.Summary
		value := FormatValue(by, p.Info.Value)
		if by == bench.ByRequestRate {
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
		fmt.Fprintf(&b, "%5d %12s %10.2f %11.1f %10.1f %10.1f %9.1f %9.1f %10.1f %9s  %s\n",
			p.Info.Index, value, s.RequestThroughput, s.OutputThroughput, s.TTFT.Median, s.TTFT.P99,
			s.ITL.Median, s.ITL.P99, s.E2ELatency.P90, good, p.Info.Verdict(s))
	}
	if r.Spec.Mode == bench.SweepSLO {
		b.WriteString(r.Answer(by))
	}
	b.WriteString(strings.Repeat("=", 110) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Answer states what an SLO search found, how sure it is, and what it
// cost next to a fixed grid. Its statements about points are read from
// SweepInfo.SearchVerdict, as the table's result column is.
func (r *SweepResult) Answer(by string) string {
	var b strings.Builder
	what := "request rate"
	if by == bench.ByMaxConcurrency {
		what = "concurrency"
	}
	if r.Saturation > 0 {
		fmt.Fprintf(&b, "Completion capacity: %s, measured by the concurrency ramp at %d in flight (it stopped: %s); a rate at or above it queues without end.\n",
			FormatValue(bench.ByRequestRate, r.Saturation), r.PeakConcurrency, r.RampStop)
	}
	var busy []string
	for _, p := range r.Points {
		if p.Info.NotIdle {
			busy = append(busy, fmt.Sprint(p.Info.Index))
		}
	}
	if len(busy) > 0 {
		fmt.Fprintf(&b, "The server was not back at its idle state within %s before point %s: a point there may have started on an earlier one's queue.\n",
			r.Spec.IdleTimeout, strings.Join(busy, ", "))
	}
	if r.Interrupted {
		// Only what was measured: no answer, no grid to compare with.
		if r.OverBudget {
			fmt.Fprintf(&b, "The search's budget (--slo-budget, slo_budget in a bench window: %s) ran out after %d points, before its answer.\n", r.Spec.Budget, len(r.Points))
		} else {
			fmt.Fprintf(&b, "The search was interrupted after %d points, before its answer.\n", len(r.Points))
		}
		held, failedAt := r.measured()
		switch {
		case held > 0:
			fmt.Fprintf(&b, "The SLO held at %s (the highest %s measured to hold)", FormatValue(by, held), what)
		default:
			fmt.Fprintf(&b, "No point measured held the SLO")
		}
		if failedAt > 0 {
			fmt.Fprintf(&b, "; it failed at %s.\n", FormatValue(by, failedAt))
		} else {
			fmt.Fprintf(&b, "; no point measured failed it.\n")
		}
		return b.String()
	}
	switch {
	case r.Unstable:
		fmt.Fprintf(&b, "No stable answer: %d times a %s that held failed when run again, so the server's verdicts vary more than the precision (%.0f%%); no capacity is given. Search a quieter server, or widen --slo-precision (slo_precision in a bench window).\n",
			r.Disagreements, what, 100*r.Spec.Precision)
	case r.Capacity == 0:
		fmt.Fprintf(&b, "No %s tried meets the SLO (the lowest, %s, did not).\n", what, FormatValue(by, r.Bound))
		if r.TooFewBelow > 0 {
			fmt.Fprintf(&b, "Lower rates were not tried: below %s a point completes fewer than %d requests within --slo-point-time (%s), too few to decide.\n",
				FormatValue(by, r.TooFewBelow), minPointRequests, r.Spec.PointTime)
		}
	case r.Bound == 0:
		fmt.Fprintf(&b, "The SLO holds at every %s tried, up to %s: the limit is higher (raise --slo-max, slo_max in a bench window).\n", what, FormatValue(by, r.Capacity))
	default:
		held := "held twice"
		if !r.Confirmed {
			held = "held once, not confirmed"
		}
		breaks := "it breaks by " + FormatValue(by, r.Bound)
		if r.Bound == r.Saturation {
			breaks = "below the completion capacity, " + FormatValue(by, r.Bound)
		}
		fmt.Fprintf(&b, "Highest %s meeting the SLO: %s (%s; %s; the limit is within %.0f%% of the answer).\n",
			what, FormatValue(by, r.Capacity), held, breaks, 100*(r.Bound-r.Capacity)/r.Capacity)
	}
	if len(r.Broke) > 0 {
		var parts []string
		for _, v := range r.Broke {
			parts = append(parts, bench.BrokeValue(v))
		}
		fmt.Fprintf(&b, "Broke first: %s.\n", strings.Join(parts, ", "))
	}
	if r.Exhausted {
		fmt.Fprintf(&b, "Stopped after the most runs allowed (--slo-max-points, slo_max_points in a bench window: %d), before reaching the precision.\n", r.Spec.MaxPoints)
	}
	reqs := 0
	for _, p := range r.Points {
		reqs += p.Summary.Requests
	}
	per := reqs / len(r.Points)
	fmt.Fprintf(&b, "%d points, %d requests; a fixed grid at the same precision over the values tried would run %d points (about %d requests).\n",
		len(r.Points), reqs, r.GridPoints, r.GridPoints*per)
	return b.String()
}

// measured is the highest value a counted point held at and the lowest
// one failed at (0: none), read as the table reads them.
func (r *SweepResult) measured() (held, failedAt float64) {
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
