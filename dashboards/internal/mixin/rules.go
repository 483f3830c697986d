package mixin

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v2"
)

// by is the aggregation of every recorded series: per target, module, model
// and mode, with instance dropped so an HA pair of exporters reads as one.
const (
	byTarget = "job, target, module, model"
	byMode   = byTarget + ", mode"
)

// Histogram is one latency histogram of the metric contract.
type Histogram struct {
	Short, Name, Title string
}

var (
	TTFT = Histogram{"ttft", "servingprobe_time_to_first_token_seconds", "TTFT"}
	ITL  = Histogram{"itl", "servingprobe_inter_token_latency_seconds", "ITL"}
	TPOT = Histogram{"tpot", "servingprobe_time_per_output_token_seconds", "TPOT"}
	E2E  = Histogram{"e2e", "servingprobe_e2e_request_latency_seconds", "E2E latency"}
	// TTFAT is the time to the first answer token, after any reasoning.
	TTFAT = Histogram{"ttfat", "servingprobe_time_to_first_answer_token_seconds", "TTFAT"}
	// AnswerITL and AnswerTPOT are ITL and TPOT over the answer alone,
	// from its first token on; without reasoning they equal ITL and TPOT.
	AnswerITL  = Histogram{"answer_itl", "servingprobe_answer_inter_token_latency_seconds", "Answer ITL"}
	AnswerTPOT = Histogram{"answer_tpot", "servingprobe_answer_time_per_output_token_seconds", "Answer TPOT"}
	// ServerTTFT is the server's own TTFT as it states it in its response
	// (vLLM's per-request metrics, llama.cpp's timings) and OutsideTTFT the
	// client's TTFT minus it, for the same probes; both are absent for a
	// server that states nothing.
	ServerTTFT  = Histogram{"server_ttft", "servingprobe_server_time_to_first_token_seconds", "Server-stated TTFT"}
	OutsideTTFT = Histogram{"outside_ttft", "servingprobe_time_to_first_token_outside_server_seconds", "TTFT outside the server"}
)

// QuantileRecord is the name of a recorded quantile over the given rate window.
func QuantileRecord(h Histogram, window string) string {
	return "target:" + h.Name + ":quantile_rate" + window
}

// BaselineRecord is the regression baseline: the median, over
// Config.RegressionBaselineLags, of the 1h quantile centred on the same time
// of day that many days ago.
func BaselineRecord(h Histogram) string { return "target:" + h.Name + ":quantile_rate1h_baseline" }

// SchedulerLag is the prober's own lag: a probe's start minus its planned
// tick, per target and module (no model, no mode).
const SchedulerLag = "servingprobe_scheduler_lag_seconds"

// lagBy is the scheduler lag's aggregation, and the match of the guard.
const lagBy = "job, target, module"

// LagRecord is the p90 of the prober's scheduler lag over window.
func LagRecord(window string) string { return "target:" + SchedulerLag + ":quantile_rate" + window }

// lagGuarded reports whether a histogram's regression alert and baseline
// leave out windows in which the prober lagged (Config.ProberLagSeconds):
// the per-token gaps, which a late read merges.
func lagGuarded(h Histogram) bool { return h == ITL || h == TPOT }

// proberLagging selects the target and module whose prober lagged over
// window, offset by offset ("" for none).
func (c Config) proberLagging(window, offset string) string {
	return fmt.Sprintf("(%s%s > %s)", LagRecord(window), offset, fmtFloat(c.ProberLagSeconds))
}

// SLO record names.
func sliErrors(sli, window string) string {
	return "target:servingprobe_" + sli + "_slo_errors:ratio_rate" + window
}
func sliEvents(sli, window string) string {
	return "target:servingprobe_" + sli + "_slo_events:rate" + window
}

// sliHourly is the number of events in the last hour, which the guards of
// the longer windows add up.
func sliHourly(sli string) string { return "target:servingprobe_" + sli + "_slo_events:increase1h" }

// sliBad is the rate of bad events over 5m, the one raw rate every long
// window is summed from.
func sliBad(sli string) string { return "target:servingprobe_" + sli + "_slo_errors:rate5m" }

// checkBy is the aggregation of the answer checks' series: a verdict has
// no model or mode (only probes are judged), and instance is dropped so an
// HA pair of exporters reads as one.
const checkBy = "job, target, module, check"

// AnswerChecksNotPassed is the record of the share of a check's answers
// that did not pass (fail or error) over window, per target, module and
// check: the number the answer-check alert reads and the dashboard draws.
func AnswerChecksNotPassed(window string) string {
	return "target:servingprobe_answer_checks_not_passed:ratio_rate" + window
}

// TurnTTFT is the per-turn TTFT of conversation probes (turn 1 cold,
// later turns warm).
var TurnTTFT = Histogram{"turn_ttft", "servingprobe_turn_time_to_first_token_seconds", "Turn TTFT"}

// WarmColdRatio is the record of the median TTFT of a conversation
// module's warm turns over its cold first turn's, over window.
func WarmColdRatio(window string) string {
	return "target:" + TurnTTFT.Name + ":warm_cold_ratio_rate" + window
}

// turnsBy is the per-turn series' aggregation: they have no mode (only
// probes hold conversations).
const turnsBy = "job, target, module, model"

// turnTTFTQuantile is the 0.5 quantile of the turn TTFT of the cold first
// turn or of the warm later turns, pooled; its record carries the kind as
// a static label, turns="cold" or "warm".
func (c Config) turnTTFTQuantile(kind, window string) string {
	turn := `turn="1"`
	if kind == "warm" {
		turn = `turn!="1"`
	}
	return HistogramQuantile("0.5", TurnTTFT.Name, join(c.Selector, turn), turnsBy, window)
}

// HistogramQuantile returns a quantile query that works whether Prometheus
// ingested the classic buckets or (2.42 with native-histograms enabled) only
// the native histogram: each side is empty in the other mode.
func HistogramQuantile(q, metric, sel, by, window string) string {
	return histogramQuantileSides(q, metric, sel, by, window, true)
}

// ClassicQuantile is HistogramQuantile for servers that expose only classic
// buckets (vLLM, SGLang).
func ClassicQuantile(q, metric, sel, by, window string) string {
	return histogramQuantileSides(q, metric, sel, by, window, false)
}

func histogramQuantileSides(q, metric, sel, by, window string, native bool) string {
	byLe, sum := "le", "sum"
	if by != "" {
		byLe = by + ", le"
		sum = "sum by (" + by + ")"
	}
	classic := fmt.Sprintf("histogram_quantile(%s, sum by (%s) (rate(%s_bucket{%s}[%s])))", q, byLe, metric, sel, window)
	if !native {
		return classic
	}
	return classic + "\nor\n" + fmt.Sprintf("histogram_quantile(%s, %s (rate(%s{%s}[%s])))", q, sum, metric, sel, window)
}

func join(sel ...string) string {
	var out []string
	for _, s := range sel {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}

type ruleFile struct {
	Groups []group `yaml:"groups"`
}

type group struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	Record      string        `yaml:"record,omitempty"`
	Alert       string        `yaml:"alert,omitempty"`
	Expr        string        `yaml:"expr"`
	For         string        `yaml:"for,omitempty"`
	Labels      yaml.MapSlice `yaml:"labels,omitempty"`
	Annotations yaml.MapSlice `yaml:"annotations,omitempty"`
}

// availabilityErrors is the ratio of failed probes; canceled requests (the
// exporter shutting down or a reload) are neither good nor bad.
func (c Config) availabilityErrors(w string) string {
	return fmt.Sprintf(`sum by (%[1]s) (rate(servingprobe_requests_total{%[2]s}[%[4]s]))
/
sum by (%[1]s) (rate(servingprobe_requests_total{%[3]s}[%[4]s]))`, byTarget,
		join(c.Selector, `mode="probe"`, `outcome!~"success|canceled"`),
		join(c.Selector, `mode="probe"`, `outcome!="canceled"`), w)
}

// availabilityBad is the rate of failed probes: finished minus succeeded, or
// every finished probe while no probe of the series has ever succeeded (the
// exporter creates the success series at the first success).
func (c Config) availabilityBad(w string) string {
	all := c.availabilityEvents(w)
	good := fmt.Sprintf(`sum by (%s) (rate(servingprobe_requests_total{%s}[%s]))`, byTarget,
		join(c.Selector, `mode="probe"`, `outcome="success"`), w)
	return fmt.Sprintf("(\n  %[1]s\n  -\n  %[2]s\n)\nor\n%[1]s", all, good)
}

// ttftBad is the rate of successful probes slower than the threshold, in
// the two forms of ttftErrors.
func (c Config) ttftBad(w string) string {
	re, _ := LeAtMost(c.TTFTThresholdSeconds)
	sel := join(c.Selector, `mode="probe"`)
	return fmt.Sprintf(`(
  sum by (%[1]s) (rate(%[2]s_count{%[3]s}[%[5]s]))
  -
  max by (%[1]s) (rate(%[2]s_bucket{%[3]s, le=~"%[4]s"}[%[5]s]))
)
or
(
  histogram_count(sum by (%[1]s) (rate(%[2]s{%[3]s}[%[5]s])))
  * (1 - histogram_fraction(0, %[6]s, sum by (%[1]s) (rate(%[2]s{%[3]s}[%[5]s]))))
)`, byTarget, TTFT.Name, sel, strings.ReplaceAll(re, `\`, `\\`), w, c.TTFTThresholdSeconds)
}

// benchRunning selects the targets on which a bench window ran at some time
// in the last w: its probes share the server with load the operator asked
// for, so they neither spend the error budget nor page.
func (c Config) benchRunning(w string) string {
	return fmt.Sprintf("(max by (job, target) (max_over_time(servingprobe_bench_running{%s}[%s])) > 0)", c.Selector, w)
}

func (c Config) availabilityEvents(w string) string {
	return fmt.Sprintf(`sum by (%s) (rate(servingprobe_requests_total{%s}[%s]))`, byTarget,
		join(c.Selector, `mode="probe"`, `outcome!="canceled"`), w)
}

// ttftErrors is the ratio of successful probes slower than the threshold.
// Classic: 1 - (highest bucket <= threshold) / count, see LeAtMost. Native:
// histogram_fraction (present since Prometheus 2.40), which interpolates
// inside a 1.1-factor bucket, so it reads the exact threshold.
func (c Config) ttftErrors(w string) string {
	re, _ := LeAtMost(c.TTFTThresholdSeconds)
	sel := join(c.Selector, `mode="probe"`)
	return fmt.Sprintf(`(
  1 - (
    max by (%[1]s) (rate(%[2]s_bucket{%[3]s, le=~"%[4]s"}[%[5]s]))
    /
    sum by (%[1]s) (rate(%[2]s_count{%[3]s}[%[5]s]))
  )
)
or
(
  1 - histogram_fraction(0, %[6]s, sum by (%[1]s) (rate(%[2]s{%[3]s}[%[5]s])))
)`, byTarget, TTFT.Name, sel, strings.ReplaceAll(re, `\`, `\\`), w, c.TTFTThresholdSeconds)
}

func (c Config) ttftEvents(w string) string {
	sel := join(c.Selector, `mode="probe"`)
	return fmt.Sprintf(`sum by (%[1]s) (rate(%[2]s_count{%[3]s}[%[4]s]))
or
histogram_count(sum by (%[1]s) (rate(%[2]s{%[3]s}[%[4]s])))`, byTarget, TTFT.Name, sel, w)
}

// Rules renders rules.yaml.
func (c Config) Rules() ruleFile {
	var quantiles []rule
	for _, h := range []Histogram{TTFT, ITL, TPOT, E2E, TTFAT, AnswerITL, AnswerTPOT} {
		for _, q := range []string{"0.5", "0.9", "0.99"} {
			quantiles = append(quantiles, rule{
				Record: QuantileRecord(h, "5m"),
				Expr:   HistogramQuantile(q, h.Name, c.Selector, byMode, "5m"),
				Labels: yaml.MapSlice{{Key: "quantile", Value: q}},
			})
		}
	}
	for _, h := range []Histogram{TTFT, ITL, TPOT} {
		for _, q := range []string{"0.5", "0.99"} {
			quantiles = append(quantiles, rule{
				Record: QuantileRecord(h, "1h"),
				Expr:   HistogramQuantile(q, h.Name, c.Selector, byMode, "1h"),
				Labels: yaml.MapSlice{{Key: "quantile", Value: q}},
			})
		}
	}
	// The regression alerts' long window; the short one is a 5m record above
	// when it is 5m.
	var windows []string
	for _, w := range []string{c.RegressionWindow, c.RegressionShortWindow, c.RegressionBaselineWindow} {
		if !slices.Contains(windows, w) {
			windows = append(windows, w)
		}
	}
	for _, w := range windows {
		if w == "5m" || w == "1h" {
			continue
		}
		for _, h := range []Histogram{TTFT, ITL, TPOT} {
			for _, q := range c.RegressionQuantiles {
				quantiles = append(quantiles, rule{
					Record: QuantileRecord(h, w),
					Expr:   HistogramQuantile(q, h.Name, join(c.Selector, `mode="probe"`), byMode, w),
					Labels: yaml.MapSlice{{Key: "quantile", Value: q}},
				})
			}
		}
	}
	// The TTFT alerts' annotations read the median of each side of the
	// server's split over the regression window (see ttftSplit).
	for _, h := range []Histogram{ServerTTFT, OutsideTTFT} {
		quantiles = append(quantiles, rule{
			Record: QuantileRecord(h, c.RegressionWindow),
			Expr:   HistogramQuantile("0.5", h.Name, join(c.Selector, `mode="probe"`), byMode, c.RegressionWindow),
			Labels: yaml.MapSlice{{Key: "quantile", Value: "0.5"}},
		})
	}
	// The prober's own lag over the windows the guarded alerts and their
	// baseline read (see Config.ProberLagSeconds).
	for _, w := range []string{c.RegressionWindow, c.RegressionBaselineWindow} {
		if slices.ContainsFunc(quantiles, func(r rule) bool { return r.Record == LagRecord(w) }) {
			continue
		}
		quantiles = append(quantiles, rule{
			Record: LagRecord(w),
			Expr:   HistogramQuantile("0.9", SchedulerLag, c.Selector, lagBy, w),
			Labels: yaml.MapSlice{{Key: "quantile", Value: "0.9"}},
		})
	}
	var baseline []rule
	for _, h := range []Histogram{TTFT, ITL, TPOT} {
		var lags []string
		for _, l := range c.RegressionBaselineLags {
			sec, _ := seconds(l)
			bw, _ := seconds(c.RegressionBaselineWindow)
			// The window that ends half its length after the same time of
			// day: centred on it. A past window in which the prober lagged
			// is left out of a guarded baseline: its gaps read short.
			off := fmt.Sprintf(" offset %ds", int(sec-bw/2))
			q := fmt.Sprintf(`%s{mode="probe", quantile=~"%s"}%s`, QuantileRecord(h, c.RegressionBaselineWindow), strings.Join(c.RegressionQuantiles, "|"), off)
			if lagGuarded(h) {
				q = fmt.Sprintf("(%s unless on (%s) %s)", q, lagBy, c.proberLagging(c.RegressionBaselineWindow, off))
			}
			// Without model: a target whose model changed keeps its
			// baseline, when a regression is most likely (the exporter
			// deletes the old model's series, so a baseline keyed on
			// model would be empty for as long as the lags reach back).
			lags = append(lags, fmt.Sprintf(`label_replace(max without (model) (%s), "lag", "%s", "", "")`, q, l))
		}
		baseline = append(baseline, rule{
			Record: BaselineRecord(h),
			Expr:   fmt.Sprintf("quantile without (lag) (0.5,\n  %s\n)", strings.Join(lags, "\n  or\n  ")),
		})
	}
	var slo []rule
	long := map[string]bool{}
	for _, w := range BurnWindows {
		long[w.Long] = true
	}
	slo = append(slo,
		rule{Record: sliHourly("availability"), Expr: strings.ReplaceAll(c.availabilityEvents("1h"), "rate(", "increase(")},
		rule{Record: sliHourly("ttft"), Expr: strings.ReplaceAll(c.ttftEvents("1h"), "rate(", "increase(")},
		// The 5m rates the long windows add up leave out the 5m windows
		// that saw a bench window: probes next to load the operator asked
		// for do not spend the budget (see benchRunning).
		rule{Record: sliBad("availability"), Expr: fmt.Sprintf("(\n%s\n)\nunless on (job, target)\n%s", c.availabilityBad("5m"), c.benchRunning("5m"))},
		rule{Record: sliEvents("availability", "5m"), Expr: fmt.Sprintf("%s\nunless on (job, target)\n%s", c.availabilityEvents("5m"), c.benchRunning("5m"))},
		rule{Record: sliBad("ttft"), Expr: fmt.Sprintf("(\n%s\n)\nunless on (job, target)\n%s", c.ttftBad("5m"), c.benchRunning("5m"))},
		rule{Record: sliEvents("ttft", "5m"), Expr: fmt.Sprintf("(\n%s\n)\nunless on (job, target)\n%s", c.ttftEvents("5m"), c.benchRunning("5m"))},
	)
	// Windows up to an hour read the raw counters: exact, cheap, and
	// without the lag of a sum of 5m rates (whose window reaches 5m
	// further back, so that a step reads later by half of that).
	// The page's windows (5m, 15m, 1h) read the raw counters: exact,
	// cheap, and without the lag of a sum of 5m rates, whose window reaches
	// 5m further back so that a step reads later by half of that. The fast
	// alert leaves out a target while its windows saw a bench window
	// (benchRunning); the other windows are sums of the 5m rates above,
	// which leave bench windows out themselves.
	direct := map[string]bool{"5m": true, "15m": true, "1h": true, c.ProbeFailureWindow: true}
	windows = append([]string{}, SLIWindows...)
	if !slices.Contains(windows, c.ProbeFailureWindow) {
		windows = append(windows, c.ProbeFailureWindow)
	}
	for _, w := range windows {
		if direct[w] {
			slo = append(slo,
				rule{Record: sliErrors("availability", w), Expr: c.availabilityErrors(w)},
				rule{Record: sliErrors("ttft", w), Expr: c.ttftErrors(w)})
			if long[w] {
				slo = append(slo,
					rule{Record: sliEvents("availability", w), Expr: c.availabilityEvents(w)},
					rule{Record: sliEvents("ttft", w), Expr: c.ttftEvents(w)})
			}
			continue
		}
		// Long windows add up the recorded 5m rates instead of reading days
		// of every raw bucket at each evaluation: the ratio of the sums is
		// the ratio of bad to all events over the window, up to the 5m at
		// its start, and costs one series per target.
		for _, sli := range []string{"availability", "ttft"} {
			slo = append(slo, rule{Record: sliErrors(sli, w),
				Expr: fmt.Sprintf("sum_over_time(%s[%s])\n/\nsum_over_time(%s[%s])", sliBad(sli), w, sliEvents(sli, "5m"), w)})
			if long[w] {
				// The guard counts events: the hourly increases, summed at
				// hour steps, so that a window not yet full of data counts
				// only the probes it holds (an average of 5m rates would
				// count it as full) and no query reads days of raw samples.
				sec, _ := seconds(w)
				ev := fmt.Sprintf("sum_over_time(%s[%s:1h])\n/ %s", sliHourly(sli), w, fmtFloat(sec))
				if sec <= 3600 {
					// An hour of raw counters is cheap and follows the
					// window to the minute.
					ev = c.availabilityEvents(w)
					if sli == "ttft" {
						ev = c.ttftEvents(w)
					}
				}
				slo = append(slo, rule{Record: sliEvents(sli, w), Expr: ev})
			}
		}
	}
	// The answer checks' and conversations' signals: each number an alert
	// reads is recorded once, and the overview draws the same record.
	checks := []rule{{
		Record: AnswerChecksNotPassed(c.AnswerCheckWindow),
		Expr: fmt.Sprintf("sum by (%[1]s) (rate(servingprobe_answer_checks_total{%[2]s}[%[4]s]))\n/\nsum by (%[1]s) (rate(servingprobe_answer_checks_total{%[3]s}[%[4]s]))",
			checkBy, join(c.Selector, `result!="pass"`), c.Selector, c.AnswerCheckWindow),
	}}
	for _, kind := range []string{"cold", "warm"} {
		checks = append(checks, rule{
			Record: QuantileRecord(TurnTTFT, c.WarmTurnWindow),
			Expr:   c.turnTTFTQuantile(kind, c.WarmTurnWindow),
			Labels: yaml.MapSlice{{Key: "quantile", Value: "0.5"}, {Key: "turns", Value: kind}},
		})
	}
	checks = append(checks, rule{
		Record: WarmColdRatio(c.WarmTurnWindow),
		Expr: fmt.Sprintf("%[1]s{turns=\"warm\"}\n/ ignoring (turns)\n%[1]s{turns=\"cold\"}",
			QuantileRecord(TurnTTFT, c.WarmTurnWindow)),
	})
	return ruleFile{Groups: []group{
		{Name: "servingprobe.quantiles", Rules: quantiles},
		{Name: "servingprobe.baseline", Rules: baseline},
		{Name: "servingprobe.slo", Rules: slo},
		{Name: "servingprobe.answers_and_turns", Rules: checks},
	}}
}

func (c Config) annotations(name, summary, description string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "summary", Value: summary},
		{Key: "description", Value: description},
		{Key: "runbook_url", Value: c.RunbookURL + "#" + strings.ToLower(name)},
	}
}

func severity(s string) yaml.MapSlice { return yaml.MapSlice{{Key: "severity", Value: s}} }

const who = "{{ $labels.target }} (module {{ $labels.module }}, model {{ $labels.model }})"

// ttftSplit is the sentence a TTFT alert's description ends with: whether
// the TTFT moved inside the server (its own stated TTFT) or in front of it
// (the rest), from the medians of both sides over the regression window
// against their medians over the day before the last hour. A median over a
// day is a baseline few probes can move, and the hour left out keeps a
// regression of the last hour out of its own baseline. The template queries
// Prometheus only while the alert is active, and the sentence is empty for
// a server that states no timing (the records are absent).
func (c Config) ttftSplit() string {
	rise := func(h Histogram) string {
		sel := fmt.Sprintf(`%s{job="%%[1]s", target="%%[2]s", module="%%[3]s", model="%%[4]s", mode="probe", quantile="0.5"}`,
			QuantileRecord(h, c.RegressionWindow))
		// NaN (a window without probes) compares false and drops out.
		return fmt.Sprintf("{{ with printf `(%s - quantile_over_time(0.5, %s[1d] offset 1h)) > -Inf` $labels.job $labels.target $labels.module $labels.model | query }}", sel, sel)
	}
	return rise(ServerTTFT) + "{{ $in := . | first | value }}" + rise(OutsideTTFT) + "{{ $out := . | first | value }}" +
		fmt.Sprintf(" Against the medians of the day before the last hour, the %s median of the server's own TTFT (as it states it) moved by {{ $in | humanizeDuration }} and of the rest by {{ $out | humanizeDuration }}:", c.RegressionWindow) +
		" {{ if gt $in $out }}inside the engine (queue, prefill, batch, KV cache){{ else }}in front of the engine (network, gateway, API server, TLS, client){{ end }}.{{ end }}{{ end }}"
}

// Alerts renders alerts.yaml.
func (c Config) Alerts() ruleFile {
	var rules []rule
	add := func(r rule, sev, summary, desc string) {
		r.Labels = severity(sev)
		r.Annotations = c.annotations(r.Alert, summary, desc)
		rules = append(rules, r)
	}
	add(rule{
		Alert: "ServingprobeTTFTSLOBreach",
		Expr:  fmt.Sprintf(`%s{mode="probe", quantile="0.99"} > %s`, QuantileRecord(TTFT, "5m"), c.TTFTThresholdSeconds),
		For:   c.TTFTBreachFor,
	}, "warning", "Probe TTFT p99 is above the SLO threshold.",
		fmt.Sprintf("The 5m p99 time to first token of probes to %s is {{ $value | humanizeDuration }}, above the %ss threshold for %s.", who, c.TTFTThresholdSeconds, c.TTFTBreachFor)+c.ttftSplit())

	if c.TTFATThresholdSeconds != "" {
		// Opt-in (see Config.TTFATThresholdSeconds): for reasoning models
		// the answer's wait is the one users feel, and no threshold fits
		// every model.
		add(rule{
			Alert: "ServingprobeTTFATBreach",
			Expr:  fmt.Sprintf(`%s{mode="probe", quantile="0.99"} > %s`, QuantileRecord(TTFAT, "5m"), c.TTFATThresholdSeconds),
			For:   c.TTFATBreachFor,
		}, "warning", "Probe time to first answer token p99 is above its threshold.",
			fmt.Sprintf("The 5m p99 time to the first answer token (after any reasoning) of probes to %s is {{ $value | humanizeDuration }}, above the %ss threshold for %s.", who, c.TTFATThresholdSeconds, c.TTFATBreachFor))
	}

	for _, h := range []Histogram{TTFT, ITL, TPOT} {
		sel := fmt.Sprintf(`{mode="probe", quantile=~"%s"}`, strings.Join(c.RegressionQuantiles, "|"))
		f := fmtFloat(c.RegressionFactor)
		split, guard := "", ""
		if h == TTFT {
			split = c.ttftSplit()
		}
		if lagGuarded(h) {
			guard = fmt.Sprintf("\nunless on (%s)\n%s", lagBy, c.proberLagging(c.RegressionWindow, ""))
		}
		add(rule{
			Alert: "Servingprobe" + strings.ReplaceAll(h.Title, " ", "") + "Regression",
			// The baseline has no model label (see Rules), hence ignoring.
			Expr: fmt.Sprintf("(\n  %[1]s%[3]s\n  > ignoring (model) group_left\n  %[4]s * %[5]s\n)\nand\n(\n  %[2]s%[3]s\n  > ignoring (model) group_left\n  %[4]s * %[5]s\n)%[6]s",
				QuantileRecord(h, c.RegressionWindow), QuantileRecord(h, c.RegressionShortWindow), sel, f, BaselineRecord(h), guard),
			For: c.RegressionFor,
		}, "warning", fmt.Sprintf("Probe %s regressed against the same hour of the last days.", h.Title),
			fmt.Sprintf("The %s quantile {{ $labels.quantile }} of %s for probes to %s is {{ $value | humanizeDuration }}, more than %s times its baseline (the median of the same hour %s ago), and over %s too.",
				c.RegressionWindow, h.Title, who, f, strings.Join(c.RegressionBaselineLags, ", "), c.RegressionShortWindow)+split)
	}

	add(rule{
		Alert: "ServingprobeProbeFailures",
		Expr:  fmt.Sprintf("%s > %s", sliErrors("availability", c.ProbeFailureWindow), fmtFloat(c.ProbeFailureRatio)),
		For:   c.ProbeFailureFor,
	}, "warning", "Probes are failing.",
		fmt.Sprintf("{{ $value | humanizePercentage }} of probes to %s failed over the last %s (threshold %s).", who, c.ProbeFailureWindow, fmtFloat(c.ProbeFailureRatio)))

	// Down means no success for TargetDownAfterSeconds while probes still
	// finish and the last one failed; a target that never succeeded has no
	// last-success series and counts from its first failed probe. Reading
	// the success timestamp, not the last probe's result at two evaluations,
	// keeps a target that fails a fifth of its probes from looking down.
	add(rule{
		Alert: "ServingprobeTargetDown",
		Expr: fmt.Sprintf(`(
  time() - max by (%[1]s) (servingprobe_last_success_timestamp_seconds{%[2]s}) > %[3]s
  or
  (max by (%[1]s) (servingprobe_probe_success{%[2]s}) unless on (%[1]s) servingprobe_last_success_timestamp_seconds{%[2]s})
)
and on (%[1]s)
max by (%[1]s) (servingprobe_probe_success{%[2]s}) == 0`, byTarget, c.Selector, fmtFloat(c.TargetDownAfterSeconds)),
		For: c.TargetDownFor,
	}, "critical", "An inference target fails every probe.",
		fmt.Sprintf("No probe to %s has succeeded for more than %ss, held for %s.", who, fmtFloat(c.TargetDownAfterSeconds), c.TargetDownFor))

	add(rule{
		Alert: "ServingprobeNoProbeResults",
		Expr: fmt.Sprintf("absent(servingprobe_last_probe_timestamp_seconds{%[2]s})\nor\n(time() - max by (%[1]s) (servingprobe_last_probe_timestamp_seconds{%[2]s}) > %[3]s)",
			byTarget, c.Selector, fmtFloat(c.ProbeStaleAfterSeconds)),
		For: c.NoProbeResultsFor,
	}, "warning", "No probe results reach Prometheus.",
		fmt.Sprintf("{{ if $labels.target }}The last probe to %s finished more than %ss ago: its probe loop has stopped.{{ else }}Prometheus has no servingprobe_last_probe_timestamp_seconds series for {%s}: the exporter is down, not scraped, or has no targets.{{ end }}",
			who, fmtFloat(c.ProbeStaleAfterSeconds), strings.ReplaceAll(c.Selector, `"`, `'`)))

	// The prober watches itself: each of these is a way for every other
	// alert to go quiet while targets are broken.
	add(rule{
		Alert: "ServingprobeExporterDown",
		Expr:  fmt.Sprintf("absent(up{%s} == 1)", c.Selector),
		For:   c.ExporterDownFor,
	}, "critical", "No servingprobe replica is scraped.",
		fmt.Sprintf("Prometheus scraped no replica of servingprobe ({%s}) successfully for %s: nothing probes the inference targets, so none of their alerts can fire.",
			strings.ReplaceAll(c.Selector, `"`, `'`), c.ExporterDownFor))

	// One replica of several: absent() sees the others. One series per
	// job, so that one event fires once: a replica whose scrape fails (up
	// == 0) and one that its service discovery dropped (a Kubernetes pod
	// that is not ready has no up at all) both leave fewer replicas up
	// than the job had over most of the last hour, and a replica that
	// fails, then leaves, stays the same alert. Every replica down is
	// ServingprobeExporterDown's alone (no up == 1 left to count).
	add(rule{
		Alert: "ServingprobeReplicaDown",
		Expr:  fmt.Sprintf("count by (job) (up{%[1]s} == 1)\n< quantile_over_time(0.5, count by (job) (up{%[1]s})[1h:1m])", c.Selector),
		For:   c.ReplicaDownFor,
	}, "warning", "A servingprobe replica is down or gone.",
		"Only {{ $value }} replicas of servingprobe ({{ $labels.job }}) are up, fewer than over most of the last hour"+
			"{{ with printf `up{job='%s'} == 0` $labels.job | query }}: Prometheus cannot scrape {{ range $i, $s := . }}{{ if $i }}, {{ end }}{{ $s.Labels.instance }}{{ end }}"+
			"{{ else }}: one stopped or left service discovery{{ end }}. The other replicas keep probing.")

	add(rule{
		Alert: "ServingprobeSchedulerLagging",
		Expr:  fmt.Sprintf(`%s > %s`, LagRecord(c.RegressionWindow), fmtFloat(c.SchedulerLagAlertSeconds)),
		For:   c.SchedulerLagFor,
	}, "warning", "servingprobe starts its probes late.",
		fmt.Sprintf("The %s p90 scheduler lag of probes to {{ $labels.target }} (module {{ $labels.module }}) is {{ $value | humanizeDuration }}, above %ss: the prober is starved of CPU or blocked, and its timings read late.",
			c.RegressionWindow, fmtFloat(c.SchedulerLagAlertSeconds)))

	add(rule{
		Alert: "ServingprobeProbesSkipped",
		Expr:  fmt.Sprintf(`sum by (%s) (increase(servingprobe_probes_skipped_total{%s}[10m])) > %s`, lagBy, c.Selector, fmtFloat(c.ProbesSkippedMax)),
		For:   "1m",
	}, "warning", "servingprobe skips probes.",
		"{{ $value | printf \"%.0f\" }} probe ticks of {{ $labels.target }} (module {{ $labels.module }}) were skipped over the last 10m because max_in_flight probes were still running. Skipped probes count in no SLI, so the target is worse than its error ratio says.")

	add(rule{
		Alert: "ServingprobeTLSCertificateExpiring",
		Expr: fmt.Sprintf("min by (job, target) (servingprobe_tls_cert_expiry_timestamp_seconds{%s}) - time() < %s * 86400",
			c.Selector, fmtFloat(c.TLSCertExpiryDays)),
		For: "10m",
	}, "warning", "A target's TLS certificate expires soon.",
		fmt.Sprintf("The certificate chain servingprobe verified for {{ $labels.target }} expires in {{ $value | humanizeDuration }}, within %s days.", fmtFloat(c.TLSCertExpiryDays)))

	// Regression baselines ignore model, so a change keeps them; this says
	// that the latency after it is a new model's, not a regression alone.
	add(rule{
		Alert: "ServingprobeTargetModelChanged",
		Expr:  fmt.Sprintf("group by (job, target, model) (servingprobe_target_info{%[1]s})\nand on (job, target)\ncount by (job, target) (group by (job, target, model) (max_over_time(servingprobe_target_info{%[1]s}[1h]))) > 1", c.Selector),
		For:   "1m",
	}, "warning", "A target's model changed.",
		"{{ $labels.target }} now serves {{ $labels.model }} and served another model within the last hour. Latency alerts compare it with the same hour of past days, whatever model served then: read a regression now as the new model's.")

	var capacity []string
	for _, g := range []string{"servingprobe_bench_last_slo_capacity_requests_per_second", "servingprobe_bench_last_slo_capacity_max_concurrency"} {
		capacity = append(capacity, fmt.Sprintf("(\n  %[1]s{%[2]s}\n  < %[3]s * quantile_over_time(0.5, %[1]s{%[2]s}[%[4]s] offset 1d)\n)",
			g, c.Selector, fmtFloat(c.CapacityRegressionRatio), c.BaselineWindow))
	}
	add(rule{
		Alert: "ServingprobeCapacityRegression",
		Expr:  strings.Join(capacity, "\nor\n"),
		For:   c.CapacityRegressionFor,
	}, "warning", "An SLO search found less capacity than usual.",
		fmt.Sprintf("The last SLO search of a bench window on {{ $labels.target }} found a capacity of {{ $value }} (requests per second, or concurrent requests), below %s times its median over the %s before yesterday.",
			fmtFloat(c.CapacityRegressionRatio), c.BaselineWindow))

	// Live headroom: the traffic a server serves against the capacity its
	// last scheduled check found. The description gives the capacity's
	// age, since one found weeks ago may no longer be the server's.
	add(rule{
		Alert: "ServingprobeCapacityHeadroomLow",
		Expr:  fmt.Sprintf("servingprobe_capacity_headroom_ratio{%s} < %s", c.Selector, fmtFloat(c.CapacityHeadroomRatio)),
		For:   c.CapacityHeadroomFor,
	}, "warning", "A target serves close to its capacity.",
		"{{ $labels.target }} has {{ $value | humanizePercentage }} headroom: the requests it completed over the last minute, from every client, are that far below the capacity its last capacity check found"+
			` ({{ with printf "servingprobe_capacity_requests_per_second{job='%s',instance='%s',target='%s'}" $labels.job $labels.instance $labels.target | query }}{{ . | first | value | printf "%.4g" }}{{ end }} requests per second,`+
			` found {{ with printf "time() - servingprobe_capacity_check_timestamp_seconds{job='%s',instance='%s',target='%s'}" $labels.job $labels.instance $labels.target | query }}{{ . | first | value | humanizeDuration }}{{ end }} ago).`+
			fmt.Sprintf(" Under %.4g%%, a little more traffic breaks its SLO.", 100*c.CapacityHeadroomRatio))

	// Wrong answers: the share of a check's answers that did not pass,
	// with enough of them in the window that a few unlucky answers of a
	// module probed now and then cannot warn.
	add(rule{
		Alert: "ServingprobeAnswerChecksFailing",
		Expr: fmt.Sprintf("%[1]s > %[2]s\nand on (%[3]s)\nsum by (%[3]s) (increase(servingprobe_answer_checks_total{%[4]s}[%[5]s])) >= %[6]d",
			AnswerChecksNotPassed(c.AnswerCheckWindow), fmtFloat(c.AnswerCheckFailureRatio), checkBy,
			join(c.Selector, `result!="pass"`), c.AnswerCheckWindow, c.AnswerCheckMinFailures),
		For: c.AnswerCheckFor,
	}, "warning", "Answers from a target fail an answer check.",
		fmt.Sprintf("{{ $value | humanizePercentage }} of the answers from {{ $labels.target }} (module {{ $labels.module }}) did not pass the check {{ $labels.check }} over the last %s (failed, or cut before they could be judged; threshold %.4g%%): the server answers, but not what the module asks for.",
			c.AnswerCheckWindow, 100*c.AnswerCheckFailureRatio))

	// The prefix cache: warm turns resend a history a cache can serve, so
	// they are faster than the cold first turn while it does.
	add(rule{
		Alert: "ServingprobeWarmTurnsNotFaster",
		Expr: fmt.Sprintf(`%[1]s > %[2]s
and on (%[3]s)
(
  sum by (%[3]s) (increase(%[4]s_count{%[5]s}[%[6]s]))
  or
  histogram_count(sum by (%[3]s) (increase(%[4]s{%[5]s}[%[6]s])))
) >= %[7]d`, WarmColdRatio(c.WarmTurnWindow), fmtFloat(c.WarmColdTTFTRatio), turnsBy, TurnTTFT.Name,
			join(c.Selector, `turn="1"`), c.WarmTurnWindow, c.WarmTurnMinConversations),
		For: c.WarmTurnFor,
	}, "warning", "Warm conversation turns are no faster than cold ones: the prefix cache no longer serves them.",
		fmt.Sprintf("The %s median TTFT of the warm turns of conversations to %s is {{ $value | printf \"%%.2f\" }} times the cold first turn's (threshold %s): the server recomputes the history it should read from its prefix cache (evicted, disabled, or the turns land on a replica that does not hold it).",
			c.WarmTurnWindow, who, fmtFloat(c.WarmColdTTFTRatio)))

	add(rule{
		Alert: "ServingprobeConfigReloadFailed",
		Expr:  fmt.Sprintf("servingprobe_config_last_reload_successful{%s} == 0", c.Selector),
		For:   c.ReloadFailedFor,
	}, "warning", "servingprobe failed to reload its configuration.",
		"The last configuration reload of servingprobe at {{ $labels.instance }} failed; it keeps probing with the previous configuration.")

	for _, slo := range []struct{ name, title, sli, what string }{
		{"TTFT", "TTFT", "ttft", fmt.Sprintf("latency SLO (%v of successful probes with TTFT <= %ss)", c.LatencySLOTarget, c.TTFTThresholdSeconds)},
		{"Availability", "availability", "availability", fmt.Sprintf("availability SLO (%v of probes succeed)", c.AvailabilitySLOTarget)},
	} {
		target := c.LatencySLOTarget
		if slo.sli == "availability" {
			target = c.AvailabilitySLOTarget
		}
		for _, page := range []bool{true, false} {
			var parts, desc []string
			if page {
				// Most probes bad over 5m: a catastrophe, paged at once.
				parts = append(parts, fmt.Sprintf("(\n  %[1]s / (1 - %[2]s) > %[3]s / (1 - %[2]s)\n  and\n  %[4]s * 300 >= %[5]d\n)\nunless on (job, target)\n%[6]s",
					sliErrors(slo.sli, "5m"), fmtFloat(target), fmtFloat(c.MajorityBadRatio), sliEvents(slo.sli, "5m"), c.MajorityBadMinProbes, c.benchRunning("5m")))
				desc = append(desc, fmt.Sprintf("more than %s of probes bad over 5m", fmtFloat(c.MajorityBadRatio)))
			}
			for _, w := range BurnWindows {
				if w.Page != page {
					continue
				}
				// Each term's value is the long window's burn rate, which
				// the description states.
				term := fmt.Sprintf("(\n  %s / (1 - %s) > %s\n  and\n  %s / (1 - %s) > %s\n  and\n  %s * %s >= %d\n)",
					sliErrors(slo.sli, w.Long), fmtFloat(target), fmtFloat(w.Burn), sliErrors(slo.sli, w.Short), fmtFloat(target), fmtFloat(w.Burn),
					sliEvents(slo.sli, w.Long), fmtFloat(w.LongSeconds), MinEvents(w.Burn, target))
				if w.LongSeconds <= 3600 {
					// Read from the raw counters, which count bench
					// windows too: held while one was in the window.
					term += "\nunless on (job, target)\n" + c.benchRunning(w.Long)
				}
				parts = append(parts, term)
				desc = append(desc, fmt.Sprintf("%s× over %s and %s", fmtFloat(w.Burn), w.Long, w.Short))
			}
			// No `for` on the page: each term's windows already hold the
			// evidence, and a `for` only adds its length to every page.
			name, sev, for_ := "Servingprobe"+slo.name+"ErrorBudgetBurnFast", "critical", "0s"
			if !page {
				name, sev, for_ = "Servingprobe"+slo.name+"ErrorBudgetBurnSlow", "warning", "15m"
			}
			split := ""
			if slo.sli == "ttft" {
				split = c.ttftSplit()
			}
			add(rule{Alert: name, Expr: strings.Join(parts, "\nor\n"), For: for_}, sev,
				fmt.Sprintf("Probes to a target burn the %s error budget too fast.", slo.title),
				fmt.Sprintf("Probes to %s burn the 30-day %s error budget {{ $value | printf \"%%.3g\" }} times as fast as it would last, over the shortest long window of the conditions that hold (%s).",
					who, slo.what, strings.Join(desc, "; or "))+split)
		}
	}
	return ruleFile{Groups: []group{{Name: "servingprobe.alerts", Rules: rules}}}
}
