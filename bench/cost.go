package bench

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// Cost is the run's price per million tokens from --cost-per-hour: the
// hour's price times the run's duration in hours, divided by the tokens
// of one side, times a million. The whole price is charged to each side
// (not split between them), as the throughput-based cost estimates of
// other benchmarks do (the hardware's hourly rate over the tokens it
// produces an hour): the input figure is what a million prompt tokens
// cost at this run's input throughput, the output figure likewise, and
// the two must not be added. A side with no tokens has no figure (NaN,
// null in the JSONL).
type Cost struct {
	PerHour                float64
	PerMillionInputTokens  float64
	PerMillionOutputTokens float64
}

// Cost computes the run's Cost; ok is false without --cost-per-hour.
func (s *Summary) Cost() (c Cost, ok bool) {
	if s.CostPerHour <= 0 || math.IsNaN(s.CostPerHour) {
		return Cost{}, false
	}
	spent := s.CostPerHour * s.Duration / 3600
	per := func(tokens int) float64 {
		if tokens <= 0 || s.Duration <= 0 {
			return math.NaN()
		}
		return spent / float64(tokens) * 1e6
	}
	return Cost{PerHour: s.CostPerHour, PerMillionInputTokens: per(s.TotalInputTokens), PerMillionOutputTokens: per(s.TotalOutputTokens)}, true
}

// Energy is the GPUs' energy over the run from the first --server-metrics
// source that is a DCGM exporter, with that source's URL; ok is false when
// no source exposed a DCGM energy or power family.
func (s *Summary) Energy() (e *servermetrics.Energy, source string, ok bool) {
	var first *servermetrics.Energy
	var firstSrc string
	for i := range s.Server {
		r := &s.Server[i]
		if r.Energy == nil {
			continue
		}
		if r.Energy.Method != "" {
			return r.Energy, r.Source, true
		}
		if first == nil {
			first, firstSrc = r.Energy, r.Source
		}
	}
	return first, firstSrc, first != nil
}

// usd writes a price with four decimals, "n/a" when there is none.
func usd(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a (no tokens)"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// writeCostEnergy writes the cache report's agreement with the server,
// the energy and the cost lines of servingprobe's block, after the
// Server metrics sections.
func (s *Summary) writeCostEnergy(t *tableWriter) {
	s.writeCacheAgreement(t)
	e, src, ok := s.Energy()
	if ok {
		t.line(center("Energy", '-', 50))
	}
	switch {
	case ok && e.Method != "":
		t.row("Energy source:", src)
		how := fmt.Sprintf("%s counter, %d GPUs", servermetrics.DCGMEnergy, e.GPUs)
		if e.Method == servermetrics.EnergyPowerEstimate {
			how = fmt.Sprintf("estimate: %s integrated over the samples, %d GPUs", servermetrics.DCGMPower, e.GPUs)
		}
		t.row("Energy (J):", pyfmt.Fixed2(e.Joules)+" ("+how+")")
		if v := e.PerOutputToken(s.TotalOutputTokens); !math.IsNaN(v) {
			t.row("Energy per output token (J):", strconv.FormatFloat(v, 'f', 4, 64))
		} else {
			t.row("Energy per output token (J):", "n/a (no output tokens)")
		}
	case ok:
		t.row("Energy source:", src)
		t.row("Energy:", "not measured: "+e.Missing)
	}
	if c, ok := s.Cost(); ok {
		t.line(center("Cost", '-', 50))
		t.row("Cost per hour (USD):", strconv.FormatFloat(c.PerHour, 'f', -1, 64))
		t.row("Cost per 1M input tokens (USD):", usd(c.PerMillionInputTokens))
		t.row("Cost per 1M output tokens (USD):", usd(c.PerMillionOutputTokens))
		t.row("Cost basis:", "the hour's price x duration / tokens x 1e6, whole price to each side")
	}
}

// costEnergyFields are the servingprobe object's "cache_vs_server",
// "energy" and "cost" keys, each present only when its table lines are.
func (s *Summary) costEnergyFields() record {
	out := s.cacheAgreementFields()
	nanNull := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	}
	e, src, ok := s.Energy()
	switch {
	case ok && e.Method != "":
		out = append(out, field{"energy", record{
			{"source", src},
			{"joules", e.Joules},
			{"joules_per_output_token", nanNull(e.PerOutputToken(s.TotalOutputTokens))},
			{"method", e.Method},
			{"gpus", e.GPUs},
		}})
	case ok:
		out = append(out, field{"energy", record{{"source", src}, {"missing", e.Missing}}})
	}
	if c, ok := s.Cost(); ok {
		out = append(out, field{"cost", record{
			{"per_hour", c.PerHour},
			{"per_million_input_tokens", nanNull(c.PerMillionInputTokens)},
			{"per_million_output_tokens", nanNull(c.PerMillionOutputTokens)},
		}})
	}
	return out
}

// parseCostEnergy reads the servingprobe object's "cost" and "energy"
// back: the price per hour (the cost's one input: Cost derives the rest
// from it, the duration and the token totals), and the energy onto the
// server block it came from (Energy picks it from there again). Then every derived figure of "cost", "energy"
// and "cache_vs_server" is checked against what costEnergyFields writes
// from what was read, so that a record whose figures do not follow from
// its inputs is refused rather than shown with other numbers. Errors name
// the key.
func (s *Summary) parseCostEnergy(sp map[string]json.RawMessage) error {
	if raw, ok := present(sp["cost"]); ok {
		fields, err := objectFields(raw)
		if err != nil {
			return fmt.Errorf("servingprobe.cost: %w", err)
		}
		var per *float64
		for _, f := range fields {
			if f.key != "per_hour" {
				continue
			}
			if err := json.Unmarshal(f.value, &per); err != nil {
				return fmt.Errorf("servingprobe.cost.per_hour: %w", err)
			}
		}
		if per == nil || !(*per > 0) || math.IsInf(*per, 0) {
			return fmt.Errorf("servingprobe.cost.per_hour: %s, want a price above 0", cmp.Or(string(rawKey(fields, "per_hour")), "missing"))
		}
		s.CostPerHour = *per
	}
	if raw, ok := present(sp["energy"]); ok {
		if err := s.parseEnergy(raw); err != nil {
			return fmt.Errorf("servingprobe.energy%w", err)
		}
	}
	want := s.costEnergyFields()
	for _, d := range []struct {
		key, from string
		derived   []string // none: every key is
	}{
		{"cache_vs_server", "a cache_report and a server block with a prefix-cache counter", nil},
		{"energy", "a DCGM energy, or two server blocks", energyDerived(sp["energy"])},
		{"cost", "a price per hour", []string{"per_million_input_tokens", "per_million_output_tokens"}},
	} {
		raw, ok := present(sp[d.key])
		if !ok {
			continue
		}
		i := slices.IndexFunc(want, func(f field) bool { return f.key == d.key })
		if i < 0 {
			return fmt.Errorf("servingprobe.%s: the record holds nothing it could come from (%s)", d.key, d.from)
		}
		if err := checkDerived(want[i].value, raw, d.derived...); err != nil {
			return fmt.Errorf("servingprobe.%s%w", d.key, err)
		}
	}
	return nil
}

// energyDerived are the energy object's derived keys: the joules per
// output token of a measured energy.
func energyDerived(json.RawMessage) []string { return []string{"joules_per_output_token"} }

// parseEnergy reads an "energy" object onto the server block whose
// source it names. Its errors begin with the key's path (".gpus: ...").
func (s *Summary) parseEnergy(raw json.RawMessage) error {
	fields, err := objectFields(raw)
	if err != nil {
		return fmt.Errorf(": %w", err)
	}
	var src *string
	var e servermetrics.Energy
	for _, f := range fields {
		var err error
		switch f.key {
		case "source":
			err = json.Unmarshal(f.value, &src)
		case "method":
			err = json.Unmarshal(f.value, &e.Method)
		case "joules":
			err = json.Unmarshal(f.value, &e.Joules)
		case "gpus":
			err = json.Unmarshal(f.value, &e.GPUs)
		case "missing":
			err = json.Unmarshal(f.value, &e.Missing)
		}
		if err != nil {
			return fmt.Errorf(".%s: %w", f.key, err)
		}
	}
	if src == nil {
		return errors.New(".source: missing")
	}
	switch e.Method {
	case servermetrics.EnergyCounter, servermetrics.EnergyPowerEstimate:
		for _, k := range []string{"joules", "gpus"} {
			if _, ok := present(rawKey(fields, k)); !ok {
				return fmt.Errorf(".%s: missing", k)
			}
		}
		e.Missing = ""
	case "":
		if e.Missing == "" {
			return errors.New(": neither a method nor why it is missing")
		}
	default:
		return fmt.Errorf(".method: %q, want %q or %q", e.Method, servermetrics.EnergyCounter, servermetrics.EnergyPowerEstimate)
	}
	i := slices.IndexFunc(s.Server, func(r servermetrics.Report) bool { return r.Source == *src })
	if i < 0 {
		return fmt.Errorf(".source: %q is no server block's source", *src)
	}
	s.Server[i].Energy = &e
	return nil
}
