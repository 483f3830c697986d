package bench

// Sweep modes.
const (
	SweepRates       = "rates"       // --sweep-request-rates
	SweepConcurrency = "concurrency" // --sweep-max-concurrency
	SweepAuto        = "auto"        // --sweep auto
	SweepSLO         = "slo"         // --slo
)

// What a sweep varies, as the JSONL keys name the two settings.
const (
	ByRequestRate    = "request_rate"
	ByMaxConcurrency = "max_concurrency"
)

// SweepInfo places one run in a sweep or SLO search; it is the record's
// "sweep" object.
type SweepInfo struct {
	Mode string `json:"mode"`
	By   string `json:"by"`
	// Index is the point's 1-based position in the order run; Points is
	// how many the sweep has, 0 while a search does not know.
	Index  int     `json:"index"`
	Points int     `json:"points,omitempty"`
	Value  float64 `json:"value"`
	// Role says what an auto sweep's first two points measure
	// ("synchronous", "throughput"); "" for the others.
	Role string `json:"role,omitempty"`
	// SLO holds each objective's verdict on this run, when there is one.
	SLO []Verdict `json:"slo,omitempty"`
}

func (w *SweepInfo) record() record {
	r := record{
		{"mode", w.Mode},
		{"by", w.By},
		{"index", w.Index},
	}
	if w.Points > 0 {
		r = append(r, field{"points", w.Points})
	}
	r = append(r, field{"value", w.Value})
	if w.Role != "" {
		r = append(r, field{"role", w.Role})
	}
	if len(w.SLO) > 0 {
		vs := make([]record, len(w.SLO))
		for i, v := range w.SLO {
			vs[i] = record{
				{"metric", v.Metric}, {"percentile", v.Percentile}, {"max_ms", v.MaxMs},
				{"value_ms", v.ValueMs}, {"pass", v.Pass}, {"samples", v.Samples}, {"enough_samples", v.Enough},
			}
		}
		r = append(r, field{"slo", vs}, field{"pass", Passed(w.SLO)})
	}
	return r
}
