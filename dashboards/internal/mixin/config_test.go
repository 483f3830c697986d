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
		{"two wrong answers could warn", func(c *Config) { c.AnswerCheckMinFailures = 2 }, "answer_check_min_failures: must be at least 3"},
		{"answer share out of range", func(c *Config) { c.AnswerCheckFailureRatio = 1 }, "answer_check_failure_ratio"},
		{"warm ratio at 1", func(c *Config) { c.WarmColdTTFTRatio = 1 }, "warm_cold_ttft_ratio"},
		{"too few conversations for a median", func(c *Config) { c.WarmTurnMinConversations = 10 }, "warm_turn_min_conversations: must be at least 20"},
		{"bad answer window", func(c *Config) { c.AnswerCheckWindow = "30 minutes" }, "answer_check_window"},
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

// TestRegressionKnobs: a quantile the probe rate cannot support, a failure
// window of too few probes and a baseline lag inside its own window are
// refused with the knob to change; the same p99 at a probe rate that does
// support it is accepted.
func TestRegressionKnobs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{"p99 at 15s probes", func(c *Config) { c.RegressionQuantiles = []string{"0.5", "0.99"} }, "needs 1000 probes in the 5m short window, which holds 20"},
		{"p99 at 4 probes a second", func(c *Config) {
			c.RegressionQuantiles = []string{"0.5", "0.99"}
			c.ProbeIntervalSeconds = 0.25
		}, ""},
		{"quantile out of range", func(c *Config) { c.RegressionQuantiles = []string{"1"} }, "must be a number in (0, 1)"},
		{"short failure window", func(c *Config) { c.ProbeFailureWindow = "2m" }, "probe_failure_window: 2m holds 8 probes"},
		{"lag inside the baseline window", func(c *Config) { c.RegressionBaselineLags = []string{"30m"} }, "regression_baseline_lags"},
		{"short window longer than the long one", func(c *Config) { c.RegressionShortWindow = "15m" }, "must not be longer than regression_window"},
		{"target down faster than two probes", func(c *Config) { c.TargetDownAfterSeconds = 20 }, "target_down_after_seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.change(&c)
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestTTFTAlertsSayWhere checks that every TTFT alert, and only those, ends
// its description with the split into inside and in front of the server
// (tests/ttft_split.yaml checks the rendered text through promtool).
func TestTTFTAlertsSayWhere(t *testing.T) {
	c := Default()
	split := c.ttftSplit()
	want := map[string]bool{
		"ServingprobeTTFTSLOBreach": true, "ServingprobeTTFTRegression": true,
		"ServingprobeTTFTErrorBudgetBurnFast": true, "ServingprobeTTFTErrorBudgetBurnSlow": true,
	}
	seen := 0
	for _, g := range c.Alerts().Groups {
		for _, r := range g.Rules {
			var desc string
			for _, a := range r.Annotations {
				if a.Key == "description" {
					desc = a.Value.(string)
				}
			}
			if got := strings.HasSuffix(desc, split); got != want[r.Alert] {
				t.Errorf("%s: description ends with the TTFT split: %v, want %v", r.Alert, got, want[r.Alert])
			}
			if want[r.Alert] {
				seen++
			}
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d TTFT alerts", seen, len(want))
	}
	// The records the sentence queries exist.
	recorded := map[string]bool{}
	for _, g := range c.Rules().Groups {
		for _, r := range g.Rules {
			recorded[r.Record] = true
		}
	}
	for _, h := range []Histogram{ServerTTFT, OutsideTTFT} {
		if rec := QuantileRecord(h, c.RegressionWindow); !recorded[rec] || !strings.Contains(split, rec) {
			t.Errorf("%s: recorded %v, queried %v", rec, recorded[rec], strings.Contains(split, rec))
		}
	}
}
