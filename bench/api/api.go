package api

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
	"unicode/utf8"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// The body of POST /api/v1/benches is a runner.Spec's JSON (its keys
// are the bench flags' names with underscores) limited to BodyKeys, plus
// "target" (required) and "module" (default: the target's first). It is
// decoded as a patch over the module's bench (runner.ModuleSpec) with
// the daemon's limits as defaults, then checked once by Spec.Validate and
// against the limits. Dataset files, addresses, headers, bodies and the
// server-metrics endpoints cannot be named here (a module's or a target's
// can): the API must not read arbitrary files on the daemon's host, fetch
// URLs of the caller's choosing or send what its config does not.

// BodyKeys are the Spec keys a bench window's body may set. The CLI's
// --remote sends exactly these and refuses its other flags.
var BodyKeys = []string{
	"dataset_name", "random_input_len", "random_output_len", "random_range_ratio", "num_prompts",
	"request_rate", "burstiness", "max_concurrency", "max_duration", "seed", "warmup_requests",
	"disable_stream", "disable_ignore_eos", "compat", "goodput", "tag", "sweep", "runs", "runs_pause_sec",
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
	maxTokens  = 1 << 17 // random_input_len, random_output_len
	maxTag     = 256
	maxWarmup  = 64
	maxGoodput = 3
	maxSweep   = 16 // points of a sweep; each may run for bench.max_duration
	apiSLOMax  = 12 // the default of slo_max_points
	// maxPointSamples bounds slo_point_samples: a point's prompts grow
	// with it, and bench.max_prompts bounds them anyway.
	maxPointSamples = 1000
	maxCooldown     = 5 * time.Minute
	// maxRuns bounds a window's runs: each may run for
	// bench.max_duration, as a sweep's points may.
	maxRuns = maxSweep
	// maxRunsPause bounds the wait between two runs, as a sweep's
	// cooldown is bounded.
	maxRunsPause = maxCooldown
)

// datasetNames are the datasets a body may name without a file.
var datasetNames = []string{"random", "random-ids", "generated-shared-prefix", "image", "fixed"}

// Request is a decoded, checked body: the bench to run on a target.
type Request struct {
	Target     config.Target
	ModuleName string
	Spec       runner.Spec
	// Body is the body as sent (compacted), kept in the run's record.
	Body json.RawMessage
}

// readBody reads a body strictly into its top-level keys: a body over
// limit bytes, malformed JSON, trailing data and a non-object are errors
// naming what is wrong.
func readBody(r io.Reader, limit int64) (map[string]json.RawMessage, json.RawMessage, *apiError) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, nil, badRequest("read body: %v", err)
	}
	if int64(len(b)) > limit {
		// The payload size is one of the configured bench limits, and
		// every limit answers 422, not 413.
		return nil, nil, overLimit("body exceeds bench.max_body_bytes (%d bytes)", limit)
	}
	// JSON is UTF-8, and the body is kept in the run's record: invalid
	// bytes would make the record, and the list that holds it, unreadable
	// to strict decoders.
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, nil, badRequest("the body is not valid UTF-8 (first invalid byte at offset %d)", off)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys map[string]json.RawMessage
	if err := dec.Decode(&keys); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return nil, nil, badRequest("want a JSON object, got JSON %s", te.Value)
		case errors.As(err, &se):
			return nil, nil, badRequest("malformed JSON at byte %d: %v", se.Offset, err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, nil, badRequest("malformed JSON: the body ends early")
		case errors.Is(err, io.EOF):
			return nil, nil, badRequest("empty body: want a JSON object with at least \"target\"")
		}
		return nil, nil, badRequest("decode body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, badRequest("trailing data after the JSON object")
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, b)
	return keys, compact.Bytes(), nil
}

// decodeRequest reads and checks a body against cfg: a malformed value is
// a 400 naming the field, a value over a configured limit a 422 naming
// it and the limit.
func decodeRequest(r io.Reader, cfg *config.Config) (Request, *apiError) {
	var req Request
	keys, body, e := readBody(r, cfg.Bench.MaxBodyBytes)
	if e != nil {
		return req, e
	}
	req.Body = body
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if k != "target" && k != "module" && !slices.Contains(BodyKeys, k) {
			return req, badRequest("unknown field %q (a body may set target, module and %s)", prober.TruncateUTF8(k, 100), strings.Join(BodyKeys, ", "))
		}
	}
	str := func(k string) (string, *apiError) {
		raw, ok := keys[k]
		if !ok {
			return "", nil
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", badRequest("%s: want string, got JSON %s", k, prober.TruncateUTF8(string(raw), 40))
		}
		return s, nil
	}
	target, e := str("target")
	if e != nil {
		return req, e
	}
	if target == "" {
		return req, badRequest("target: must be set")
	}
	t, ok := cfg.Target(target)
	if !ok {
		return req, badRequest("target: no configured target %q", prober.TruncateUTF8(target, 100))
	}
	req.Target = t
	if req.ModuleName, e = str("module"); e != nil {
		return req, e
	}
	if req.ModuleName == "" {
		if len(t.Modules) == 0 {
			return req, badRequest("module: target %q has no module; name one", t.Name)
		}
		req.ModuleName = t.Modules[0]
	}
	m, ok := cfg.Modules[req.ModuleName]
	if !ok {
		return req, badRequest("module: no configured module %q", prober.TruncateUTF8(req.ModuleName, 100))
	}

	// The module's bench, with the daemon's limits as the defaults, so
	// that a window is bounded whatever the body leaves out. Probed
	// targets answer already: a ready check would only hold the slot.
	lim := cfg.Bench
	s := runner.ModuleSpec(t, m)
	s.NumPrompts = min(1000, lim.MaxPrompts)
	s.RequestRate = lim.MaxRequestRate
	s.MaxConcurrency = lim.MaxConcurrency
	s.MaxDuration = time.Duration(lim.MaxDuration)
	s.ReadyCheckTimeout = 0
	for _, k := range names {
		if k == "target" || k == "module" || k == "sweep" {
			continue
		}
		if e := patch(&s, k, keys[k]); e != nil {
			return req, e
		}
	}
	if _, ok := keys["random_output_len"]; ok {
		s.FixedOutputLen = s.RandomOutputLen // the fixed dataset's length too
	}
	if raw, ok := keys["sweep"]; ok {
		w, e := decodeSweep(raw, lim)
		if e != nil {
			return req, e
		}
		s.Sweep = w
		if w.Mode == bench.SweepSLO {
			// As the CLI: num_prompts fixes every point's size; without
			// it, points are sized by samples, within bench.max_prompts.
			var sk map[string]json.RawMessage
			_ = json.Unmarshal(raw, &sk) // decodeSweep read it already
			_, samplesGiven := sk["slo_point_samples"]
			_, promptsGiven := keys["num_prompts"]
			switch {
			case promptsGiven && !samplesGiven:
				w.PointSamples = 0
			case !promptsGiven && w.PointSamples > 0:
				s.NumPrompts = min(w.PointPrompts(), lim.MaxPrompts)
			}
		}
	}
	if e := checkLimits(&s, keys, lim); e != nil {
		return req, e
	}
	if e := checkMemory(&s); e != nil {
		return req, e
	}
	if err := s.Validate(); err != nil {
		var p runner.Problems
		if errors.As(err, &p) {
			return req, badRequest("%s", p.Error())
		}
		return req, badRequest("%v", err)
	}
	req.Spec = s
	return req, nil
}

// patch decodes one key of the body onto s, naming the key in an error.
func patch(s *runner.Spec, key string, raw json.RawMessage) *apiError {
	if key == "compat" && len(raw) > maxTag+2 {
		return badRequest("compat: at most %d bytes", maxTag)
	}
	var str string
	if key == "request_rate" && json.Unmarshal(raw, &str) == nil && str != "inf" {
		// A record's rate may read "Infinity" (Python's); a body's is
		// a number or "inf", as documented.
		return badRequest("request_rate: want a number or \"inf\", got %q", prober.TruncateUTF8(str, 40))
	}
	one, _ := json.Marshal(map[string]json.RawMessage{key: raw})
	if err := json.Unmarshal(one, s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest("%s: want %s, got JSON %s", key, te.Type, te.Value)
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if key == "max_duration" {
			msg = "want a positive duration such as \"5m\", got " + prober.TruncateUTF8(string(raw), 40)
		}
		return badRequest("%s: %s", key, msg)
	}
	return nil
}

// checkLimits holds a patched Spec to the daemon's limits and to the
// bounds of fields that have none.
func checkLimits(s *runner.Spec, keys map[string]json.RawMessage, lim config.Bench) *apiError {
	given := func(k string) bool { _, ok := keys[k]; return ok }
	if given("dataset_name") && !slices.Contains(datasetNames, s.Dataset) {
		return badRequest("dataset_name: %q is not one of %s (datasets that read files come from a module)", prober.TruncateUTF8(s.Dataset, 100), strings.Join(datasetNames, ", "))
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"random_input_len", s.RandomInputLen}, {"random_output_len", s.RandomOutputLen}} {
		if given(f.key) && (f.v < 1 || f.v > maxTokens) {
			return badRequest("%s: must be between 1 and %d, got %d", f.key, maxTokens, f.v)
		}
	}
	if s.NumPrompts < 1 {
		return badRequest("num_prompts: must be at least 1, got %d", s.NumPrompts)
	}
	if s.NumPrompts > lim.MaxPrompts {
		return overLimit("num_prompts: %d exceeds bench.max_prompts (%d)", s.NumPrompts, lim.MaxPrompts)
	}
	if v := s.RequestRate; math.IsNaN(v) || v <= 0 {
		return badRequest("request_rate: must be > 0 or \"inf\", got %v", v)
	} else if v > lim.MaxRequestRate {
		return overLimit("request_rate: %s exceeds bench.max_request_rate (%v)", pyfmt.Float(v), lim.MaxRequestRate)
	}
	if v := s.Burstiness; !(v > 0) || math.IsInf(v, 0) || v > 1e6 {
		return badRequest("burstiness: must be > 0 and at most 1e6, got %v", v)
	}
	if s.MaxConcurrency < 1 {
		return badRequest("max_concurrency: must be at least 1, got %d", s.MaxConcurrency)
	}
	if s.MaxConcurrency > lim.MaxConcurrency {
		return overLimit("max_concurrency: %d exceeds bench.max_concurrency (%d)", s.MaxConcurrency, lim.MaxConcurrency)
	}
	if s.MaxDuration <= 0 {
		return badRequest("max_duration: want a positive duration such as \"5m\", got %s", s.MaxDuration)
	}
	if s.MaxDuration > time.Duration(lim.MaxDuration) {
		return overLimit("max_duration: %s exceeds bench.max_duration (%s)", s.MaxDuration, lim.MaxDuration)
	}
	if s.WarmupRequests < 0 || s.WarmupRequests > maxWarmup {
		return badRequest("warmup_requests: must be between 0 and %d, got %d", maxWarmup, s.WarmupRequests)
	}
	if len(s.Tag) > maxTag {
		return badRequest("tag: at most %d bytes, got %d", maxTag, len(s.Tag))
	}
	if len(s.Goodput) > maxGoodput {
		return badRequest("goodput: at most %d SLOs (ttft, tpot, e2el)", maxGoodput)
	}
	if s.Runs < 1 || s.Runs > maxRuns {
		return badRequest("runs: must be between 1 and %d (each run may last max_duration), got %d", maxRuns, s.Runs)
	}
	if s.RunsPause < 0 || s.RunsPause > maxRunsPause {
		return badRequest("runs_pause_sec: must be between 0 and %g, got %g", maxRunsPause.Seconds(), s.RunsPause.Seconds())
	}
	w := s.Sweep
	if w == nil {
		return nil
	}
	setsRate := w.Mode == bench.SweepRates || w.Mode == bench.SweepAuto || (w.Mode == bench.SweepSLO && w.By == bench.ByRequestRate)
	if setsRate && given("request_rate") {
		return badRequest("request_rate: a sweep over request rates sets the rate of each point; leave it out")
	}
	if !setsRate && given("max_concurrency") {
		return badRequest("max_concurrency: a sweep over concurrencies sets it per point; leave it out")
	}
	return nil
}

// decodeSweep reads the body's sweep onto the API's defaults and holds it
// to the limits: every point may run for bench.max_duration, so the point
// count bounds the window.
func decodeSweep(raw json.RawMessage, lim config.Bench) (*runner.SweepSpec, *apiError) {
	w := runner.DefaultSweepSpec()
	w.MaxPoints = apiSLOMax
	w.Max = math.NaN() // the limit of what is searched, below
	if err := json.Unmarshal(raw, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, badRequest("sweep.%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if k, _, ok := strings.Cut(msg, ":"); ok && !strings.Contains(k, " ") {
			return nil, badRequest("sweep.%s", msg) // the sweep's own key
		}
		return nil, badRequest("sweep: %s", msg)
	}
	if w.Cooldown < 0 || w.Cooldown > maxCooldown {
		return nil, badRequest("sweep.cooldown: want a duration from 0 to %s such as \"2s\", got %s", maxCooldown, w.Cooldown)
	}
	switch w.Mode {
	case bench.SweepRates, bench.SweepConcurrency:
		key, limit := "request_rates", lim.MaxRequestRate
		if w.Mode == bench.SweepConcurrency {
			key, limit = "max_concurrency", float64(lim.MaxConcurrency)
		}
		if len(w.Values) > maxSweep {
			return nil, overLimit("sweep.%s: %d points, at most %d", key, len(w.Values), maxSweep)
		}
		for i, v := range w.Values {
			if !(v > 0) {
				return nil, badRequest("sweep.%s[%d]: must be > 0, got %v", key, i, v)
			}
			if v > limit {
				return nil, overLimit("sweep.%s[%d]: %v exceeds %s (%v)", key, i, v, limitName(key), limit)
			}
		}
	case bench.SweepAuto:
		if w.Points < 1 || w.Points > maxSweep-2 {
			return nil, badRequest("sweep.points: must be between 1 and %d, got %d", maxSweep-2, w.Points)
		}
	case bench.SweepSLO:
		limit := lim.MaxRequestRate
		if w.By == bench.ByMaxConcurrency {
			limit = float64(lim.MaxConcurrency)
		}
		if math.IsNaN(w.Max) {
			w.Max = limit
			if math.IsInf(w.Max, 1) {
				w.Max = runner.DefaultSLOMax
			}
		} else if !(w.Max > 0) {
			return nil, badRequest("sweep.slo_max: must be > 0, got %v", w.Max)
		} else if w.Max > limit {
			return nil, overLimit("sweep.slo_max: %v exceeds the limit of what is searched (%v)", w.Max, limit)
		}
		if !(w.Precision > 0 && w.Precision < 1) {
			return nil, badRequest("sweep.slo_precision: must be in (0, 1), got %v", w.Precision)
		}
		if w.Start != runner.DefaultSLOStart && !(w.Start > 0 && w.Start <= w.Max) {
			// 0, the default, is no value: the search starts from its anchors.
			return nil, badRequest("sweep.slo_start: must be > 0 and at most slo_max (%v), got %v", w.Max, w.Start)
		}
		w.Start = min(w.Start, w.Max)
		if w.MaxPoints < 2 || w.MaxPoints > maxSweep {
			return nil, badRequest("sweep.slo_max_points: must be between 2 and %d, got %d", maxSweep, w.MaxPoints)
		}
		if w.PointSamples < 0 || w.PointSamples > maxPointSamples {
			return nil, badRequest("sweep.slo_point_samples: must be between 0 and %d, got %d", maxPointSamples, w.PointSamples)
		}
		if w.PointTime <= 0 {
			return nil, badRequest("sweep.slo_point_time: want a positive duration such as \"30s\", got %s", w.PointTime)
		}
		var sk map[string]json.RawMessage
		_ = json.Unmarshal(raw, &sk) // it decoded above
		if _, given := sk["slo_point_time"]; !given && lim.MaxDuration > 0 {
			w.PointTime = min(w.PointTime, time.Duration(lim.MaxDuration))
		}
		if m := time.Duration(lim.MaxDuration); m > 0 && w.PointTime > m {
			return nil, overLimit("sweep.slo_point_time: %s exceeds bench.max_duration (%s)", w.PointTime, m)
		}
		if w.Budget < 0 {
			return nil, badRequest("sweep.slo_budget: want a duration such as \"5m\" (0: none), got %s", w.Budget)
		}
	}
	return &w, nil
}

func limitName(key string) string {
	if key == "max_concurrency" {
		return "bench.max_concurrency"
	}
	return "bench.max_request_rate"
}

// benchIDRe is what an id looks like; anything else is rejected before it
// gets near a file name.
var benchIDRe = regexp.MustCompile(`^[0-9a-f]{24}$`)

func validBenchID(id string) bool { return benchIDRe.MatchString(id) }
