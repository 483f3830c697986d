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
	// Role says what an anchor measures: an auto sweep's first two points
	// ("synchronous", "throughput"), an SLO search's one request at a
	// time ("synchronous") and its concurrency ramp ("ramp"); "" for the
	// points of the sweep or search proper.
	Role string `json:"role,omitempty"`
	// Concurrency is the requests a ramp step kept in flight.
	Concurrency int `json:"concurrency,omitempty"`
	// SLO holds each objective's verdict on this run, when there is one.
	SLO []Verdict `json:"slo,omitempty"`
	// Ended says why an SLO search's point ended before sending every
	// prompt (one of the Ended* values); "" when it sent them all.
	Ended string `json:"ended,omitempty"`
	// Samples is how many samples decided the point: those of the
	// objective that broke, else the fewest any objective had.
	Samples int `json:"samples,omitempty"`
	// IdleWait is how long an SLO search waited, before this point, for
	// the server to be back at its idle state (seconds); NotIdle says it
	// never came back within the search's bound, so the point may have
	// started on an earlier point's queue.
	IdleWait float64 `json:"idle_wait,omitempty"`
	NotIdle  bool    `json:"not_idle,omitempty"`
	// Growing says an SLO search's point failed its steady state: its
	// latency from schedule to first token kept growing through it (the
	// median of its last third at least twice its first third's), a
	// queue building up, so the rate is past what the server sustains
	// even where the percentiles of the requests that completed were
	// within the SLO.
	Growing bool `json:"growing,omitempty"`
}

// Why an SLO search's point ended early. Every one but EndedSamples is
// also the summary's Stopped reason; EndedSamples too, when the point
// stopped sending because its samples sufficed.
const (
	// EndedSamples: every objective's percentile had the samples it
	// needs (a clear pass needs fewer than a close call).
	EndedSamples = "samples"
	// EndedBroken: an objective had already broken with more samples
	// above its bound than the point's planned samples allow.
	EndedBroken = "slo_broken"
	// EndedOverSaturated: the point broke an objective while the
	// latency from schedule to first token kept growing, or the client
	// queue grew without bound; the rate is beyond what the server
	// sustains.
	EndedOverSaturated = "over_saturated"
	// EndedTime: the point ran for its time cap.
	EndedTime = "time_cap"
	// EndedBudget: the search's budget cut the point short.
	EndedBudget = "budget"
)

// Passed reports whether the point met every objective in a steady
// state: an over-saturated point, or one whose latency kept growing,
// fails whatever the percentiles of the requests that completed say,
// because the ones still queued were not counted.
func (w *SweepInfo) Passed() bool {
	return Passed(w.SLO) && w.Ended != EndedOverSaturated && !w.Growing
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
	if w.Concurrency > 0 {
		r = append(r, field{"concurrency", w.Concurrency})
	}
	if len(w.SLO) > 0 {
		vs := make([]record, len(w.SLO))
		for i, v := range w.SLO {
			switch v.Metric {
			case MetricErrors:
				vs[i] = record{
					{"metric", v.Metric}, {"max_percent", v.MaxPercent}, {"value_percent", v.ValuePercent},
					{"pass", v.Pass}, {"samples", v.Samples}, {"enough_samples", v.Enough},
				}
				continue
			case MetricValid:
				vs[i] = record{
					{"metric", v.Metric}, {"min_percent", v.MinPercent}, {"value_percent", v.ValuePercent},
					{"pass", v.Pass}, {"samples", v.Samples}, {"enough_samples", v.Enough},
				}
				continue
			}
			vs[i] = record{
				{"metric", v.Metric}, {"percentile", v.Percentile}, {"max_ms", v.MaxMs},
				{"value_ms", v.ValueMs}, {"pass", v.Pass}, {"samples", v.Samples}, {"enough_samples", v.Enough},
			}
		}
		r = append(r, field{"slo", vs}, field{"pass", w.Passed()})
	}
	if w.Ended != "" {
		r = append(r, field{"ended", w.Ended})
	}
	if w.Samples > 0 {
		r = append(r, field{"samples", w.Samples})
	}
	if w.IdleWait > 0 {
		r = append(r, field{"idle_wait", w.IdleWait})
	}
	if w.NotIdle {
		r = append(r, field{"not_idle", true})
	}
	if w.Growing {
		r = append(r, field{"growing", true})
	}
	return r
}
