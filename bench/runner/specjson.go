package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// A Spec's JSON is a bench window's body (POST /api/v1/benches) and what
// the CLI's --remote sends. Its keys are the flag names with underscores;
// the values that a flag writes as text keep that text: a rate is a
// number or "inf" (bench.Rate, as the records write it), --max-duration and the sweep's cooldown are duration
// strings ("5m"), the *_sec timeouts are seconds, --compat is its list,
// --goodput its "metric:ms" strings and --slo its expression.
//
// Decoding is a patch: fields the JSON leaves out keep the value the Spec
// had, so a body decodes onto the defaults its caller chose.

// jsonDuration is a duration written as Prometheus writes one ("5m").
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(model.Duration(d).String())
}

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("want a duration string such as \"5m\"")
	}
	v, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"5m\", got %q", prober.TruncateUTF8(s, 40))
	}
	*d = jsonDuration(v)
	return nil
}

// jsonSeconds is a duration written as seconds, as the *_sec flags are.
type jsonSeconds time.Duration

func (d jsonSeconds) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Seconds())
}

func (d *jsonSeconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return errors.New("want a number of seconds")
	}
	*d = jsonSeconds(Seconds(f))
	return nil
}

// Seconds converts a flag's seconds to a duration: NaN and values at or
// below 0 are 0, values past the largest duration are the largest.
func Seconds(f float64) time.Duration {
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	if f > float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f * float64(time.Second))
}

// jsonCompat is --compat's value: "all" or a comma-separated list.
type jsonCompat bench.Compat

func (c jsonCompat) MarshalJSON() ([]byte, error) {
	return json.Marshal(strings.Join(bench.Compat(c).Names(), ","))
}

func (c *jsonCompat) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("want a string: all, or a comma-separated list")
	}
	v, err := bench.ParseCompat(s)
	*c = jsonCompat(v)
	return err
}

// jsonGoodput is --goodput's values: ["ttft:500", ...] (milliseconds).
type jsonGoodput bench.Goodput

func (g jsonGoodput) MarshalJSON() ([]byte, error) {
	out := make([]string, 0, len(g))
	for k, v := range g {
		out = append(out, k+":"+strconv.FormatFloat(v, 'g', -1, 64))
	}
	sort.Strings(out)
	return json.Marshal(out)
}

func (g *jsonGoodput) UnmarshalJSON(b []byte) error {
	var s []string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("want a list of \"metric:milliseconds\" strings")
	}
	v, err := bench.ParseGoodput(s)
	if len(v) == 0 {
		v = nil
	}
	*g = jsonGoodput(v)
	return err
}

// specJSON is a Spec with the fields whose JSON form is not their Go
// form shadowed (a field of the outer struct wins over the embedded one
// of the same key).
type specJSON struct {
	*plainSpec
	RequestRate       bench.Rate   `json:"request_rate"`
	MaxDuration       jsonDuration `json:"max_duration"`
	FlushCacheTimeout jsonSeconds  `json:"flush_cache_timeout"`
	ReadyCheckTimeout jsonSeconds  `json:"ready_check_timeout_sec"`
	RequestTimeout    jsonSeconds  `json:"request_timeout_sec"`
	RunsPause         jsonSeconds  `json:"runs_pause_sec"`
	Compat            jsonCompat   `json:"compat"`
	Goodput           jsonGoodput  `json:"goodput"`
}

type plainSpec Spec

func (s *Spec) json() *specJSON {
	return &specJSON{
		plainSpec:         (*plainSpec)(s),
		RequestRate:       bench.Rate(s.RequestRate),
		MaxDuration:       jsonDuration(s.MaxDuration),
		FlushCacheTimeout: jsonSeconds(s.FlushCacheTimeout),
		ReadyCheckTimeout: jsonSeconds(s.ReadyCheckTimeout),
		RequestTimeout:    jsonSeconds(s.RequestTimeout),
		RunsPause:         jsonSeconds(s.RunsPause),
		Compat:            jsonCompat(s.Compat),
		Goodput:           jsonGoodput(s.Goodput),
	}
}

// MarshalJSON writes every field in its JSON form.
func (s Spec) MarshalJSON() ([]byte, error) { return json.Marshal(s.json()) }

// UnmarshalJSON decodes a patch onto s (see the type's comment).
func (s *Spec) UnmarshalJSON(b []byte) error {
	j := s.json()
	if err := json.Unmarshal(b, j); err != nil {
		return err
	}
	s.RequestRate = float64(j.RequestRate)
	s.MaxDuration = time.Duration(j.MaxDuration)
	s.FlushCacheTimeout = time.Duration(j.FlushCacheTimeout)
	s.ReadyCheckTimeout = time.Duration(j.ReadyCheckTimeout)
	s.RequestTimeout = time.Duration(j.RequestTimeout)
	s.RunsPause = time.Duration(j.RunsPause)
	s.Compat = bench.Compat(j.Compat)
	s.Goodput = bench.Goodput(j.Goodput)
	// An older dataset name runs (and is recorded) as the dataset it names.
	s.Dataset = datasets.Canonical(s.Dataset)
	return nil
}

// sweepJSON is a SweepSpec's JSON: one key per way of sweeping (exactly
// one is set) and the search's bounds, as the CLI's sweep flags.
type sweepJSON struct {
	RequestRates   []float64 `json:"request_rates,omitempty"`
	MaxConcurrency []int     `json:"max_concurrency,omitempty"`
	Auto           bool      `json:"auto,omitempty"`
	Points         *int      `json:"points,omitempty"`
	SLO            string    `json:"slo,omitempty"`
	// SLOSearch is what the search varies: request_rate (the default) or
	// max_concurrency.
	SLOSearch    string   `json:"slo_search,omitempty"`
	SLOPrecision *float64 `json:"slo_precision,omitempty"`
	SLOStart     *float64 `json:"slo_start,omitempty"`
	SLOMax       *float64 `json:"slo_max,omitempty"`
	SLOMaxPoints *int     `json:"slo_max_points,omitempty"`
	// SLOPointSamples, SLOPointTime and SLOBudget size a search's points
	// and bound the whole search (SweepSpec.PointSamples, PointTime and
	// Budget).
	SLOPointSamples *int          `json:"slo_point_samples,omitempty"`
	SLOPointTime    *jsonDuration `json:"slo_point_time,omitempty"`
	SLOBudget       *jsonDuration `json:"slo_budget,omitempty"`
	SLOIdleTimeout  *jsonDuration `json:"slo_idle_timeout,omitempty"`
	Cooldown        *jsonDuration `json:"cooldown,omitempty"`
}

// MarshalJSON writes the sweep's mode and every setting that is not its
// default, so that a daemon applies its own limits to the rest.
func (w SweepSpec) MarshalJSON() ([]byte, error) {
	var j sweepJSON
	switch w.Mode {
	case bench.SweepRates:
		j.RequestRates = w.Values
	case bench.SweepConcurrency:
		for _, v := range w.Values {
			j.MaxConcurrency = append(j.MaxConcurrency, int(v))
		}
	case bench.SweepAuto:
		j.Auto = true
		if w.Points != DefaultSweepPoints {
			j.Points = &w.Points
		}
	case bench.SweepSLO:
		j.SLO, j.SLOSearch = w.SLO.String(), w.By
		if w.Precision != DefaultSLOPrecision {
			j.SLOPrecision = &w.Precision
		}
		if w.Start != DefaultSLOStart {
			j.SLOStart = &w.Start
		}
		if w.Max != DefaultSLOMax {
			j.SLOMax = &w.Max
		}
		if w.MaxPoints != DefaultSLOMaxPoints {
			j.SLOMaxPoints = &w.MaxPoints
		}
		if w.PointSamples != DefaultSLOPointSample {
			j.SLOPointSamples = &w.PointSamples
		}
		if w.PointTime != DefaultSLOPointTime {
			d := jsonDuration(w.PointTime)
			j.SLOPointTime = &d
		}
		if w.Budget != DefaultSLOBudget {
			d := jsonDuration(w.Budget)
			j.SLOBudget = &d
		}
		if w.IdleTimeout != DefaultSLOIdleTimeout {
			d := jsonDuration(w.IdleTimeout)
			j.SLOIdleTimeout = &d
		}
	}
	if w.Cooldown != DefaultSweepCooldown {
		c := jsonDuration(w.Cooldown)
		j.Cooldown = &c
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a sweep onto w, whose unset settings keep their
// values (start from DefaultSweepSpec). Values that do not parse are
// errors here; ranges are Validate's.
func (w *SweepSpec) UnmarshalJSON(b []byte) error {
	var j sweepJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{len(j.RequestRates) > 0, len(j.MaxConcurrency) > 0, j.Auto, j.SLO != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("set exactly one of request_rates, max_concurrency, auto and slo")
	}
	switch {
	case len(j.RequestRates) > 0:
		w.Mode, w.Values = bench.SweepRates, j.RequestRates
	case len(j.MaxConcurrency) > 0:
		w.Mode, w.Values = bench.SweepConcurrency, nil
		for _, v := range j.MaxConcurrency {
			w.Values = append(w.Values, float64(v))
		}
	case j.Auto:
		w.Mode = bench.SweepAuto
	default:
		w.Mode = bench.SweepSLO
		slo, err := bench.ParseSLO(j.SLO)
		if err != nil {
			return fmt.Errorf("slo: %w", err)
		}
		w.SLO = slo
		switch j.SLOSearch {
		case "", bench.ByRequestRate:
			w.By = bench.ByRequestRate
		case bench.ByMaxConcurrency:
			w.By = bench.ByMaxConcurrency
		default:
			return fmt.Errorf("slo_search: want %s or %s, got %q", bench.ByRequestRate, bench.ByMaxConcurrency, prober.TruncateUTF8(j.SLOSearch, 40))
		}
	}
	if j.Points != nil {
		w.Points = *j.Points
	}
	if j.SLOPrecision != nil {
		w.Precision = *j.SLOPrecision
	}
	if j.SLOStart != nil {
		w.Start = *j.SLOStart
	}
	if j.SLOMax != nil {
		w.Max = *j.SLOMax
	}
	if j.SLOMaxPoints != nil {
		w.MaxPoints = *j.SLOMaxPoints
	}
	if j.SLOPointSamples != nil {
		w.PointSamples = *j.SLOPointSamples
	}
	if j.SLOPointTime != nil {
		w.PointTime = time.Duration(*j.SLOPointTime)
	}
	if j.SLOBudget != nil {
		w.Budget = time.Duration(*j.SLOBudget)
	}
	if j.SLOIdleTimeout != nil {
		w.IdleTimeout = time.Duration(*j.SLOIdleTimeout)
	}
	if j.Cooldown != nil {
		w.Cooldown = time.Duration(*j.Cooldown)
	}
	return nil
}

// Problem is one invalid field of a Spec: Field is its JSON key
// ("num_prompts", "sweep.slo_max"), which Problems.Format turns into the
// caller's spelling (--num-prompts for the CLI).
type Problem struct {
	Field string
	Msg   string
}

// Problems are every invalid field of a Spec, in the order checked.
type Problems []Problem

// Error names each field by its JSON key.
func (p Problems) Error() string { return p.Format(func(k string) string { return k }) }

// Format names each field with name (a flag's or a JSON key's spelling).
func (p Problems) Format(name func(field string) string) string {
	lines := make([]string, len(p))
	for i, q := range p {
		if q.Field == "" {
			lines[i] = q.Msg
			continue
		}
		lines[i] = name(q.Field) + ": " + q.Msg
	}
	return strings.Join(lines, "\n")
}

// SpecKeys are every key a Spec's JSON may carry, sorted: the keys of
// its objects are dotted ("profile.enabled", "sweep.slo_max"), as a
// Problem names them. The bench CLI's test holds its flags to these, so
// that a flag and the body key it sets cannot drift apart.
func SpecKeys() []string {
	var keys []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case name == "" && f.Anonymous:
				walk(prefix, f.Type)
			case name == "" && !f.IsExported():
			case f.Type == reflect.TypeFor[Profile](), f.Type == reflect.TypeFor[config.AnswerChecks]():
				walk(prefix+name+".", f.Type)
			case f.Type == reflect.TypeFor[*SweepSpec]():
				walk(prefix+name+".", reflect.TypeFor[sweepJSON]())
			default:
				if name == "" {
					name = f.Name
				}
				keys = append(keys, prefix+name)
			}
		}
	}
	walk("", reflect.TypeFor[Spec]())
	slices.Sort(keys)
	return slices.Compact(keys)
}

// problems collects Problems; a nil result means none.
type problems struct{ list Problems }

func (p *problems) add(field, format string, a ...any) {
	p.list = append(p.list, Problem{Field: field, Msg: fmt.Sprintf(format, a...)})
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return p.list
}
