package bench

import "math"

// FigureRuns is one figure across the runs of one side: each run's value,
// their mean (the value a comparison shows for the side) and their
// Spread.
type FigureRuns struct {
	Figure, Label string
	HigherBetter  bool
	Runs          []float64
	Mean, Spread  float64
}

// AcrossRuns is every figure of a comparison across the runs of one side,
// in the comparison's order and with its rows (CompareRuns decides which
// figures a set has): what a set of runs says on its own.
func AcrossRuns(runs []*Summary) []FigureRuns {
	var out []FigureRuns
	for _, c := range CompareRuns(runs, runs) {
		out = append(out, FigureRuns{Figure: c.Figure, Label: c.Label, HigherBetter: c.HigherBetter,
			Runs: c.BaseRuns, Mean: c.Base, Spread: Spread(c.BaseRuns)})
	}
	return out
}

// Spread is the spread between runs of one figure as the CLI's "Across N
// runs" line and the report state it: the sample standard deviation of
// the runs' values over their mean (the coefficient of variation). NaN
// with fewer than two runs, a mean of 0 or a run that lacks the figure.
func Spread(runs []float64) float64 {
	if len(runs) < 2 {
		return math.NaN()
	}
	m := mean(runs)
	if m == 0 {
		return math.NaN()
	}
	ss := 0.0
	for _, x := range runs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(runs)-1)) / math.Abs(m)
}
