// Package mixin renders servingprobe's Grafana dashboards and Prometheus rule
// files from one set of knobs (Config). The rendered files are checked in
// under dashboards/ and served by the exporter; this package is a build tool.
package mixin

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"go.yaml.in/yaml/v2"
)

// Config holds every threshold and selector of the dashboards and rules.
// Change a knob, then run `go generate ./dashboards` (or the generator with
// -config my-knobs.yaml -out DIR to keep a private copy).
type Config struct {
	// Selector is the PromQL matcher list added to every raw servingprobe
	// series in rules and alerts, e.g. `job="servingprobe"`. Dashboards use
	// their own $job variable instead.
	Selector string `yaml:"selector"`

	// TTFTThresholdSeconds is the TTFT SLO threshold: the p99 breach alert
	// fires above it, the latency SLI counts probes at or below it as good,
	// and TTFT panels draw it as a line. A plain decimal string ("2").
	TTFTThresholdSeconds string `yaml:"ttft_threshold_seconds"`
	// TTFTBreachFor is how long the 5m p99 must stay above the threshold.
	TTFTBreachFor string `yaml:"ttft_breach_for"`

	// TTFATThresholdSeconds turns on the ServingprobeTTFATBreach alert: the
	// 5m p99 time to the first answer token (after any reasoning) of probes
	// above it. Empty (the default) leaves the alert out: how long a model
	// may think depends on the model and the prompt, so only its user can
	// set it. A plain decimal string ("30").
	TTFATThresholdSeconds string `yaml:"ttfat_threshold_seconds"`
	// TTFATBreachFor is how long the 5m p99 must stay above it.
	TTFATBreachFor string `yaml:"ttfat_breach_for"`

	// LatencySLOTarget is the fraction of successful probes whose TTFT must be
	// at or below TTFTThresholdSeconds over the SLO period (30 days).
	LatencySLOTarget float64 `yaml:"latency_slo_target"`
	// AvailabilitySLOTarget is the fraction of probes that must succeed.
	AvailabilitySLOTarget float64 `yaml:"availability_slo_target"`
	// ProbeIntervalSeconds is the expected probe interval per (target,
	// module). It only feeds Validate: every burn-rate long window must see
	// enough probes for its minimum-event guard (see docs/runbook.md).
	ProbeIntervalSeconds float64 `yaml:"probe_interval_seconds"`

	// RegressionFactor: a latency (TTFT, ITL, TPOT) regressed when its
	// quantile over RegressionWindow and over RegressionShortWindow both
	// exceed this multiple of its baseline. The baseline is robust: the
	// median, over RegressionBaselineLags, of the 1h quantile centred on the
	// same time of day that many days ago, so the daily load cycle cancels
	// and one bad day cannot move it.
	RegressionFactor float64 `yaml:"regression_factor"`
	// RegressionFor is the `for` of the regression alerts.
	RegressionFor string `yaml:"regression_for"`
	// ProberLagSeconds: the ITL and TPOT regression alerts hold their fire,
	// and the baseline leaves out a past window, while the p90 of the
	// prober's own scheduler lag (servingprobe_scheduler_lag_seconds) over
	// the window is above it. A prober whose process is starved of CPU
	// reads late; the kernel then gives every event queued for one read
	// the arrival of the newest, so the gaps between tokens read as zero
	// (on a busy 2-core machine the median ITL against the simulator fell
	// from 1.3 ms to 0), which says nothing about the server and would page
	// once the prober catches up. TTFT is left unguarded: a late read can
	// only delay it by the lag, which this bounds well below TTFT.
	ProberLagSeconds float64 `yaml:"prober_lag_seconds"`
	// RegressionWindow and RegressionShortWindow are the two windows of the
	// current quantile: the long one keeps spikes out, the short one makes
	// the alert resolve soon after the regression ends.
	RegressionWindow      string `yaml:"regression_window"`
	RegressionShortWindow string `yaml:"regression_short_window"`
	// RegressionQuantiles are the quantiles the regression alerts compare.
	// Each needs enough probes in the short window to be stable (see
	// MinQuantileProbes): the median needs 20, a p99 needs 1000, which a
	// probe every 15s gives only over more than four hours. Add "0.99" only
	// with a probe rate or windows that hold that many.
	RegressionQuantiles []string `yaml:"regression_quantiles"`
	// RegressionBaselineLags are the days whose same hour forms the baseline.
	RegressionBaselineLags []string `yaml:"regression_baseline_lags"`
	// RegressionBaselineWindow is the window of the quantile each lag reads,
	// centred on the lag. Each lag must be at least this long.
	RegressionBaselineWindow string `yaml:"regression_baseline_window"`
	// BaselineWindow is the range over which the capacity alert takes the
	// median of past SLO searches.
	BaselineWindow string `yaml:"baseline_window"`

	// ProbeFailureRatio is the failed-probe ratio over ProbeFailureWindow
	// that raises a warning. The window must hold enough probes that the
	// ratio of a server failing a fifth of its probes stays above the
	// threshold (a 10m window holds 40 probes at one per 15s).
	ProbeFailureRatio  float64 `yaml:"probe_failure_ratio"`
	ProbeFailureWindow string  `yaml:"probe_failure_window"`
	ProbeFailureFor    string  `yaml:"probe_failure_for"`
	// TargetDownAfterSeconds: no probe of a target succeeded for this long
	// and the last one failed; held for TargetDownFor, it pages. Together
	// they are how many failed probes in a row page (at one per 15s, 60s
	// and 1m: about eight), and with the evaluation interval they bound the
	// time to page (60s + 1m + one interval).
	TargetDownAfterSeconds float64 `yaml:"target_down_after_seconds"`
	TargetDownFor          string  `yaml:"target_down_for"`
	// MajorityBadRatio: the fast burn-rate page also fires, with no `for`,
	// when more than this share of a target's probes was bad over the last
	// 5m (and the window holds MajorityBadMinProbes probes). A catastrophe
	// then pages in minutes: a burn-rate pair cannot fire before its long
	// window holds burn × (1 − target) bad probes, 8.6 minutes of probes
	// that all fail for the 1h window at 99%, and 21.6 minutes of a fifth
	// failing at 99.5%.
	MajorityBadRatio     float64 `yaml:"majority_bad_ratio"`
	MajorityBadMinProbes int     `yaml:"majority_bad_min_probes"`
	// ExporterDownFor: no replica of the exporter scraped successfully for
	// this long pages (nothing else can fire then); ReplicaDownFor is the
	// `for` of the warning that one replica of several is down or gone.
	ExporterDownFor string `yaml:"exporter_down_for"`
	ReplicaDownFor  string `yaml:"replica_down_for"`
	// SchedulerLagAlertSeconds: the p90 of the prober's scheduler lag over
	// regression_window above it, held for SchedulerLagFor, warns that the
	// prober itself is starved (it is far above prober_lag_seconds, the
	// guard of the ITL and TPOT alerts: a probe that starts a second late
	// has lost a fraction of its interval, not just its token gaps).
	SchedulerLagAlertSeconds float64 `yaml:"scheduler_lag_alert_seconds"`
	SchedulerLagFor          string  `yaml:"scheduler_lag_for"`
	// ProbesSkippedMax: more skipped probe ticks than this over 10m warn. A
	// skipped tick is a probe that never ran, so it is in no SLI: a target
	// slow enough that probes pile up would otherwise look healthier than
	// it is.
	ProbesSkippedMax float64 `yaml:"probes_skipped_max"`
	// TLSCertExpiryDays: a target whose certificate chain expires within
	// this many days warns.
	TLSCertExpiryDays float64 `yaml:"tls_cert_expiry_days"`

	// ProbeStaleAfterSeconds: no probe finished for this long means the
	// scheduler stopped. Keep it several probe intervals long.
	ProbeStaleAfterSeconds float64 `yaml:"probe_stale_after_seconds"`
	NoProbeResultsFor      string  `yaml:"no_probe_results_for"`
	ReloadFailedFor        string  `yaml:"reload_failed_for"`

	// CapacityRegressionRatio: the capacity an SLO search found (a nightly
	// bench window, say) regressed when it is below this fraction of its
	// median over BaselineWindow, ending a day earlier so that the drop
	// itself is not in the baseline.
	CapacityRegressionRatio float64 `yaml:"capacity_regression_ratio"`
	CapacityRegressionFor   string  `yaml:"capacity_regression_for"`

	// CapacityHeadroomRatio: a target's live headroom (1 minus the
	// server's completed-request rate over the capacity its last
	// capacity_check found) held under this for CapacityHeadroomFor: its
	// traffic runs close to the rate at which its SLO breaks.
	CapacityHeadroomRatio float64 `yaml:"capacity_headroom_ratio"`
	CapacityHeadroomFor   string  `yaml:"capacity_headroom_for"`

	// AnswerCheckFailureRatio: the share of a check's answers that did not
	// pass (result fail, or error: cut before it could be judged) over
	// AnswerCheckWindow, per target, module and check, above which
	// ServingprobeAnswerChecksFailing warns, held for AnswerCheckFor. The
	// window also holds AnswerCheckMinFailures answers that did not pass,
	// so that a handful of probes (a module probed once a minute, a check
	// just configured) cannot warn on two unlucky answers.
	AnswerCheckFailureRatio float64 `yaml:"answer_check_failure_ratio"`
	AnswerCheckWindow       string  `yaml:"answer_check_window"`
	AnswerCheckMinFailures  int     `yaml:"answer_check_min_failures"`
	AnswerCheckFor          string  `yaml:"answer_check_for"`

	// WarmColdTTFTRatio: a conversation module's warm turns (2 and later,
	// whose history a prefix cache can serve) have a median TTFT over
	// WarmTurnWindow at least this share of the cold first turn's, held
	// for WarmTurnFor, with WarmTurnMinConversations first turns in the
	// window (a median needs 20, see MinQuantileProbes):
	// ServingprobeWarmTurnsNotFaster warns that the prefix cache no longer
	// serves the history. Later turns send more tokens than the first, so
	// without a cache their ratio is about 1 or above.
	WarmColdTTFTRatio        float64 `yaml:"warm_cold_ttft_ratio"`
	WarmTurnWindow           string  `yaml:"warm_turn_window"`
	WarmTurnMinConversations int     `yaml:"warm_turn_min_conversations"`
	WarmTurnFor              string  `yaml:"warm_turn_for"`

	// RunbookURL is the base of every alert's runbook_url; the anchor is the
	// lower-cased alert name.
	RunbookURL string `yaml:"runbook_url"`
}

// Default returns the shipped knobs.
func Default() Config {
	return Config{
		Selector:                 `job="servingprobe"`,
		TTFTThresholdSeconds:     "2",
		TTFTBreachFor:            "15m",
		TTFATBreachFor:           "15m",
		LatencySLOTarget:         0.99,
		AvailabilitySLOTarget:    0.995,
		ProbeIntervalSeconds:     15,
		RegressionFactor:         1.35,
		RegressionFor:            "2m",
		ProberLagSeconds:         0.01,
		RegressionWindow:         "10m",
		RegressionShortWindow:    "5m",
		RegressionQuantiles:      []string{"0.5"},
		RegressionBaselineLags:   []string{"1d", "2d", "3d"},
		RegressionBaselineWindow: "1h",
		BaselineWindow:           "7d",
		ProbeFailureRatio:        0.08,
		ProbeFailureWindow:       "10m",
		ProbeFailureFor:          "2m",
		TargetDownAfterSeconds:   60,
		TargetDownFor:            "1m",
		ProbeStaleAfterSeconds:   300,
		NoProbeResultsFor:        "5m",
		MajorityBadRatio:         0.5,
		MajorityBadMinProbes:     5,
		ExporterDownFor:          "2m",
		ReplicaDownFor:           "5m",
		SchedulerLagAlertSeconds: 1,
		SchedulerLagFor:          "10m",
		ProbesSkippedMax:         2,
		TLSCertExpiryDays:        14,
		ReloadFailedFor:          "5m",
		CapacityRegressionRatio:  0.8,
		CapacityRegressionFor:    "10m",
		CapacityHeadroomRatio:    0.2,
		CapacityHeadroomFor:      "15m",
		AnswerCheckFailureRatio:  0.1,
		AnswerCheckWindow:        "30m",
		AnswerCheckMinFailures:   5,
		AnswerCheckFor:           "5m",
		WarmColdTTFTRatio:        0.8,
		WarmTurnWindow:           "30m",
		WarmTurnMinConversations: 20,
		WarmTurnFor:              "10m",
		RunbookURL:               "https://github.com/servingprobe/servingprobe/blob/main/docs/runbook.md",
	}
}

// Load reads knobs from a YAML file over the defaults.
func Load(path string) (Config, error) {
	c := Default()
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return c, fmt.Errorf("parse %s: %w", path, err)
	}
	return c, c.Validate()
}

// BurnWindow is one multi-window pair of the SRE workbook for a 30-day SLO.
type BurnWindow struct {
	Long, Short string
	LongSeconds float64
	Burn        float64
	Page        bool // page (critical) or ticket (warning)
	// Quick marks a pair that only makes a page come sooner than the
	// workbook's: Validate does not require the probe rate to meet its
	// guard, since a pair whose long window holds too few probes stays
	// silent and the 1h pair pages as before.
	Quick bool
}

// BurnWindows are the SRE workbook's pairs: 2% of the budget in 1h, 5% in 6h
// (page), 10% in 1d and 10% in 3d (ticket), and before them the 1h pair's
// burn over 15m: a fifth of probes failing at 99.5% crosses 14.4× the
// sustainable rate over 15m after 5.4 minutes, over 1h only after 21.6.
var BurnWindows = []BurnWindow{
	{Long: "15m", Short: "5m", LongSeconds: 900, Burn: 14.4, Page: true, Quick: true},
	{Long: "1h", Short: "5m", LongSeconds: 3600, Burn: 14.4, Page: true},
	{Long: "6h", Short: "30m", LongSeconds: 6 * 3600, Burn: 6, Page: true},
	{Long: "1d", Short: "2h", LongSeconds: 86400, Burn: 3},
	{Long: "3d", Short: "6h", LongSeconds: 3 * 86400, Burn: 1},
}

// SLIWindows are every window a burn-rate alert reads.
var SLIWindows = []string{"5m", "15m", "30m", "1h", "2h", "6h", "1d", "3d"}

// MinEvents is the minimum-event guard of a burn-rate window pair: the
// smallest number of events in the long window for which a single bad event
// cannot on its own push the error ratio over burn*(1-target). With fewer
// events a single failed probe would page, so the alert stays silent and the
// plain threshold alerts (probe failures, TTFT breach) speak instead.
func MinEvents(burn, target float64) int {
	return int(math.Ceil(1/(burn*(1-target)) - 1e-9))
}

// Validate reports every inconsistent knob.
func (c Config) Validate() error {
	var errs []error
	if _, err := LeAtMost(c.TTFTThresholdSeconds); err != nil {
		errs = append(errs, fmt.Errorf("ttft_threshold_seconds: %w", err))
	}
	if c.TTFATThresholdSeconds != "" {
		if _, err := LeAtMost(c.TTFATThresholdSeconds); err != nil {
			errs = append(errs, fmt.Errorf("ttfat_threshold_seconds: %w", err))
		}
	}
	for name, d := range map[string]string{
		"ttft_breach_for": c.TTFTBreachFor, "ttfat_breach_for": c.TTFATBreachFor, "regression_for": c.RegressionFor, "baseline_window": c.BaselineWindow,
		"probe_failure_for": c.ProbeFailureFor, "target_down_for": c.TargetDownFor,
		"regression_window": c.RegressionWindow, "regression_short_window": c.RegressionShortWindow,
		"regression_baseline_window": c.RegressionBaselineWindow,
		"probe_failure_window":       c.ProbeFailureWindow,
		"no_probe_results_for":       c.NoProbeResultsFor, "reload_failed_for": c.ReloadFailedFor,
		"exporter_down_for": c.ExporterDownFor, "replica_down_for": c.ReplicaDownFor, "scheduler_lag_for": c.SchedulerLagFor,
		"capacity_regression_for": c.CapacityRegressionFor,
		"capacity_headroom_for":   c.CapacityHeadroomFor,
		"answer_check_window":     c.AnswerCheckWindow, "answer_check_for": c.AnswerCheckFor,
		"warm_turn_window": c.WarmTurnWindow, "warm_turn_for": c.WarmTurnFor,
	} {
		if !validDuration(d) {
			errs = append(errs, fmt.Errorf("%s: %q is not a Prometheus duration", name, d))
		}
	}
	for name, v := range map[string]float64{"latency_slo_target": c.LatencySLOTarget, "availability_slo_target": c.AvailabilitySLOTarget} {
		if !(v > 0 && v < 1) {
			errs = append(errs, fmt.Errorf("%s: %v must be in (0, 1)", name, v))
		}
	}
	if c.ProbeIntervalSeconds <= 0 {
		errs = append(errs, errors.New("probe_interval_seconds: must be > 0"))
	} else {
		for _, slo := range []struct {
			name   string
			target float64
		}{{"latency", c.LatencySLOTarget}, {"availability", c.AvailabilitySLOTarget}} {
			for _, w := range BurnWindows {
				if w.Quick {
					continue
				}
				have := w.LongSeconds / c.ProbeIntervalSeconds
				if need := MinEvents(w.Burn, slo.target); have < float64(need) {
					errs = append(errs, fmt.Errorf("%s SLO %v: a %s window holds %.0f probes at one per %vs, the guard needs %d; probe more often or lower the target",
						slo.name, slo.target, w.Long, have, c.ProbeIntervalSeconds, need))
				}
			}
		}
	}
	if !(c.CapacityRegressionRatio > 0 && c.CapacityRegressionRatio < 1) {
		errs = append(errs, errors.New("capacity_regression_ratio: must be in (0, 1)"))
	}
	if !(c.CapacityHeadroomRatio > 0 && c.CapacityHeadroomRatio < 1) {
		errs = append(errs, errors.New("capacity_headroom_ratio: must be in (0, 1)"))
	}
	if !(c.AnswerCheckFailureRatio > 0 && c.AnswerCheckFailureRatio < 1) {
		errs = append(errs, errors.New("answer_check_failure_ratio: must be in (0, 1)"))
	}
	if c.AnswerCheckMinFailures < 3 {
		errs = append(errs, errors.New("answer_check_min_failures: must be at least 3, so that one or two wrong answers alone cannot warn"))
	}
	if !(c.WarmColdTTFTRatio > 0 && c.WarmColdTTFTRatio < 1) {
		errs = append(errs, errors.New("warm_cold_ttft_ratio: must be in (0, 1): a working prefix cache makes warm turns faster than cold ones"))
	}
	if need := MinQuantileProbes(0.5); c.WarmTurnMinConversations < need {
		errs = append(errs, fmt.Errorf("warm_turn_min_conversations: must be at least %d, the conversations a median of first turns needs", need))
	}
	if c.RegressionFactor <= 1 {
		errs = append(errs, errors.New("regression_factor: must be > 1"))
	}
	if !(c.ProberLagSeconds > 0) {
		errs = append(errs, errors.New("prober_lag_seconds: must be > 0"))
	}
	if len(c.RegressionBaselineLags) == 0 {
		errs = append(errs, errors.New("regression_baseline_lags: need at least one"))
	}
	bw, okBW := seconds(c.RegressionBaselineWindow)
	if !okBW {
		errs = append(errs, fmt.Errorf("regression_baseline_window: %q is not a Prometheus duration", c.RegressionBaselineWindow))
	}
	for _, l := range c.RegressionBaselineLags {
		if d, ok := seconds(l); !ok || (okBW && d < bw) {
			errs = append(errs, fmt.Errorf("regression_baseline_lags: %q is not a Prometheus duration of at least regression_baseline_window", l))
		}
	}
	if len(c.RegressionQuantiles) == 0 {
		errs = append(errs, errors.New("regression_quantiles: need at least one"))
	}
	short, okShort := seconds(c.RegressionShortWindow)
	long, okLong := seconds(c.RegressionWindow)
	if okShort && okLong && short > long {
		errs = append(errs, errors.New("regression_short_window: must not be longer than regression_window"))
	}
	for _, q := range c.RegressionQuantiles {
		f, err := strconv.ParseFloat(q, 64)
		if err != nil || !(f > 0 && f < 1) {
			errs = append(errs, fmt.Errorf("regression_quantiles: %q must be a number in (0, 1)", q))
			continue
		}
		if okShort && c.ProbeIntervalSeconds > 0 {
			have := short / c.ProbeIntervalSeconds
			if need := MinQuantileProbes(f); have < float64(need) {
				errs = append(errs, fmt.Errorf("regression_quantiles: the %s quantile needs %d probes in the %s short window, which holds %.0f at one per %vs; probe more often or lengthen regression_short_window and regression_window",
					q, need, c.RegressionShortWindow, have, c.ProbeIntervalSeconds))
			}
		}
	}
	if w, ok := seconds(c.ProbeFailureWindow); ok && c.ProbeIntervalSeconds > 0 && w/c.ProbeIntervalSeconds < 20 {
		errs = append(errs, fmt.Errorf("probe_failure_window: %s holds %.0f probes at one per %vs, fewer than 20; lengthen it or probe more often",
			c.ProbeFailureWindow, w/c.ProbeIntervalSeconds, c.ProbeIntervalSeconds))
	}
	if !(c.ProbeFailureRatio > 0 && c.ProbeFailureRatio < 1) {
		errs = append(errs, errors.New("probe_failure_ratio: must be in (0, 1)"))
	}
	if c.TargetDownAfterSeconds < 2*c.ProbeIntervalSeconds {
		errs = append(errs, errors.New("target_down_after_seconds: must be at least 2 probe intervals"))
	}
	if c.ProbeStaleAfterSeconds < 3*c.ProbeIntervalSeconds {
		errs = append(errs, errors.New("probe_stale_after_seconds: must be at least 3 probe intervals"))
	}
	if !(c.MajorityBadRatio >= 0.5 && c.MajorityBadRatio < 1) {
		errs = append(errs, errors.New("majority_bad_ratio: must be in [0.5, 1): a page with no `for` needs most probes bad"))
	}
	if c.MajorityBadMinProbes < 3 {
		errs = append(errs, errors.New("majority_bad_min_probes: must be at least 3, so that one or two bad probes alone cannot page"))
	}
	if !(c.SchedulerLagAlertSeconds > c.ProberLagSeconds) {
		errs = append(errs, errors.New("scheduler_lag_alert_seconds: must be above prober_lag_seconds"))
	}
	if c.ProbesSkippedMax < 0 {
		errs = append(errs, errors.New("probes_skipped_max: must be >= 0"))
	}
	if !(c.TLSCertExpiryDays > 0) {
		errs = append(errs, errors.New("tls_cert_expiry_days: must be > 0"))
	}
	if c.Selector == "" {
		errs = append(errs, errors.New("selector: must be set"))
	}
	return errors.Join(errs...)
}

// MinQuantileProbes is how many probes a window must hold for its q-quantile
// to rest on at least 10 probes above it: fewer, and a few slow probes move
// it as much as a regression does (20 for the median, 1000 for a p99).
func MinQuantileProbes(q float64) int {
	return int(math.Ceil(10/(1-q) - 1e-9))
}

// seconds reads a single-unit Prometheus duration ("90s", "10m", "1d").
func seconds(s string) (float64, bool) {
	if !validDuration(s) {
		return 0, false
	}
	n, _ := strconv.Atoi(s[:len(s)-1])
	unit := map[byte]float64{'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 7 * 86400}[s[len(s)-1]]
	return float64(n) * unit, true
}

func validDuration(s string) bool {
	if len(s) < 2 {
		return false
	}
	unit := s[len(s)-1]
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return false
	}
	switch unit {
	case 's', 'm', 'h', 'd', 'w':
		return true
	}
	return false
}

// fmtFloat spells a knob in PromQL without trailing noise.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
