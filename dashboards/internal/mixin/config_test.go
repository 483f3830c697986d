package mixin

import (
	"strings"
	"testing"
)

func TestMinEvents(t *testing.T) {
	for _, tc := range []struct {
		burn, target float64
		want         int
	}{
		{14.4, 0.99, 7}, {6, 0.99, 17}, {3, 0.99, 34}, {1, 0.99, 100},
		{14.4, 0.995, 14}, {1, 0.995, 200}, {14.4, 0.999, 70}, {1, 0.999, 1000},
	} {
		if got := MinEvents(tc.burn, tc.target); got != tc.want {
			t.Errorf("MinEvents(%v, %v) = %d, want %d", tc.burn, tc.target, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"probe rate too low for 99.9%", func(c *Config) { c.AvailabilitySLOTarget = 0.999; c.ProbeIntervalSeconds = 60 }, "availability SLO 0.999: a 1h window holds 60 probes at one per 60s, the guard needs 70"},
		{"threshold not a plain decimal", func(c *Config) { c.TTFTThresholdSeconds = "2e0" }, "ttft_threshold_seconds"},
		{"bad duration", func(c *Config) { c.TTFTBreachFor = "15 minutes" }, "ttft_breach_for"},
		{"target out of range", func(c *Config) { c.LatencySLOTarget = 1 }, "latency_slo_target"},
		{"stale too short", func(c *Config) { c.ProbeStaleAfterSeconds = 30 }, "probe_stale_after_seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
