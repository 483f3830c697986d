package benchrun

import (
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/exporter"
)

// SweepRequest is the "sweep" object of POST /api/v1/benches: the bench
// CLI's sweep and SLO search flags. Exactly one of RequestRates,
// MaxConcurrency, Auto and SLO is set. Every point is a full run with the
// request's other settings (num_prompts, max_duration, ...), so a sweep's
// load is bounded by its point count times bench.max_duration.
type SweepRequest struct {
	RequestRates   []float64 `json:"request_rates,omitempty"`
	MaxConcurrency []int     `json:"max_concurrency,omitempty"`
	Auto           bool      `json:"auto,omitempty"`
	Points         *int      `json:"points,omitempty"`
	SLO            string    `json:"slo,omitempty"`
	// SLOSearch is what the search varies: "request_rate" (default) or
	// "max_concurrency".
	SLOSearch    string   `json:"slo_search,omitempty"`
	SLOPrecision *float64 `json:"slo_precision,omitempty"`
	SLOStart     *float64 `json:"slo_start,omitempty"`
	// SLOMax defaults to the limit of what is searched:
	// bench.max_request_rate or bench.max_concurrency.
	SLOMax       *float64 `json:"slo_max,omitempty"`
	SLOMaxPoints *int     `json:"slo_max_points,omitempty"`
	// Cooldown is a duration string ("2s"), the pause between points.
	Cooldown string `json:"cooldown,omitempty"`
}

// Bounds of a daemon sweep: each point may run for bench.max_duration, so
// the point count bounds the whole window.
const (
	maxBenchSweepPoints  = 16
	defaultAPISLOPoints  = 12
	maxBenchSweepCooldwn = 5 * time.Minute
)

// validate turns a sweep request into a SweepSpec within the configured
// limits; s is the run's spec with its defaults applied.
func (r *SweepRequest) validate(lim config.Bench, req BenchRequest) (*SweepSpec, *apiError) {
	n := 0
	for _, set := range []bool{len(r.RequestRates) > 0, len(r.MaxConcurrency) > 0, r.Auto, r.SLO != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, badRequest("sweep: set exactly one of request_rates, max_concurrency, auto and slo")
	}
	w := &SweepSpec{Points: DefaultSweepPoints, Cooldown: DefaultSweepCooldown, Precision: DefaultSLOPrecision,
		Start: DefaultSLOStart, MaxPoints: defaultAPISLOPoints}
	if r.Cooldown != "" {
		d, err := model.ParseDuration(r.Cooldown)
		if err != nil || time.Duration(d) > maxBenchSweepCooldwn {
			return nil, badRequest("sweep.cooldown: want a duration from 0 to %s such as \"2s\", got %q", maxBenchSweepCooldwn, exporter.TruncateUTF8(r.Cooldown, 40))
		}
		w.Cooldown = time.Duration(d)
	}
	byRate := func() *apiError {
		if req.RequestRate != nil {
			return badRequest("request_rate: a sweep over request rates sets the rate of each point; leave it out")
		}
		return nil
	}
	switch {
	case len(r.RequestRates) > 0:
		if e := byRate(); e != nil {
			return nil, e
		}
		if len(r.RequestRates) > maxBenchSweepPoints {
			return nil, overLimit("sweep.request_rates: %d points, at most %d", len(r.RequestRates), maxBenchSweepPoints)
		}
		w.Mode = bench.SweepRates
		for i, v := range r.RequestRates {
			if !(v > 0) {
				return nil, badRequest("sweep.request_rates[%d]: must be > 0, got %v", i, v)
			}
			if v > lim.MaxRequestRate {
				return nil, overLimit("sweep.request_rates[%d]: %v exceeds bench.max_request_rate (%v)", i, v, lim.MaxRequestRate)
			}
			w.Values = append(w.Values, v)
		}
	case len(r.MaxConcurrency) > 0:
		if len(r.MaxConcurrency) > maxBenchSweepPoints {
			return nil, overLimit("sweep.max_concurrency: %d points, at most %d", len(r.MaxConcurrency), maxBenchSweepPoints)
		}
		if req.MaxConcurrency != nil {
			return nil, badRequest("max_concurrency: a sweep over concurrencies sets it per point; leave it out")
		}
		w.Mode = bench.SweepConcurrency
		for i, v := range r.MaxConcurrency {
			if v < 1 {
				return nil, badRequest("sweep.max_concurrency[%d]: must be at least 1, got %d", i, v)
			}
			if v > lim.MaxConcurrency {
				return nil, overLimit("sweep.max_concurrency[%d]: %d exceeds bench.max_concurrency (%d)", i, v, lim.MaxConcurrency)
			}
			w.Values = append(w.Values, float64(v))
		}
	case r.Auto:
		if e := byRate(); e != nil {
			return nil, e
		}
		w.Mode = bench.SweepAuto
		if r.Points != nil {
			if *r.Points < 1 || *r.Points > maxBenchSweepPoints-2 {
				return nil, badRequest("sweep.points: must be between 1 and %d, got %d", maxBenchSweepPoints-2, *r.Points)
			}
			w.Points = *r.Points
		}
	default:
		w.Mode = bench.SweepSLO
		slo, err := bench.ParseSLO(r.SLO)
		if err != nil {
			return nil, badRequest("sweep.slo: %v", err)
		}
		w.SLO = slo
		limit := lim.MaxRequestRate
		switch r.SLOSearch {
		case "", bench.ByRequestRate:
			if e := byRate(); e != nil {
				return nil, e
			}
			w.By = bench.ByRequestRate
		case bench.ByMaxConcurrency:
			if req.MaxConcurrency != nil {
				return nil, badRequest("max_concurrency: an SLO search over concurrencies sets it per point; leave it out")
			}
			w.By, limit = bench.ByMaxConcurrency, float64(lim.MaxConcurrency)
		default:
			return nil, badRequest("sweep.slo_search: want request_rate or max_concurrency, got %q", exporter.TruncateUTF8(r.SLOSearch, 40))
		}
		w.Max = limit
		if math.IsInf(w.Max, 1) {
			w.Max = DefaultSLOMax
		}
		if p := r.SLOPrecision; p != nil {
			if !(*p > 0 && *p < 1) {
				return nil, badRequest("sweep.slo_precision: must be in (0, 1), got %v", *p)
			}
			w.Precision = *p
		}
		if p := r.SLOMax; p != nil {
			if !(*p > 0) {
				return nil, badRequest("sweep.slo_max: must be > 0, got %v", *p)
			}
			if *p > limit {
				return nil, overLimit("sweep.slo_max: %v exceeds the limit of what is searched (%v)", *p, limit)
			}
			w.Max = *p
		}
		if p := r.SLOStart; p != nil {
			if !(*p > 0 && *p <= w.Max) {
				return nil, badRequest("sweep.slo_start: must be > 0 and at most slo_max (%v), got %v", w.Max, *p)
			}
			w.Start = *p
		}
		w.Start = min(w.Start, w.Max)
		if p := r.SLOMaxPoints; p != nil {
			if *p < 2 || *p > maxBenchSweepPoints {
				return nil, badRequest("sweep.slo_max_points: must be between 2 and %d, got %d", maxBenchSweepPoints, *p)
			}
			w.MaxPoints = *p
		}
	}
	return w, nil
}

// SweepOutput is a finished sweep or SLO search as the API shows it: every
// point's bench_serving record (with its "sweep" object) and, for a
// search, the answer.
type SweepOutput struct {
	Mode string `json:"mode"`
	By   string `json:"by"`
	// Records are the points' JSONL records in the order run.
	Records []json.RawMessage `json:"records"`
	// Capacity is the highest value at which every objective held (0: none
	// did) and Bound the lowest that failed (0: none did); Answer says it
	// in words, with what broke first and the cost against a fixed grid.
	Capacity *float64        `json:"capacity,omitempty"`
	Bound    *float64        `json:"bound,omitempty"`
	Broke    []bench.Verdict `json:"broke,omitempty"`
	Answer   string          `json:"answer,omitempty"`
}

// sweepOutput builds the API's view of a sweep and the headline the
// gauges export: the completed and failed requests of every point, the
// throughput of the point that reached the highest output throughput,
// and, for a search, the capacity.
func sweepOutput(res *SweepResult, records []json.RawMessage) (*SweepOutput, exporter.BenchHeadline) {
	o := &SweepOutput{Mode: res.Spec.Mode, Records: records}
	var h exporter.BenchHeadline
	for _, p := range res.Points {
		o.By = p.Info.By
		h.Completed += p.Summary.Completed
		h.Failed += p.Summary.Failed
		if p.Summary.OutputThroughput >= h.OutputThroughput {
			h.OutputThroughput, h.RequestThroughput = p.Summary.OutputThroughput, p.Summary.RequestThroughput
		}
	}
	if res.Spec.Mode == bench.SweepSLO && len(res.Points) > 0 {
		capacity, bound := res.Capacity, res.Bound
		o.Capacity, o.Bound, o.Broke = &capacity, &bound, res.Broke
		o.Answer = strings.TrimSpace(res.answer(o.By))
		h.Capacity = &exporter.BenchCapacity{By: o.By, Value: capacity}
	}
	return o, h
}
