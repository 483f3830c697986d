package runner

import (
	"io"

	"github.com/servingprobe/servingprobe/bench"
)

// Table hands the sweep to bench's table: its points as they ran and,
// for an SLO search, its answer (the one the search filled).
func (r *SweepResult) Table() *bench.SweepTable {
	t := &bench.SweepTable{Mode: r.Spec.Mode, Points: make([]bench.SweepRow, len(r.Points)), Search: r.SearchAnswer}
	if r.Spec.Mode == bench.SweepSLO {
		t.SLO = r.Spec.SLO.String()
	}
	for i, p := range r.Points {
		t.Points[i] = bench.SweepRow{Info: p.Info, Summary: p.Summary}
	}
	return t
}

// WriteTable prints r's table (bench.SweepTable.Write).
func (r *SweepResult) WriteTable(w io.Writer) error { return r.Table().Write(w) }

// measured is the highest value a counted point of r held at and the
// lowest one failed at, as its table reads them (bench.SweepTable.Measured).
func (r *SweepResult) measured() (held, failedAt float64) { return r.Table().Measured() }
