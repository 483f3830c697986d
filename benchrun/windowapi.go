package benchrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
)

// BenchRequest is the body of POST /api/v1/benches. It mirrors the bench
// CLI's flags; everything except target is optional. Dataset files cannot
// be named here (a module's dataset_path can): the API must not read
// arbitrary files on the daemon's host.
type BenchRequest struct {
	Target string `json:"target"`
	// Module gives the request shape (dataset, lengths, sampling, headers);
	// default: the target's first module. The dataset fields override it.
	Module           string   `json:"module,omitempty"`
	DatasetName      string   `json:"dataset_name,omitempty"`
	RandomInputLen   *int     `json:"random_input_len,omitempty"`
	RandomOutputLen  *int     `json:"random_output_len,omitempty"`
	RandomRangeRatio *float64 `json:"random_range_ratio,omitempty"`
	NumPrompts       *int     `json:"num_prompts,omitempty"`
	// RequestRate is a number of requests per second or "inf"; default
	// bench.max_request_rate.
	RequestRate *RequestRate `json:"request_rate,omitempty"`
	Burstiness  *float64     `json:"burstiness,omitempty"`
	// MaxConcurrency defaults to bench.max_concurrency.
	MaxConcurrency *int `json:"max_concurrency,omitempty"`
	// MaxDuration is a duration string ("5m"); default bench.max_duration.
	MaxDuration      string   `json:"max_duration,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	WarmupRequests   *int     `json:"warmup_requests,omitempty"`
	DisableStream    bool     `json:"disable_stream,omitempty"`
	DisableIgnoreEOS bool     `json:"disable_ignore_eos,omitempty"`
	Compat           string   `json:"compat,omitempty"`
	Goodput          []string `json:"goodput,omitempty"`
	Tag              string   `json:"tag,omitempty"`
	// Sweep makes the window a sweep or an SLO search; nil: one run.
	Sweep *SweepRequest `json:"sweep,omitempty"`
}

// RequestRate is a rate in requests per second; its JSON is a number or
// "inf".
type RequestRate float64

// MarshalJSON writes +Inf as "inf".
func (r RequestRate) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(r), 1) {
		return []byte(`"inf"`), nil
	}
	return json.Marshal(float64(r))
}

// UnmarshalJSON reads a number or "inf".
func (r *RequestRate) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s == "inf" {
			*r = RequestRate(math.Inf(1))
			return nil
		}
		return fmt.Errorf("request_rate: want a number or \"inf\", got %q", s)
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return errors.New("request_rate: want a number or \"inf\"")
	}
	*r = RequestRate(f)
	return nil
}

// BenchSpec is a validated request with every default applied.
type BenchSpec struct {
	Request     BenchRequest // as sent, for the record
	Target      config.Target
	ModuleName  string
	Module      config.Module
	Dataset     string
	InputLen    int
	OutputLen   int
	RangeRatio  float64
	NumPrompts  int
	RequestRate float64 // +Inf: all at once
	Burstiness  float64
	// MaxConcurrency and MaxDuration are always set (the configured limits
	// are the defaults), so that a run is bounded.
	MaxConcurrency int
	MaxDuration    time.Duration
	Seed           int64
	WarmupRequests int
	// Sweep is the validated sweep or SLO search; nil for one run.
	Sweep *SweepSpec
}

// apiError is an error with its HTTP status; its message names the field
// or the limit.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, a ...any) *apiError {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func overLimit(format string, a ...any) *apiError {
	return &apiError{http.StatusUnprocessableEntity, fmt.Sprintf(format, a...)}
}

// Bounds of fields that have no configured limit, so that a request cannot
// make the daemon build a prompt set that does not fit in memory.
const (
	maxBenchTokens  = 1 << 17 // random_input_len, random_output_len
	maxBenchTag     = 256
	maxBenchWarmup  = 64
	maxBenchGoodput = 3
)

// benchDatasets are the datasets a bench request may name without a file.
var benchDatasets = []string{"random", "random-ids", "generated-shared-prefix", "image", "fixed"}

// decodeBenchRequest reads a body strictly: unknown fields, trailing data,
// a body over limit bytes and wrong types are errors naming what is wrong.
func decodeBenchRequest(r io.Reader, limit int64) (BenchRequest, *apiError) {
	var req BenchRequest
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return req, badRequest("read body: %v", err)
	}
	if int64(len(b)) > limit {
		// The payload size is one of the configured bench limits, and every
		// limit answers 422 (issue 6), not 413.
		return req, overLimit("body exceeds bench.max_body_bytes (%d bytes)", limit)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return req, badRequest("%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
		case errors.As(err, &se):
			return req, badRequest("malformed JSON at byte %d: %v", se.Offset, err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return req, badRequest("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return req, badRequest("malformed JSON: the body ends early")
		case errors.Is(err, io.EOF):
			return req, badRequest("empty body: want a JSON object with at least \"target\"")
		}
		return req, badRequest("decode body: %v", err)
	}
	if dec.More() {
		return req, badRequest("trailing data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, badRequest("trailing data after the JSON object")
	}
	return req, nil
}

// validate applies defaults and checks every field: a malformed value is a
// 400 naming the field, a value over a configured limit a 422 naming it.
func (req BenchRequest) validate(cfg *config.Config) (BenchSpec, *apiError) {
	lim := cfg.Bench
	s := BenchSpec{Request: req}
	if req.Target == "" {
		return s, badRequest("target: must be set")
	}
	t, ok := cfg.Target(req.Target)
	if !ok {
		return s, badRequest("target: no configured target %q", exporter.TruncateUTF8(req.Target, 100))
	}
	s.Target = t
	s.ModuleName = req.Module
	if s.ModuleName == "" {
		if len(t.Modules) == 0 {
			return s, badRequest("module: target %q has no module; name one", t.Name)
		}
		s.ModuleName = t.Modules[0]
	}
	m, ok := cfg.Modules[s.ModuleName]
	if !ok {
		return s, badRequest("module: no configured module %q", exporter.TruncateUTF8(s.ModuleName, 100))
	}
	s.Module = m
	s.Dataset, s.InputLen, s.OutputLen, s.RangeRatio = m.Dataset, m.InputLen, m.OutputLen, m.RangeRatio
	if req.DatasetName != "" {
		if !slices.Contains(benchDatasets, req.DatasetName) {
			return s, badRequest("dataset_name: %q is not one of %s (datasets that read files come from a module)", exporter.TruncateUTF8(req.DatasetName, 100), strings.Join(benchDatasets, ", "))
		}
		s.Dataset = req.DatasetName
	}
	intIn := func(name string, p *int, lo, hi int, dst *int) *apiError {
		if p == nil {
			return nil
		}
		if *p < lo || *p > hi {
			return badRequest("%s: must be between %d and %d, got %d", name, lo, hi, *p)
		}
		*dst = *p
		return nil
	}
	if e := intIn("random_input_len", req.RandomInputLen, 1, maxBenchTokens, &s.InputLen); e != nil {
		return s, e
	}
	if e := intIn("random_output_len", req.RandomOutputLen, 1, maxBenchTokens, &s.OutputLen); e != nil {
		return s, e
	}
	if p := req.RandomRangeRatio; p != nil {
		if !(*p >= 0 && *p <= 1) {
			return s, badRequest("random_range_ratio: must be in [0, 1], got %v", *p)
		}
		s.RangeRatio = *p
	}
	s.NumPrompts = min(1000, lim.MaxPrompts)
	if p := req.NumPrompts; p != nil {
		if *p < 1 {
			return s, badRequest("num_prompts: must be at least 1, got %d", *p)
		}
		if *p > lim.MaxPrompts {
			return s, overLimit("num_prompts: %d exceeds bench.max_prompts (%d)", *p, lim.MaxPrompts)
		}
		s.NumPrompts = *p
	}
	s.RequestRate = lim.MaxRequestRate
	if p := req.RequestRate; p != nil {
		v := float64(*p)
		if math.IsNaN(v) || v <= 0 {
			return s, badRequest("request_rate: must be > 0 or \"inf\", got %v", v)
		}
		if v > lim.MaxRequestRate {
			return s, overLimit("request_rate: %s exceeds bench.max_request_rate (%v)", prober.PyFloat(v), lim.MaxRequestRate)
		}
		s.RequestRate = v
	}
	s.Burstiness = 1
	if p := req.Burstiness; p != nil {
		if !(*p > 0) || math.IsInf(*p, 0) || *p > 1e6 {
			return s, badRequest("burstiness: must be > 0 and at most 1e6, got %v", *p)
		}
		s.Burstiness = *p
	}
	s.MaxConcurrency = lim.MaxConcurrency
	if p := req.MaxConcurrency; p != nil {
		if *p < 1 {
			return s, badRequest("max_concurrency: must be at least 1, got %d", *p)
		}
		if *p > lim.MaxConcurrency {
			return s, overLimit("max_concurrency: %d exceeds bench.max_concurrency (%d)", *p, lim.MaxConcurrency)
		}
		s.MaxConcurrency = *p
	}
	s.MaxDuration = time.Duration(lim.MaxDuration)
	if req.MaxDuration != "" {
		d, err := model.ParseDuration(req.MaxDuration)
		if err != nil || d <= 0 {
			return s, badRequest("max_duration: want a positive duration such as \"5m\", got %q", exporter.TruncateUTF8(req.MaxDuration, 40))
		}
		if d > lim.MaxDuration {
			return s, overLimit("max_duration: %s exceeds bench.max_duration (%s)", d, lim.MaxDuration)
		}
		s.MaxDuration = time.Duration(d)
	}
	s.Seed = m.Seed
	if req.Seed != nil {
		s.Seed = *req.Seed
	}
	s.WarmupRequests = 1
	if e := intIn("warmup_requests", req.WarmupRequests, 0, maxBenchWarmup, &s.WarmupRequests); e != nil {
		return s, e
	}
	if len(req.Tag) > maxBenchTag {
		return s, badRequest("tag: at most %d bytes, got %d", maxBenchTag, len(req.Tag))
	}
	if len(req.Goodput) > maxBenchGoodput {
		return s, badRequest("goodput: at most %d SLOs (ttft, tpot, e2el)", maxBenchGoodput)
	}
	if _, err := bench.ParseGoodput(req.Goodput); err != nil {
		return s, badRequest("goodput: %v", err)
	}
	if len(req.Compat) > maxBenchTag {
		return s, badRequest("compat: at most %d bytes", maxBenchTag)
	}
	if _, err := bench.ParseCompat(req.Compat); err != nil {
		return s, badRequest("compat: %v", err)
	}
	if req.Sweep != nil {
		w, e := req.Sweep.validate(lim, req)
		if e != nil {
			return s, e
		}
		s.Sweep = w
	}
	return s, nil
}

// benchIDRe is what an id looks like; anything else is rejected before it
// gets near a file name.
var benchIDRe = regexp.MustCompile(`^[0-9a-f]{24}$`)

func validBenchID(id string) bool { return benchIDRe.MatchString(id) }
