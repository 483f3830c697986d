package benchrun

import (
	"io"

	"github.com/servingprobe/servingprobe/bench"
)

// Table hands the sweep to bench's table: its points as they ran and,
// for an SLO search, its answer with the settings the answer names.
func (r *SweepResult) Table() *bench.SweepTable {
	t := &bench.SweepTable{Mode: r.Spec.Mode, Points: make([]bench.SweepRow, len(r.Points))}
	if r.Spec.Mode == bench.SweepSLO {
		t.SLO = r.Spec.SLO.String()
	}
	for i, p := range r.Points {
		t.Points[i] = bench.SweepRow{Info: p.Info, Summary: p.Summary}
	}
	t.Search = bench.SearchAnswer{
		Capacity: r.Capacity, Bound: r.Bound, Broke: r.Broke, GridPoints: r.GridPoints,
		Exhausted: r.Exhausted, Interrupted: r.Interrupted, OverBudget: r.OverBudget,
		Saturation: r.Saturation, PeakConcurrency: r.PeakConcurrency, RampStop: r.RampStop,
		Confirmed: r.Confirmed, Disagreements: r.Disagreements, Unstable: r.Unstable,
		TooFewBelow: r.TooFewBelow,
		Precision:   r.Spec.Precision, IdleTimeout: r.Spec.IdleTimeout, Budget: r.Spec.Budget,
		PointTime: r.Spec.PointTime, MaxPoints: r.Spec.MaxPoints, MinPointRequests: minPointRequests,
	}
	return t
}

// WriteTable prints r's table (bench.SweepTable.Write).
func (r *SweepResult) WriteTable(w io.Writer) error { return r.Table().Write(w) }

// Answer is r's answer in words (bench.SweepTable.Answer).
func (r *SweepResult) Answer(by string) string { return r.Table().Answer(by) }

// measured is the highest value a counted point of r held at and the
// lowest one failed at, as its table reads them (bench.SweepTable.Measured).
func (r *SweepResult) measured() (held, failedAt float64) { return r.Table().Measured() }
