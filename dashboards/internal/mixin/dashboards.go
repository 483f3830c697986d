package mixin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Dashboard uids are part of users' links and provisioning; they never change.
const (
	OverviewUID         = "servingprobe-overview"
	BenchUID            = "servingprobe-bench"
	ClientVsServerUID   = "servingprobe-client-vs-server"
	rateInterval        = "$__rate_interval"
	dashboardTag        = "servingprobe"
	sel                 = `job=~"$job", target=~"$target", module=~"$module", model=~"$model"`
	selTarget           = `job=~"$job", target=~"$target"`
	probeSel            = sel + `, mode="probe"`
	benchSel            = sel + `, mode="bench"`
	serverSel           = `job=~"$server_job", model_name=~"$server_model"`
	optionalDescription = "Optional: needs vLLM or SGLang server metrics in the same Prometheus; empty otherwise. "
)

// builder lays panels out left to right on the 24-column grid.
type builder struct {
	d       *Dashboard
	x, y, h int
	nextID  int
	ds      *DS
}

func newDashboard(uid, title, description string, vars []Variable) *builder {
	d := &Dashboard{
		Description:   description,
		Editable:      true,
		GraphTooltip:  1,
		Links:         []Link{{AsDropdown: true, IncludeVars: true, KeepTime: true, Tags: []string{dashboardTag}, Title: "servingprobe", Type: "dashboards"}},
		Refresh:       "30s",
		SchemaVersion: 39,
		Tags:          []string{dashboardTag, "llm", "inference"},
		Time:          TimeRange{From: "now-3h", To: "now"},
		Timezone:      "",
		Title:         title,
		UID:           uid,
		Version:       1,
	}
	d.Annotations.List = []Annotation{{
		BuiltIn: 1, Datasource: &DS{Type: "grafana", UID: "-- Grafana --"}, Enable: true, Hide: true,
		IconColor: "rgba(0, 211, 255, 1)", Name: "Annotations & Alerts", Type: "dashboard",
	}}
	d.Templating.List = vars
	return &builder{d: d, nextID: 1, ds: promDS}
}

func (b *builder) row(title, repeat string) {
	b.newline()
	f := false
	b.d.Panels = append(b.d.Panels, &Panel{
		Collapsed: &f, GridPos: GridPos{H: 1, W: 24, X: 0, Y: b.y}, ID: b.id(), Title: title, Type: "row", Repeat: repeat,
	})
	b.y++
}

func (b *builder) newline() {
	if b.x > 0 {
		b.y += b.h
		b.x, b.h = 0, 0
	}
}

func (b *builder) id() int { b.nextID++; return b.nextID - 1 }

func (b *builder) add(p *Panel, w, h int) {
	if b.x+w > 24 {
		b.newline()
	}
	p.ID = b.id()
	p.GridPos = GridPos{H: h, W: w, X: b.x, Y: b.y}
	p.Datasource = b.ds
	for i := range p.Targets {
		p.Targets[i].Datasource = b.ds
		p.Targets[i].RefID = string(rune('A' + i))
	}
	b.x += w
	b.h = max(b.h, h)
	b.d.Panels = append(b.d.Panels, p)
}

func q(expr, legend string) Target {
	return Target{EditorMode: "code", Expr: expr, Format: "time_series", LegendFormat: legend, Range: true}
}

func ptr[T any](v T) *T { return &v }

func thresholds(steps ...float64) Thresholds {
	t := Thresholds{Mode: "absolute", Steps: []Step{{Color: "green"}}}
	colors := []string{"orange", "red"}
	for i, s := range steps {
		t.Steps = append(t.Steps, Step{Color: colors[min(i+len(colors)-len(steps), len(colors)-1)], Value: ptr(s)})
	}
	return t
}

func timeseries(title, desc, unit string, th Thresholds, targets ...Target) *Panel {
	custom := map[string]any{"drawStyle": "line", "fillOpacity": 10, "lineWidth": 1, "showPoints": "never", "spanNulls": false}
	if len(th.Steps) > 1 {
		custom["thresholdsStyle"] = map[string]any{"mode": "line+area"}
	}
	return &Panel{
		Type: "timeseries", Title: title, Description: desc, Targets: targets,
		FieldConfig: &FieldConfig{Defaults: FieldDefaults{Unit: unit, Min: ptr(0.0), Custom: custom, Thresholds: th, Mappings: []any{}}, Overrides: []any{}},
		Options: map[string]any{
			"legend":  map[string]any{"displayMode": "table", "placement": "bottom", "showLegend": true, "calcs": []string{"mean", "max", "lastNotNull"}},
			"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
		},
	}
}

func stat(title, desc, unit string, th Thresholds, mappings []any, targets ...Target) *Panel {
	if mappings == nil {
		mappings = []any{}
	}
	return &Panel{
		Type: "stat", Title: title, Description: desc, Targets: targets,
		FieldConfig: &FieldConfig{Defaults: FieldDefaults{Unit: unit, Thresholds: th, Mappings: mappings, Color: map[string]any{"mode": "thresholds"}}, Overrides: []any{}},
		Options: map[string]any{
			"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}, "fields": "", "values": false},
			"colorMode":     "value", "graphMode": "area", "justifyMode": "auto", "orientation": "auto", "textMode": "auto",
		},
	}
}

// heatmapInterval is the heatmaps' minimum interval: two scrapes at the
// usual 30s, so that every interval's increase has two samples to take.
const heatmapInterval = "1m"

// heatmap shows the bucket counts per interval. Each cell is the increase
// over $__interval, the query's own step, so that the windows of
// neighbouring cells do not overlap: over $__rate_interval (four scrapes)
// at a 30s step every observation was counted in two to four cells. The
// classic side yields one series per `le` (format heatmap); the native side
// a native-histogram series, which recent Grafana versions render in the
// heatmap panel (not verified here: no Grafana runs on the build machines).
func heatmap(title, desc string, h Histogram, selector string) *Panel {
	return heatmapOf(title, desc, "s", fmt.Sprintf("sum by (le) (increase(%[1]s_bucket{%[2]s}[$__interval]))\nor\nsum(increase(%[1]s{%[2]s}[$__interval]))", h.Name, selector))
}

// heatmapOf is a heatmap of a classic bucket query (format heatmap) whose
// y axis is in unit.
func heatmapOf(title, desc, unit, expr string) *Panel {
	t := q(expr, "{{le}}")
	t.Format = "heatmap"
	return &Panel{
		Type: "heatmap", Title: title, Description: desc, Targets: []Target{t}, Interval: heatmapInterval,
		FieldConfig: &FieldConfig{Defaults: FieldDefaults{Custom: map[string]any{"hideFrom": map[string]any{"legend": false, "tooltip": false, "viz": false}}, Mappings: []any{}, Thresholds: thresholds(), Unit: "short"}, Overrides: []any{}},
		Options: map[string]any{
			"calculate":    false,
			"cellGap":      1,
			"color":        map[string]any{"exponent": 0.5, "fill": "dark-orange", "mode": "scheme", "reverse": false, "scale": "exponential", "scheme": "Oranges", "steps": 64},
			"filterValues": map[string]any{"le": 1e-9},
			"legend":       map[string]any{"show": true},
			"rowsFrame":    map[string]any{"layout": "auto"},
			"tooltip":      map[string]any{"mode": "single", "showColorScale": false, "yHistogram": false},
			"yAxis":        map[string]any{"axisPlacement": "left", "reverse": false, "unit": unit},
		},
	}
}

func quantileTargets(h Histogram, selector, by string) []Target {
	var ts []Target
	for _, qq := range []string{"0.5", "0.9", "0.99"} {
		legend := quantileLegend(qq)
		if by != "" {
			legend += " {{" + by + "}}"
		}
		ts = append(ts, q(HistogramQuantile(qq, h.Name, selector, by, rateInterval), legend))
	}
	return ts
}

func queryVar(name, label, query string) Variable {
	return Variable{
		AllValue: ".*", Current: map[string]any{"selected": true, "text": []string{"All"}, "value": []string{"$__all"}},
		Datasource: promDS, Definition: query, IncludeAll: true, Label: label, Multi: true, Name: name,
		Options: []any{}, Query: query, Refresh: 2, Sort: 1, Type: "query",
	}
}

func standardVars() []Variable {
	return []Variable{
		{Current: map[string]any{}, Label: "Data source", Name: "datasource", Options: []any{}, Query: "prometheus", Refresh: 1, Type: "datasource"},
		queryVar("job", "Job", "label_values(servingprobe_build_info, job)"),
		queryVar("target", "Target", `label_values(servingprobe_target_info{job=~"$job"}, target)`),
		queryVar("module", "Module", `label_values(servingprobe_requests_total{job=~"$job", target=~"$target"}, module)`),
		queryVar("model", "Model", `label_values(servingprobe_requests_total{job=~"$job", target=~"$target", module=~"$module"}, model)`),
	}
}

// modelChangeAnnotation marks the moment a target's model changed: the
// first step at which servingprobe_target_info carries a model it did not
// carry a minute before, on a target that served another model within the
// hour (the window of ServingprobeTargetModelChanged). A target's first
// model is no change, and an exporter restart, which keeps the series,
// marks nothing. The exporter sets no timestamp of the change, so the mark
// is as fine as the dashboard's step and the scrape interval allow.
func modelChangeAnnotation() Annotation {
	info := fmt.Sprintf("servingprobe_target_info{%s}", selTarget)
	return Annotation{
		Datasource: promDS, Enable: true, IconColor: "blue", Name: "Model changes",
		Expr: fmt.Sprintf("(\n  group by (job, target, model) (%[1]s)\n  unless on (job, target, model)\n  %[1]s offset 1m\n)\nand on (job, target)\ncount by (job, target) (group by (job, target, model) (max_over_time(%[1]s[1h]))) > 1", info),
		Step: "1m", TagKeys: "target,model", TitleFormat: "{{target}} now serves {{model}}",
	}
}

func benchAnnotations(enableMarkers bool) []Annotation {
	ts := func(which string) string {
		return fmt.Sprintf("servingprobe_bench_last_%s_timestamp_seconds{%s}", which, selTarget)
	}
	return []Annotation{
		{
			Datasource: promDS, Enable: true, IconColor: "rgba(163, 82, 204, 0.5)", Name: "Bench windows",
			// bench_running, not "start > end": during a target's first
			// run the end gauge does not exist yet, so that comparison
			// matched nothing and the first window was never shaded.
			Expr: fmt.Sprintf("max by (target) (servingprobe_bench_running{%s} > 0)", selTarget),
			Step: "10s", TagKeys: "target", TitleFormat: "Bench running on {{target}}",
		},
		{
			Datasource: promDS, Enable: enableMarkers, IconColor: "purple", Name: "Bench starts",
			Expr: fmt.Sprintf("max by (target) (%s > 0) * 1000", ts("start")), Step: "1m",
			TagKeys: "target", TitleFormat: "Bench started on {{target}}", UseValueForTime: true,
		},
		{
			// One marker per point of a sweep or SLO search (and one per
			// plain run, after its warmup).
			Datasource: promDS, Enable: enableMarkers, IconColor: "orange", Name: "Bench points",
			Expr: fmt.Sprintf("max by (target) (servingprobe_bench_point_start_timestamp_seconds{%s} > 0) * 1000", selTarget), Step: "1m",
			TagKeys: "target", TitleFormat: "Bench point started on {{target}}", UseValueForTime: true,
		},
		{
			Datasource: promDS, Enable: enableMarkers, IconColor: "blue", Name: "Bench ends",
			Expr: fmt.Sprintf("max by (target) (%s > 0) * 1000", ts("end")), Step: "1m",
			TagKeys: "target", TitleFormat: "Bench ended on {{target}}", UseValueForTime: true,
		},
	}
}

func successRatio(selector string) string {
	return fmt.Sprintf(`sum(rate(servingprobe_requests_total{%[1]s, outcome="success"}[%[2]s]))
/
sum(rate(servingprobe_requests_total{%[1]s, outcome!="canceled"}[%[2]s]))`, selector, rateInterval)
}

// reasoningShare is the share of output tokens that went to reasoning,
// per target, labelled with where the reasoning count came from. The two
// counters carry the same labels, so they divide series by series; the
// source is joined from target_info, one series per target (topk: two
// exporters scraping one target could disagree, and a many-to-many join
// would fail the whole query).
func reasoningShare(selector string) string {
	return fmt.Sprintf(`sum by (target) (rate(servingprobe_reasoning_tokens_total{%[1]s}[%[2]s]))
/
sum by (target) (rate(servingprobe_generation_tokens_total{%[1]s}[%[2]s]))
* on (target) group_left (reasoning_token_source)
topk by (target) (1, max by (target, reasoning_token_source) (servingprobe_target_info{%[3]s}))`, selector, rateInterval, selTarget)
}

// moduleSel is the selector of a row repeated over the module variable:
// Grafana substitutes the row's one module into $module, so that nothing in
// the row adds up two modules, whose latencies differ by design.
const moduleSel = sel

// quantileLegend names a quantile as a percentile: 0.5 is p50, 0.9 p90,
// 0.99 p99 and 0.999 p99.9.
func quantileLegend(qq string) string {
	d := strings.TrimPrefix(qq, "0.")
	if len(d) == 1 {
		d += "0"
	}
	if len(d) > 2 {
		d = d[:2] + "." + d[2:]
	}
	return "p" + d
}

// recordedQuantiles are the p50, p90 and p99 of h over 5m, per target, from
// rules.yaml's records: the same series the regression and breach alerts
// read. A 1m rate of one probe every 15s holds four probes, so its p99 is
// their maximum; 5m is the shortest window whose quantiles the alerts trust.
// max by (target) only merges the series of a model change, which overlap
// for the 5m after it.
func recordedQuantiles(h Histogram, selector string) []Target {
	var ts []Target
	for _, qq := range []string{"0.5", "0.9", "0.99"} {
		ts = append(ts, q(fmt.Sprintf(`max by (target) (%s{%s, mode="probe", quantile="%s"})`, QuantileRecord(h, "5m"), selector, qq),
			quantileLegend(qq)+" {{target}}"))
	}
	return ts
}

// runbook links a panel to the sections of docs/runbook.md that say what to
// do about what it shows; anchors are the alerts' names, lower-cased, as
// GitHub renders headings.
func (c Config) runbook(p *Panel, sections ...string) *Panel {
	for _, s := range sections {
		p.Links = append(p.Links, PanelLink{TargetBlank: true, Title: "Runbook: " + s, URL: c.RunbookURL + "#" + githubAnchor(s)})
	}
	return p
}

var anchorChars = regexp.MustCompile(`[^a-z0-9 _-]`)

// githubAnchor is the anchor GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	s := anchorChars.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), "")
	return strings.ReplaceAll(s, " ", "-")
}

// sloPeriod is the period every error budget is over (the burn-rate
// windows and thresholds of BurnWindows assume it).
const sloPeriod = "30d"

// fleetColumn is one column of the fleet table: an instant query per
// target and the field options of its cells.
type fleetColumn struct {
	title, expr, unit string
	th                Thresholds
	decimals          int
}

// fleetTable is one line per target: the numbers an on-call reads first,
// each the worst module of the target (alerts fire per module, so a pooled
// number would hide the module that pages). Every column is an instant
// query of a recorded series; Grafana merges them on target.
func (c Config) fleetTable() *Panel {
	th, _ := strconv.ParseFloat(c.TTFTThresholdSeconds, 64)
	fs := selTarget + `, module=~"$module", model=~"$model"`
	burn := func(sli string, target float64) string {
		return fmt.Sprintf("max by (target) (%s{%s}) / (1 - %s)", sliErrors(sli, "1h"), fs, fmtFloat(target))
	}
	// The budget left of the SLO period: one minus the bad events over the
	// allowed ones, from the recorded 5m rates (one sample per rule
	// evaluation, so the sums weigh every evaluation alike).
	budget := func(sli string, target float64) string {
		return fmt.Sprintf("min by (target) (\n  1 - sum_over_time(%[1]s{%[3]s}[%[4]s]) / sum_over_time(%[2]s{%[3]s}[%[4]s]) / (1 - %[5]s)\n)",
			sliBad(sli), sliEvents(sli, "5m"), fs, sloPeriod, fmtFloat(target))
	}
	ttft := func(qq string) string {
		return fmt.Sprintf(`max by (target) (%s{%s, mode="probe", quantile="%s"})`, QuantileRecord(TTFT, "5m"), fs, qq)
	}
	burnTh := thresholds(6, 14.4)
	budgetTh := Thresholds{Mode: "absolute", Steps: []Step{{Color: "red"}, {Color: "orange", Value: ptr(0.0)}, {Color: "green", Value: ptr(0.25)}}}
	ttftTh := Thresholds{Mode: "absolute", Steps: []Step{{Color: "green"}, {Color: "red", Value: ptr(th)}}}
	cols := []fleetColumn{
		{"5m error ratio", fmt.Sprintf("max by (target) (%s{%s})", sliErrors("availability", "5m"), fs), "percentunit",
			Thresholds{Mode: "absolute", Steps: []Step{{Color: "green"}, {Color: "red", Value: ptr(1 - c.AvailabilitySLOTarget)}}}, 2},
		{"TTFT p50", ttft("0.5"), "s", ttftTh, 3},
		{"TTFT p99", ttft("0.99"), "s", ttftTh, 3},
		{"TTFT burn 1h", burn("ttft", c.LatencySLOTarget), "none", burnTh, 1},
		{"availability burn 1h", burn("availability", c.AvailabilitySLOTarget), "none", burnTh, 1},
		{"TTFT budget left", budget("ttft", c.LatencySLOTarget), "percentunit", budgetTh, 0},
		{"availability budget left", budget("availability", c.AvailabilitySLOTarget), "percentunit", budgetTh, 0},
	}
	var (
		targets   []Target
		overrides []any
	)
	rename := map[string]any{}
	order := map[string]any{"target": 0}
	for i, col := range cols {
		t := q(col.expr, "")
		t.Format, t.Instant, t.Range = "table", true, false
		targets = append(targets, t)
		// Grafana names a merged table's value columns "Value #<refId>".
		field := "Value #" + string(rune('A'+i))
		rename[field] = col.title
		order[field] = i + 1
		overrides = append(overrides, map[string]any{
			"matcher": map[string]any{"id": "byName", "options": col.title},
			"properties": []any{
				map[string]any{"id": "unit", "value": col.unit},
				map[string]any{"id": "decimals", "value": col.decimals},
				map[string]any{"id": "thresholds", "value": col.th},
				map[string]any{"id": "custom.cellOptions", "value": map[string]any{"type": "color-background", "mode": "basic"}},
			},
		})
	}
	desc := fmt.Sprintf("One line per target, each number the worst module of the target over the last 5m or 1h, from rules.yaml's records (the series the alerts read). "+
		"5m error ratio: failed over finished probes, red above the availability budget (1 - %[1]v). TTFT p50 and p99: red above the SLO threshold %[2]ss. "+
		"Burn 1h: how many times faster than sustainable the %[3]s budget burns; orange above 6, red above 14.4 (the paging levels). "+
		"Budget left: the share of the %[3]s error budget not yet spent, below 0 when it is overspent; over the records the last %[3]s holds, so in the first days of the records it extrapolates from few probes. A target with no line has no recorded series yet (no probe in 5m, or rules.yaml not loaded).",
		c.AvailabilitySLOTarget, c.TTFTThresholdSeconds, sloPeriod)
	return &Panel{
		Type: "table", Title: "Fleet", Description: desc, Targets: targets,
		FieldConfig: &FieldConfig{Defaults: FieldDefaults{Custom: map[string]any{"align": "auto", "filterable": true}, Mappings: []any{}, Thresholds: thresholds(), Unit: "none"}, Overrides: overrides},
		Options:     map[string]any{"showHeader": true, "cellHeight": "sm", "sortBy": []any{map[string]any{"displayName": "TTFT burn 1h", "desc": true}}},
		Transformations: []any{
			map[string]any{"id": "merge", "options": map[string]any{}},
			map[string]any{"id": "organize", "options": map[string]any{
				"excludeByName": map[string]any{"Time": true}, "indexByName": order, "renameByName": rename,
			}},
		},
	}
}

// lastProbeAge is the age of the last probe and of the last success of
// each target in the row's module. A module that never succeeded has no
// last-success series; it shows -1, mapped to "never", instead of vanishing
// (a max over modules would have hidden it behind one that succeeds).
func (c Config) lastProbeAge() *Panel {
	never := []any{map[string]any{"type": "value", "options": map[string]any{"-1": map[string]any{"text": "never", "color": "red", "index": 0}}}}
	return stat("Last probe age", "Seconds since the last probe of each target in this module finished, and since its last successful one; never (red) when the module has not succeeded since the exporter started.", "s",
		thresholds(c.ProbeStaleAfterSeconds/2, c.ProbeStaleAfterSeconds), never,
		q(fmt.Sprintf("time() - max by (target) (servingprobe_last_probe_timestamp_seconds{%s})", moduleSel), "{{target}} last probe"),
		q(fmt.Sprintf(`time() - max by (target) (servingprobe_last_success_timestamp_seconds{%[1]s})
or
0 * max by (target) (servingprobe_last_probe_timestamp_seconds{%[1]s}) - 1`, moduleSel), "{{target}} last success"))
}

// Overview renders the overview dashboard: the fleet first, then one row
// per module.
func (c Config) Overview() *Dashboard {
	th, _ := strconv.ParseFloat(c.TTFTThresholdSeconds, 64)
	b := newDashboard(OverviewUID, "servingprobe / Overview",
		"Client-side latency and availability of LLM inference targets, as measured by servingprobe's continuous probes. The fleet table first, one line per target; then one row per module. Latency and SLO panels read rules.yaml's records.",
		standardVars())
	b.d.Annotations.List = append(b.d.Annotations.List, benchAnnotations(false)...)
	// A configuration (re)load changes what is probed and how: a marker at
	// the moment each exporter last loaded its file, from the gauge it
	// sets then (the first load at start too), so that a step in a panel
	// can be read against it. A failed reload keeps the old file: the
	// Config reload stat and ServingprobeConfigReloadFailed say so.
	b.d.Annotations.List = append(b.d.Annotations.List, Annotation{
		Datasource: promDS, Enable: true, IconColor: "yellow", Name: "Config reloads",
		Expr: `max by (instance) (servingprobe_config_last_reload_success_timestamp_seconds{job=~"$job"}) * 1000`, Step: "1m",
		TagKeys: "instance", TitleFormat: "Configuration loaded on {{instance}}", UseValueForTime: true,
	})
	b.d.Annotations.List = append(b.d.Annotations.List, modelChangeAnnotation())

	b.row("Fleet", "")
	b.add(c.runbook(c.fleetTable(), "ServingprobeTTFTErrorBudgetBurnFast", "ServingprobeAvailabilityErrorBudgetBurnFast", "SLO windows and probe rate"), 24, 8)
	b.add(stat("Last probe succeeded", "servingprobe_probe_success of the last finished probe, per target and module.", "none", Thresholds{Mode: "absolute", Steps: []Step{{Color: "red"}, {Color: "green", Value: ptr(1.0)}}},
		[]any{map[string]any{"type": "value", "options": map[string]any{"0": map[string]any{"text": "FAIL", "index": 0}, "1": map[string]any{"text": "OK", "index": 1}}}},
		q(fmt.Sprintf("min by (target, module) (servingprobe_probe_success{%s})", sel), "{{target}} {{module}}")), 8, 4)
	b.add(stat("Success ratio over the range", "Share of finished probes that succeeded over the dashboard range (canceled probes excluded), per target.", "percentunit",
		Thresholds{Mode: "absolute", Steps: []Step{{Color: "red"}, {Color: "green", Value: ptr(c.AvailabilitySLOTarget)}}}, nil,
		q(fmt.Sprintf(`sum by (target) (increase(servingprobe_requests_total{%[1]s, outcome="success"}[$__range]))
/
sum by (target) (increase(servingprobe_requests_total{%[1]s, outcome!="canceled"}[$__range]))`, probeSel), "{{target}}")), 8, 4)
	b.add(c.runbook(stat("Config reload", "1 when the last configuration reload of the exporter succeeded.", "none",
		Thresholds{Mode: "absolute", Steps: []Step{{Color: "red"}, {Color: "green", Value: ptr(1.0)}}},
		[]any{map[string]any{"type": "value", "options": map[string]any{"0": map[string]any{"text": "FAILED", "index": 0}, "1": map[string]any{"text": "OK", "index": 1}}}},
		q(`min by (instance) (servingprobe_config_last_reload_successful{job=~"$job"})`, "{{instance}}")), "ServingprobeConfigReloadFailed"), 4, 4)
	b.add(stat("Targets", "Configured targets (servingprobe_target_info).", "none", thresholds(), nil,
		q(`count(servingprobe_target_info{job=~"$job", target=~"$target"})`, "targets")), 4, 4)

	b.row("SLO burn rate (needs rules.yaml)", "")
	for _, s := range []struct{ title, sli, alert string }{{"TTFT SLO", "ttft", "ServingprobeTTFTErrorBudgetBurnFast"}, {"Availability SLO", "availability", "ServingprobeAvailabilityErrorBudgetBurnFast"}} {
		target := c.LatencySLOTarget
		if s.sli == "availability" {
			target = c.AvailabilitySLOTarget
		}
		var ts []Target
		for _, w := range []string{"1h", "6h"} {
			ts = append(ts, q(fmt.Sprintf("%s{%s} / (1 - %s)", sliErrors(s.sli, w), sel, fmtFloat(target)), "{{target}} {{module}} "+w))
		}
		b.add(c.runbook(timeseries(s.title+" error budget burn rate",
			fmt.Sprintf("How many times faster than sustainable the 30-day error budget (target %v) burns, per target and module as the alerts read it, from the recorded SLI ratios. The fast-burn page fires above 14.4 (1h and 5m) or 6 (6h and 30m).", target),
			"none", thresholds(6, 14.4), ts...), s.alert), 12, 7)
	}

	// One row per module: a module is one kind of request (prompt and
	// output length), and its latencies are not comparable with another's.
	// Lines are targets, so the panels stay the same in number however
	// many targets there are.
	b.row("Module $module", "module")
	b.add(c.runbook(timeseries("TTFT", "Time to first token of probes over 5m per target (rules.yaml's records, as the alerts read them): first output-bearing event minus sent. The line is the SLO threshold.", "s", thresholds(th), recordedQuantiles(TTFT, moduleSel)...),
		"ServingprobeTTFTSLOBreach", "ServingprobeTTFTRegression"), 8, 8)
	b.add(c.runbook(timeseries("ITL", "Inter-token latency of probes over 5m per target, per token: a chunk of n tokens contributes n samples of gap/n.", "s", thresholds(), recordedQuantiles(ITL, moduleSel)...),
		"ServingprobeITLRegression"), 8, 8)
	b.add(c.runbook(timeseries("TPOT", "Time per output token of probes over 5m per target: (end - first token) / (output tokens - 1).", "s", thresholds(), recordedQuantiles(TPOT, moduleSel)...),
		"ServingprobeTPOTRegression"), 8, 8)
	// The answer phase sits under TTFT, ITL and TPOT, column by column, so
	// that each pair reads at a glance: for a model that does not reason
	// the two rows are the same.
	b.add(c.runbook(timeseries("Time to first answer token", "Time to the first answer token of probes over 5m per target: the first event with answer text, after any reasoning (reasoning fields or events, think tags), minus sent. Equal to TTFT for a model that does not reason; the gap to TTFT is the time spent thinking.", "s", thresholds(),
		recordedQuantiles(TTFAT, moduleSel)...), "ServingprobeTTFATBreach"), 8, 8)
	b.add(timeseries("Answer ITL", "Inter-token latency of the answer of probes over 5m per target, per token, from the first answer token on: the reasoning's gaps and the wait for the answer are left out. Equal to ITL for a model that does not reason.", "s", thresholds(),
		recordedQuantiles(AnswerITL, moduleSel)...), 8, 8)
	b.add(timeseries("Answer TPOT", "Time per output token of the answer of probes over 5m per target: (end - first answer token) / (answer tokens - 1). Equal to TPOT for a model that does not reason.", "s", thresholds(),
		recordedQuantiles(AnswerTPOT, moduleSel)...), 8, 8)
	// The reasoning share sits right under TTFAT: the gap from TTFT to
	// TTFAT is the time spent thinking, the share is the output it took.
	b.add(timeseries("Reasoning share of output tokens", "Reasoning tokens over output tokens of successful probes (servingprobe_reasoning_tokens_total / servingprobe_generation_tokens_total) per target; answer tokens are the rest. The legend names where the reasoning count came from (servingprobe_target_info's reasoning_token_source): usage when the server stated it, counted when servingprobe added up the reasoning events' tokens, none when no probe has reasoned (the share is then 0).", "percentunit", thresholds(),
		q(reasoningShare(probeSel), "{{target}} ({{reasoning_token_source}})")), 6, 8)
	b.add(timeseries("E2E latency", "End-to-end latency of probes over 5m per target: end of stream minus sent.", "s", thresholds(), recordedQuantiles(E2E, moduleSel)...), 6, 8)
	b.add(heatmap("TTFT distribution", "Probes of this module per TTFT bucket and interval, over the selected targets: each cell counts the probes of one interval, which do not overlap.", TTFT, probeSel), 6, 8)
	b.add(heatmap("ITL distribution", "Tokens of this module per inter-token-latency bucket and interval, over the selected targets: each cell counts one interval's tokens, which do not overlap.", ITL, probeSel), 6, 8)
	b.add(c.runbook(timeseries("Probe success ratio", "Successful over finished probes over 5m per target (canceled excluded), from rules.yaml's availability SLI, as the alerts read it. The line is the availability SLO target.", "percentunit",
		Thresholds{Mode: "absolute", Steps: []Step{{Color: "red"}, {Color: "green", Value: ptr(c.AvailabilitySLOTarget)}}},
		q(fmt.Sprintf("1 - max by (target) (%s{%s})", sliErrors("availability", "5m"), moduleSel), "{{target}}")), "ServingprobeProbeFailures"), 8, 7)
	b.add(c.runbook(timeseries("Probe errors by outcome", "Failed probes per second, by target and outcome; only outcomes that occurred, so that a fleet of healthy targets draws no line (No data means no failure).", "reqps", thresholds(),
		q(fmt.Sprintf(`sum by (target, outcome) (rate(servingprobe_requests_total{%s, outcome!="success"}[%s])) > 0`, probeSel, rateInterval), "{{target}} {{outcome}}")), "ServingprobeProbeFailures"), 8, 7)
	b.add(timeseries("Throughput", "Probes per second (all outcomes) and tokens per second of successful probes, over the selected targets.", "short", thresholds(),
		q(fmt.Sprintf(`sum(rate(servingprobe_requests_total{%s}[%s]))`, probeSel, rateInterval), "probes/s"),
		q(fmt.Sprintf(`sum(rate(servingprobe_generation_tokens_total{%s}[%s]))`, probeSel, rateInterval), "output tokens/s"),
		q(fmt.Sprintf(`sum(rate(servingprobe_prompt_tokens_total{%s}[%s]))`, probeSel, rateInterval), "prompt tokens/s")), 8, 7)
	b.add(c.runbook(c.lastProbeAge(), "ServingprobeTargetDown", "ServingprobeNoProbeResults"), 8, 5)
	b.add(timeseries("Scheduler lag", "Actual probe start minus planned tick (p99), per target. High values mean the exporter is overloaded.", "s", thresholds(),
		q(HistogramQuantile("0.99", "servingprobe_scheduler_lag_seconds", selTarget+`, module=~"$module"`, "target", rateInterval), "p99 {{target}}")), 8, 5)
	b.add(timeseries("Skipped probes", "Ticks that found the maximum number of in-flight probes running, per second and target.", "short", thresholds(),
		q(fmt.Sprintf(`sum by (target) (rate(servingprobe_probes_skipped_total{%s, module=~"$module"}[%s]))`, selTarget, rateInterval), "{{target}}")), 8, 5)
	// The signals beside latency, from the records their alerts read:
	// whether the answers are right, and whether the prefix cache serves
	// conversations. A module without checks or turns draws nothing.
	b.add(c.runbook(timeseries("Answer check pass rate",
		fmt.Sprintf("Share of the answers of each target that passed each answer check over %s (rules.yaml's record, as ServingprobeAnswerChecksFailing reads it): an answer that failed or could not be judged (cut at output_len) did not pass. The line is the alert's threshold, %.4g%% not passing. Empty for a module without checks (docs/checks.md).", c.AnswerCheckWindow, 100*c.AnswerCheckFailureRatio),
		"percentunit", Thresholds{Mode: "absolute", Steps: []Step{{Color: "red"}, {Color: "green", Value: ptr(1 - c.AnswerCheckFailureRatio)}}},
		q(fmt.Sprintf(`1 - max by (target, check) (%s{%s, module=~"$module"})`, AnswerChecksNotPassed(c.AnswerCheckWindow), selTarget), "{{target}} {{check}}")),
		"ServingprobeAnswerChecksFailing"), 8, 7)
	b.add(c.runbook(timeseries("Cold vs warm TTFT (conversations)",
		fmt.Sprintf("Median TTFT over %s of the cold first turn of conversation probes, whose fresh prefix no cache holds, and of the warm later turns, whose history a prefix cache can serve (rules.yaml's records). The gap is what the prefix cache saves; warm climbing to cold means it stopped. Empty for a module without turns (docs/conversations.md).", c.WarmTurnWindow),
		"s", thresholds(),
		q(fmt.Sprintf(`max by (target, turns) (%s{%s, quantile="0.5"})`, QuantileRecord(TurnTTFT, c.WarmTurnWindow), moduleSel), "p50 {{target}} {{turns}}")),
		"ServingprobeWarmTurnsNotFaster"), 8, 7)
	b.add(c.runbook(timeseries("Warm / cold TTFT ratio",
		fmt.Sprintf("Median TTFT of the warm turns of conversation probes over the cold first turn's, over %s, per target: well under 1 while the prefix cache serves the history. The line is ServingprobeWarmTurnsNotFaster's threshold, %s.", c.WarmTurnWindow, fmtFloat(c.WarmColdTTFTRatio)),
		"none", thresholds(c.WarmColdTTFTRatio),
		q(fmt.Sprintf(`max by (target) (%s{%s})`, WarmColdRatio(c.WarmTurnWindow), moduleSel), "{{target}}")),
		"ServingprobeWarmTurnsNotFaster"), 8, 7)
	return b.d
}

// Bench renders the bench dashboard.
func (c Config) Bench() *Dashboard {
	th, _ := strconv.ParseFloat(c.TTFTThresholdSeconds, 64)
	b := newDashboard(BenchUID, "servingprobe / Bench",
		"Bench windows triggered through servingprobe's API: throughput, latency, client queue time and errors of the bench requests, and how the bystander probes fared during the window. Zoom to a window marked by the annotations.",
		standardVars())
	b.d.Time = TimeRange{From: "now-1h", To: "now"}
	b.d.Refresh = "10s"
	b.d.Annotations.List = append(b.d.Annotations.List, benchAnnotations(true)...)

	b.row("Last run", "")
	b.add(stat("Running", "1 while a bench window runs on the target.", "none", Thresholds{Mode: "absolute", Steps: []Step{{Color: "text"}, {Color: "purple", Value: ptr(1.0)}}}, nil,
		q(fmt.Sprintf("max by (target) (servingprobe_bench_running{%s})", selTarget), "{{target}}")), 4, 4)
	b.add(stat("Request throughput", "Headline request throughput of the last finished run.", "reqps", thresholds(), nil,
		q(fmt.Sprintf("max by (target) (servingprobe_bench_last_request_throughput_requests_per_second{%s})", selTarget), "{{target}}")), 5, 4)
	b.add(stat("Output throughput", "Headline output token throughput of the last finished run.", "suffix: tok/s", thresholds(), nil,
		q(fmt.Sprintf("max by (target) (servingprobe_bench_last_output_throughput_tokens_per_second{%s})", selTarget), "{{target}}")), 5, 4)
	b.add(stat("Completed / failed", "Completed and failed requests of the last finished run.", "none", thresholds(), nil,
		q(fmt.Sprintf("max by (target) (servingprobe_bench_last_completed_requests{%s})", selTarget), "completed {{target}}"),
		q(fmt.Sprintf("max by (target) (servingprobe_bench_last_failed_requests{%s})", selTarget), "failed {{target}}")), 5, 4)
	b.add(stat("Runs in range", "Bench runs that ended in the dashboard range, by result.", "none", thresholds(), nil,
		q(fmt.Sprintf("sum by (result) (increase(servingprobe_bench_runs_total{%s}[$__range]))", selTarget), "{{result}}")), 5, 4)

	b.row("Sweeps and SLO searches", "")
	b.add(timeseries("Offered load", "Request rate and max concurrency of the running bench run or sweep point (0 between runs; a rate of +Inf sends every request at once, up to the concurrency).", "short", thresholds(),
		q(fmt.Sprintf("max by (target) (servingprobe_bench_request_rate_requests_per_second{%s})", selTarget), "req/s {{target}}"),
		q(fmt.Sprintf("max by (target) (servingprobe_bench_max_concurrency{%s})", selTarget), "max concurrency {{target}}")), 12, 8)
	b.add(timeseries("SLO capacity", "What the last SLO search found: the highest request rate (or concurrency) at which every objective held. ServingprobeCapacityRegression fires when it falls below its recent median.", "short", thresholds(),
		// One query: a target may have had searches of either kind, or
		// only one, and the panel shows whichever ran; a search that a
		// limit of ours bounded exports a lower bound instead, drawn as
		// "at least".
		q(fmt.Sprintf(`label_replace(max by (target) (servingprobe_bench_last_slo_capacity_requests_per_second{%[1]s}), "by", "req/s", "", "")
or
label_replace(max by (target) (servingprobe_bench_last_slo_capacity_max_concurrency{%[1]s}), "by", "concurrency", "", "")
or
label_replace(max by (target) (servingprobe_bench_last_slo_capacity_lower_bound_requests_per_second{%[1]s}), "by", "req/s, at least", "", "")
or
label_replace(max by (target) (servingprobe_bench_last_slo_capacity_lower_bound_max_concurrency{%[1]s}), "by", "concurrency, at least", "", "")`, selTarget), "{{by}} {{target}}")), 12, 8)
	b.add(timeseries("Capacity and load", "The capacity the target's last scheduled capacity check found (capacity_check), and the requests per second the server completed over the last minute, every client's, by its own counter: capacity × (1 − headroom). ServingprobeCapacityHeadroomLow fires when the load holds within 20% of the capacity. No load line for a server that states no completed-request counter (llama.cpp).", "reqps", thresholds(),
		q(fmt.Sprintf("max by (target) (servingprobe_capacity_requests_per_second{%s})", selTarget), "capacity {{target}}"),
		q(fmt.Sprintf("max by (target) (servingprobe_capacity_requests_per_second{%[1]s} * (1 - servingprobe_capacity_headroom_ratio{%[1]s}))", selTarget), "load {{target}}")), 24, 8)

	b.row("Bench requests", "")
	b.add(timeseries("Bench throughput", "Requests per second by outcome and tokens per second of successful bench requests.", "short", thresholds(),
		q(fmt.Sprintf(`sum by (outcome) (rate(servingprobe_requests_total{%s}[%s]))`, benchSel, rateInterval), "{{outcome}} req/s"),
		q(fmt.Sprintf(`sum(rate(servingprobe_generation_tokens_total{%s}[%s]))`, benchSel, rateInterval), "output tokens/s"),
		q(fmt.Sprintf(`sum(rate(servingprobe_prompt_tokens_total{%s}[%s]))`, benchSel, rateInterval), "prompt tokens/s")), 12, 8)
	b.add(timeseries("Bench errors by outcome", "Failed bench requests per second, by outcome.", "reqps", thresholds(),
		q(fmt.Sprintf(`sum by (outcome) (rate(servingprobe_requests_total{%s, outcome!="success"}[%s]))`, benchSel, rateInterval), "{{outcome}}")), 12, 8)
	b.add(timeseries("Bench TTFT", "Time to first token of bench requests, measured from sent (see Client queue time for the wait before).", "s", thresholds(th), quantileTargets(TTFT, benchSel, "")...), 8, 8)
	b.add(timeseries("Bench ITL", "Inter-token latency of bench requests, per token.", "s", thresholds(), quantileTargets(ITL, benchSel, "")...), 8, 8)
	b.add(timeseries("Bench TPOT", "Time per output token of bench requests.", "s", thresholds(), quantileTargets(TPOT, benchSel, "")...), 8, 8)
	b.add(timeseries("Bench E2E latency", "End-to-end latency of bench requests, from sent.", "s", thresholds(), quantileTargets(E2E, benchSel, "")...), 12, 8)
	b.add(timeseries("Client queue time", "Sent minus scheduled: how long bench arrivals waited for a concurrency slot in the client. Large values mean the client, not the server, limited the rate.", "s", thresholds(),
		quantileTargets(Histogram{Name: "servingprobe_client_queue_seconds"}, benchSel, "")...), 12, 8)

	b.row("Bystander probes during the window", "")
	b.add(timeseries("Probe TTFT", "TTFT of the continuous probes: what other users saw while the bench ran.", "s", thresholds(th),
		q(HistogramQuantile("0.5", TTFT.Name, probeSel, "", rateInterval), "p50"),
		q(HistogramQuantile("0.99", TTFT.Name, probeSel, "", rateInterval), "p99")), 8, 8)
	b.add(timeseries("Probe ITL", "Inter-token latency of the continuous probes during the window.", "s", thresholds(),
		q(HistogramQuantile("0.5", ITL.Name, probeSel, "", rateInterval), "p50"),
		q(HistogramQuantile("0.99", ITL.Name, probeSel, "", rateInterval), "p99")), 8, 8)
	b.add(timeseries("Probe success ratio", "Successful probes over finished probes during the window.", "percentunit",
		Thresholds{Mode: "absolute", Steps: []Step{{Color: "red"}, {Color: "green", Value: ptr(c.AvailabilitySLOTarget)}}},
		q(successRatio(probeSel), "success ratio")), 8, 8)
	return b.d
}

// serverQuantile is the server-side quantile of the first metric name that
// exists. `or` joins whole quantile results, never bucket sets, so a server
// exposing an old and a new name during a deprecation is not mixed.
func serverQuantile(qq string, names ...string) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, ClassicQuantile(qq, n, serverSel, "", rateInterval))
	}
	return strings.Join(parts, "\nor\n")
}

// Server metric names by quantity, newest first. vLLM renamed its per-token
// histogram from time_per_output_token_seconds to inter_token_latency_seconds
// (v0.11); SGLang added inter_token_latency_seconds next to its older name.
var (
	vllmTTFT   = []string{"vllm:time_to_first_token_seconds"}
	vllmITL    = []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}
	vllmE2E    = []string{"vllm:e2e_request_latency_seconds"}
	sglangTTFT = []string{"sglang:time_to_first_token_seconds"}
	sglangITL  = []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}
	sglangE2E  = []string{"sglang:e2e_request_latency_seconds"}
)

// Server load metric names, newest first, as servermetrics/names.go reads
// them (its comment cites the engines' sources). vLLM renamed
// gpu_cache_usage_perc to kv_cache_usage_perc in 0.9; both are a fraction
// of the KV-cache blocks in use, as is SGLang's token_usage (of its token
// pool). SGLang's waiting requests are num_queue_reqs.
var (
	vllmQueue     = []string{"vllm:request_queue_time_seconds"}
	sglangQueue   = []string{"sglang:queue_time_seconds"}
	vllmKVUsage   = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}
	sglangKVUsage = []string{"sglang:token_usage"}
	vllmWaiting   = []string{"vllm:num_requests_waiting"}
	sglangWaiting = []string{"sglang:num_queue_reqs"}
	vllmRunning   = []string{"vllm:num_requests_running"}
	sglangRunning = []string{"sglang:num_running_reqs"}
)

// serverGauge is agg of the first gauge name that exists, joined with `or`
// as serverQuantile joins quantiles, so that an old and a new name of the
// same gauge are never added up.
func serverGauge(agg string, names ...string) string { return serverGaugeBy(agg, "", names...) }

// serverGaugeBy is serverGauge aggregated by the labels in by.
func serverGaugeBy(agg, by string, names ...string) string {
	if by != "" {
		agg += " by (" + by + ") "
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s(%s{%s})", agg, n, serverSel))
	}
	return strings.Join(parts, "\nor\n")
}

// ClientVsServer renders the client-versus-server dashboard.
func (c Config) ClientVsServer() *Dashboard {
	vars := standardVars()
	// The server is tied to the selected target through its model: an
	// engine labels its series with the model it serves (model_name), which
	// is the model the target's probes ask for (servingprobe_target_info's
	// model). server_model lists the selected targets' models, server_job
	// the jobs serving one of them; "All" still shows every job.
	serverModel := queryVar("server_model", "Server model", `label_values(servingprobe_target_info{job=~"$job", target=~"$target"}, model)`)
	serverModel.Description = "The model the selected targets ask for: the engine's model_name label. Pick All if your engine serves it under another name."
	serverJob := queryVar("server_job", "Server job", `label_values({__name__=~"vllm:time_to_first_token_seconds_count|sglang:time_to_first_token_seconds_count", model_name=~"$server_model"}, job)`)
	serverJob.Description = "The Prometheus job that scrapes the inference server's own /metrics, among those serving the selected target's model."
	vars = append(vars, serverModel, serverJob)
	b := newDashboard(ClientVsServerUID, "servingprobe / Client vs server",
		"servingprobe's client-side TTFT, ITL and E2E next to the inference server's own histograms (vLLM, SGLang), and the server's queue time, KV cache usage and waiting requests. The gap is network, proxy and queueing cost that server metrics cannot see. Choose one target and the server job behind it. Every panel here is optional: it shows data only if the server's metrics are scraped into the same Prometheus.",
		vars)
	b.d.Annotations.List = append(b.d.Annotations.List, benchAnnotations(false)...)

	// All modes: the server sees probe and bench traffic alike.
	type quantity struct {
		title        string
		h            Histogram
		vllm, sglang []string
	}
	for _, qt := range []quantity{
		{"TTFT", TTFT, vllmTTFT, sglangTTFT},
		{"ITL", ITL, vllmITL, sglangITL},
		{"E2E latency", E2E, vllmE2E, sglangE2E},
	} {
		b.row(qt.title, "")
		for _, qq := range []string{"0.5", "0.99"} {
			p := "p50"
			if qq == "0.99" {
				p = "p99"
			}
			b.add(timeseries(fmt.Sprintf("%s %s: client vs server", qt.title, p),
				optionalDescription+"Client: servingprobe over the selected targets, all modes. Server: the first of the server's metric names that exists.", "s", thresholds(),
				q(HistogramQuantile(qq, qt.h.Name, sel, "", rateInterval), "client "+p),
				q(serverQuantile(qq, qt.vllm...), "vLLM "+p),
				q(serverQuantile(qq, qt.sglang...), "SGLang "+p)), 8, 8)
		}
		server := serverQuantile("0.5", append(append([]string{}, qt.vllm...), qt.sglang...)...)
		gap := timeseries(fmt.Sprintf("%s p50 gap (client - server)", qt.title),
			optionalDescription+"Client p50 minus server p50: time spent outside the engine (network, TLS, proxies, gateway queues, SSE buffering). Below 0 when the two sides' bucket estimates disagree by more than the gap, or the quantiles cover different requests (the server sees other traffic too); the axis is not clipped at 0, so that such a reading shows.", "s", thresholds(),
			q(fmt.Sprintf("(\n%s\n)\n- on ()\n(\n%s\n)", HistogramQuantile("0.5", qt.h.Name, sel, "", rateInterval), server), "gap p50"))
		gap.FieldConfig.Defaults.Min = nil
		b.add(c.runbook(gap, "Inside the engine or in front of it"), 8, 8)
	}

	// Each probe's TTFT split by the server's own statement in its
	// response (vLLM's metrics object, llama.cpp's timings, sglang's meta_info, Dynamo's nvext.timing): per request,
	// where the quantiles above compare two populations.
	serverTTFT, outsideTTFT := ServerTTFT, OutsideTTFT
	b.row("TTFT split by the server's own statement", "")
	b.add(timeseries("TTFT inside and outside the server",
		optionalDescription+"p50 and p99 of the server's own TTFT as it stated it in each response (vLLM's per-request metrics, llama.cpp's timings, sglang's meta_info with --enable-metrics, Dynamo's nvext.timing), and of the client's TTFT minus it: the network, HTTP and the server's front end. Empty for a server that states none.", "s", thresholds(),
		q(HistogramQuantile("0.5", serverTTFT.Name, sel, "", rateInterval), "server p50"),
		q(HistogramQuantile("0.99", serverTTFT.Name, sel, "", rateInterval), "server p99"),
		q(HistogramQuantile("0.5", outsideTTFT.Name, sel, "", rateInterval), "outside p50"),
		q(HistogramQuantile("0.99", outsideTTFT.Name, sel, "", rateInterval), "outside p99")), 8, 8)

	// What the engine says about its own load: why its TTFT grows.
	b.row("Server load", "")
	b.add(timeseries("Server queue time",
		optionalDescription+"p50 and p99 of the time requests waited in the engine's queue before it scheduled them (vLLM's WAITING phase, SGLang's queue). When the TTFT gap is small and this grows, the engine is saturated: the wait is inside it, not in front of it. "+
			"Read it with Server queue time resolution: vLLM's lowest queue-time bucket ends at "+vllmQueueFirstBucket+" s, so while most requests wait less than that, the p50 is an interpolation inside [0, "+vllmQueueFirstBucket+"] (about "+vllmQueueFirstBucket+"/2 s however short the real wait), not a measurement.", "s", thresholds(),
		q(serverQuantile("0.5", vllmQueue...), "vLLM p50"),
		q(serverQuantile("0.99", vllmQueue...), "vLLM p99"),
		q(serverQuantile("0.5", sglangQueue...), "SGLang p50"),
		q(serverQuantile("0.99", sglangQueue...), "SGLang p99")), 6, 8)
	res := timeseries("Server queue time resolution",
		optionalDescription+"The share of queued requests whose wait fell in the lowest bucket of the engine's queue-time histogram: at most "+vllmQueueFirstBucket+" s for vLLM (its request-latency buckets, which llm-d-inference-sim copies), at most "+sglangQueueFirstBucket+" s for SGLang (its first bucket, 0, holds only zero waits). "+
			"Near 1, the queue-time quantiles are interpolations inside that bucket: the wait is below its bound, and the panel cannot say by how much.", "percentunit", thresholds(),
		q(firstBucketShare(vllmQueue[0], vllmQueueFirstBucket), "vLLM ≤ "+vllmQueueFirstBucket+" s"),
		q(firstBucketShare(sglangQueue[0], sglangQueueFirstBucket), "SGLang ≤ "+sglangQueueFirstBucket+" s"))
	res.FieldConfig.Defaults.Max = ptr(1.0)
	b.add(res, 6, 8)
	kv := timeseries("Server KV cache usage",
		optionalDescription+"The fraction of the engine's KV cache in use, the highest over its instances (vLLM's kv_cache_usage_perc, 1 is full; SGLang's token_usage of its token pool). Near 1, new requests wait or running ones are preempted.", "percentunit", thresholds(),
		q(serverGauge("max", vllmKVUsage...), "vLLM"),
		q(serverGauge("max", sglangKVUsage...), "SGLang"))
	kv.FieldConfig.Defaults.Min, kv.FieldConfig.Defaults.Max = ptr(0.0), ptr(1.0)
	b.add(kv, 6, 8)
	b.add(timeseries("Server waiting and running requests",
		optionalDescription+"Requests the engine holds waiting for a slot and requests it is running, summed over its instances. Waiting above 0 means requests queue inside the engine; compare with the queue time.", "short", thresholds(),
		q(serverGauge("sum", vllmWaiting...), "vLLM waiting"),
		q(serverGauge("sum", vllmRunning...), "vLLM running"),
		q(serverGauge("sum", sglangWaiting...), "SGLang waiting"),
		q(serverGauge("sum", sglangRunning...), "SGLang running")), 6, 8)
	c.engineRows(b)
	return b.d
}

// The upper bound of the lowest non-empty queue-time bucket: vLLM's
// request_latency_buckets (vllm/v1/metrics/loggers.py) start at 0.3;
// SGLang's queue_time buckets (python/sglang/srt/metrics/collector.py)
// start at 0.0, then 0.1.
const (
	vllmQueueFirstBucket   = "0.3"
	sglangQueueFirstBucket = "0.1"
)

// firstBucketShare is the share of a classic histogram's observations at
// or below le.
func firstBucketShare(name, le string) string {
	return fmt.Sprintf(`sum(rate(%[1]s_bucket{%[2]s, le="%[3]s"}[%[4]s]))
/
sum(rate(%[1]s_count{%[2]s}[%[4]s]))`, name, serverSel, le, rateInterval)
}

// Engine metric names the engine rows read, as servermetrics/names.go
// reads them (its comment cites the engines' sources). Counters are named
// with their _total sample: vLLM and SGLang are Python prometheus_client,
// which appends it; llm-d-inference-sim is client_golang and exposes its
// prefix-cache counters without it, so both spellings are tried.
var (
	vllmPrefill       = "vllm:request_prefill_time_seconds"
	vllmDecode        = "vllm:request_decode_time_seconds"
	vllmPromptLen     = "vllm:request_prompt_tokens"
	vllmGenerationLen = "vllm:request_generation_tokens"
	vllmSuccess       = "vllm:request_success_total"
	vllmPreemptions   = []string{"vllm:num_preemptions_total"}
	sglangPreemptions = []string{"sglang:num_retracted_requests_total"}
	// Hits over queries, both in tokens, newest name first.
	vllmPrefixCache = [][2]string{
		{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"},
		{"vllm:prefix_cache_hits", "vllm:prefix_cache_queries"},
		{"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"},
	}
	// SGLang's prefix-cache hits are its cached prompt tokens over its
	// prompt tokens.
	sglangPrefixCache = [][2]string{{"sglang:cached_tokens_total", "sglang:prompt_tokens_total"}}
)

// serverRate is the per-second rate of the first counter name that exists.
func serverRate(by string, names ...string) string {
	agg := "sum"
	if by != "" {
		agg = "sum by (" + by + ")"
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s (rate(%s{%s}[%s]))", agg, n, serverSel, rateInterval))
	}
	return strings.Join(parts, "\nor\n")
}

// serverRatio is hits over queries of the first pair of names that exists.
func serverRatio(pairs [][2]string) string {
	var parts []string
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("(\n%s\n/\n%s\n)", serverRate("", p[0]), serverRate("", p[1])))
	}
	return strings.Join(parts, "\nor\n")
}

// engineRows are what the engines' own dashboards show from the metrics
// the daemon already reads: where the server's time goes (prefill, decode),
// what it was asked (prompt and output lengths), how requests ended, the
// engine's pressure (preemptions, prefix-cache hits) and each replica
// apart. SGLang has no prefill, decode, length or finish-reason series by
// default, so those panels are vLLM's only.
func (c Config) engineRows(b *builder) {
	b.row("Engine", "")
	b.add(timeseries("Server prefill vs decode time",
		optionalDescription+"p50 and p99 of the time vLLM spent per request in its PREFILL phase (the prompt, up to the first token) and its DECODE phase (the output after it). When TTFT grows and prefill does not, the wait is in the queue; when E2E grows with decode, the batch is full. Both use vLLM's request-latency buckets, whose lowest ends at "+vllmQueueFirstBucket+" s: a phase shorter than that reads as an interpolation inside it (a p50 of about "+vllmQueueFirstBucket+"/2 s), as Server queue time resolution explains.", "s", thresholds(),
		q(ClassicQuantile("0.5", vllmPrefill, serverSel, "", rateInterval), "prefill p50"),
		q(ClassicQuantile("0.99", vllmPrefill, serverSel, "", rateInterval), "prefill p99"),
		q(ClassicQuantile("0.5", vllmDecode, serverSel, "", rateInterval), "decode p50"),
		q(ClassicQuantile("0.99", vllmDecode, serverSel, "", rateInterval), "decode p99")), 8, 8)
	b.add(heatmapOf("Server prompt length",
		optionalDescription+"Requests per prompt-length bucket (tokens) and interval, as vLLM counted them: all traffic the engine served, not only servingprobe's.", "short",
		fmt.Sprintf("sum by (le) (increase(%s_bucket{%s}[$__interval]))", vllmPromptLen, serverSel)), 8, 8)
	b.add(heatmapOf("Server output length",
		optionalDescription+"Requests per output-length bucket (tokens) and interval, as vLLM counted them. A shift down with finish reason length means a max_tokens cap; with stop, shorter answers.", "short",
		fmt.Sprintf("sum by (le) (increase(%s_bucket{%s}[$__interval]))", vllmGenerationLen, serverSel)), 8, 8)
	b.add(timeseries("Server finish reasons",
		optionalDescription+"Finished requests per second by vLLM's finished_reason: stop (the model ended), length (max_tokens or the context), abort (the client left or the engine gave up).", "reqps", thresholds(),
		q(fmt.Sprintf("sum by (finished_reason) (rate(%s{%s}[%s]))", vllmSuccess, serverSel, rateInterval), "{{finished_reason}}")), 8, 8)
	b.add(timeseries("Server preemptions",
		optionalDescription+"Requests per second the engine preempted (vLLM) or retracted (SGLang) to free KV cache: their work is redone, so TTFT and E2E grow. Above 0 with KV cache usage near 1 means the engine admits more than fits.", "short", thresholds(),
		q(serverRate("", vllmPreemptions...), "vLLM preemptions/s"),
		q(serverRate("", sglangPreemptions...), "SGLang retractions/s")), 8, 8)
	hit := timeseries("Server prefix-cache hit rate",
		optionalDescription+"Prompt tokens served from the prefix cache over prompt tokens looked up (vLLM's prefix_cache_hits over prefix_cache_queries; SGLang's cached_tokens over prompt_tokens). servingprobe's probes reuse their system prompts, so a drop after a restart or a cache flush shows here first.", "percentunit", thresholds(),
		q(serverRatio(vllmPrefixCache), "vLLM"),
		q(serverRatio(sglangPrefixCache), "SGLang"))
	hit.FieldConfig.Defaults.Max = ptr(1.0)
	b.add(hit, 8, 8)

	b.row("Engine per replica", "")
	b.add(timeseries("Server TTFT p50 per replica",
		optionalDescription+"The engine's own TTFT p50 per scraped instance: one slow replica behind a load balancer shows here while the pooled quantile hides it.", "s", thresholds(),
		q(ClassicQuantile("0.5", vllmTTFT[0], serverSel, "instance", rateInterval), "vLLM {{instance}}"),
		q(ClassicQuantile("0.5", sglangTTFT[0], serverSel, "instance", rateInterval), "SGLang {{instance}}")), 8, 8)
	kv := timeseries("Server KV cache usage per replica",
		optionalDescription+"The fraction of each instance's KV cache in use (vLLM's kv_cache_usage_perc, else gpu_cache_usage_perc; SGLang's token_usage).", "percentunit", thresholds(),
		q(serverGaugeBy("max", "instance", vllmKVUsage...), "vLLM {{instance}}"),
		q(serverGaugeBy("max", "instance", sglangKVUsage...), "SGLang {{instance}}"))
	kv.FieldConfig.Defaults.Max = ptr(1.0)
	b.add(kv, 8, 8)
	b.add(timeseries("Server waiting requests per replica",
		optionalDescription+"Requests waiting for a slot on each instance: an uneven spread means the load balancer sends more to some replicas than they can take.", "short", thresholds(),
		q(serverGaugeBy("sum", "instance", vllmWaiting...), "vLLM {{instance}}"),
		q(serverGaugeBy("sum", "instance", sglangWaiting...), "SGLang {{instance}}")), 8, 8)
}
