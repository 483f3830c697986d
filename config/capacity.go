package config

import (
	"time"

	"github.com/prometheus/common/model"
)

// CapacityCheck schedules an SLO search on a target, run as a bench
// window of its own (docs/slo-search.md, "Scheduled capacity checks"), so
// that the daemon knows the target's capacity and how close its traffic
// runs to it. Its SLO's grammar is the bench's: the daemon checks it by
// decoding the window it would start, when the configuration loads.
type CapacityCheck struct {
	// Every is the time between two checks; the first runs shortly after
	// the daemon starts (or the check is configured).
	Every model.Duration `yaml:"every"`
	// SLO is the search's objectives, as bench's --slo ("ttft:p90<=2s").
	SLO string `yaml:"slo"`
	// At, "HH:MM" in the daemon's local time, pins the checks after the
	// first to that time of day (Every is then a whole number of days),
	// so that they load the server at its quiet hour.
	At string `yaml:"at,omitempty"`
	// Budget bounds one search, pauses included (default 5m, at most
	// Every): a check costs minutes, not a long burst.
	Budget model.Duration `yaml:"budget,omitempty"`
	// Module is the request shape searched (default the target's first).
	Module string `yaml:"module,omitempty"`
}

// DefaultCapacityBudget is a check's budget when it names none: the SLO
// search's own default (runner.DefaultSLOBudget).
const DefaultCapacityBudget = 5 * time.Minute

// minCapacityEvery keeps a check from loading the server more often than
// a long budget could end: a search is minutes of load.
const minCapacityEvery = 10 * time.Minute

// BudgetOrDefault is the check's budget, DefaultCapacityBudget when unset.
func (c *CapacityCheck) BudgetOrDefault() time.Duration {
	if c.Budget == 0 {
		return DefaultCapacityBudget
	}
	return time.Duration(c.Budget)
}

// AtClock is At as an hour and a minute; ok is false when At is unset or
// malformed (Validate reports the latter).
func (c *CapacityCheck) AtClock() (hour, minute int, ok bool) {
	if c.At == "" {
		return 0, 0, false
	}
	t, err := time.Parse("15:04", c.At)
	if err != nil {
		return 0, 0, false
	}
	return t.Hour(), t.Minute(), true
}

func (c *CapacityCheck) validate(v *validator, p string, t Target) {
	if c == nil {
		return
	}
	every := time.Duration(c.Every)
	switch {
	case every == 0:
		v.add(p+".every", "must be set, such as 24h")
	case every < minCapacityEvery:
		v.add(p+".every", "must be at least %s (a check is minutes of load), got %s", model.Duration(minCapacityEvery), c.Every)
	}
	if c.SLO == "" {
		v.add(p+".slo", "must be set, such as 'ttft:p90<=2s'")
	}
	if c.At != "" {
		if _, _, ok := c.AtClock(); !ok {
			v.add(p+".at", "want a local time of day as HH:MM, such as \"03:00\", got %q", c.At)
		} else if every > 0 && every%(24*time.Hour) != 0 {
			v.add(p+".every", "must be a whole number of days (24h, 48h, ...) when at is set, got %s", c.Every)
		}
	}
	switch b := time.Duration(c.Budget); {
	case b < 0:
		v.add(p+".budget", "must be positive, got %s", c.Budget)
	case every > 0 && c.BudgetOrDefault() > every:
		v.add(p+".budget", "must not exceed every (%s), got %s", c.Every, model.Duration(c.BudgetOrDefault()))
	}
	if c.Module != "" {
		found := false
		for _, m := range t.Modules {
			found = found || m == c.Module
		}
		if !found {
			v.add(p+".module", "must be one of the target's modules, got %q", c.Module)
		}
	}
}
