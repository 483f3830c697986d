package dashboards

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
	"github.com/servingprobe/servingprobe/dashboards/promtest"
)

// layoutPanel is the part of a panel the layout tests read.
type layoutPanel struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Repeat      string `json:"repeat"`
	FieldConfig struct {
		Defaults struct {
			Min *float64 `json:"min"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Links []struct {
		URL string `json:"url"`
	} `json:"links"`
	Interval string `json:"interval"`
	Targets  []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		Format       string `json:"format"`
		Instant      bool   `json:"instant"`
	} `json:"targets"`
}

func layoutPanels(t *testing.T, name string) []layoutPanel {
	t.Helper()
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []layoutPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d.Panels
}

// TestOverviewLeadsWithFleet holds the overview's first screen: a fleet
// table of one line per target (instant queries of recorded series, each
// the worst module), then the summary and burn rows, then rows repeated per
// module; no panel repeats per target, so the panel count does not grow
// with the fleet.
func TestOverviewLeadsWithFleet(t *testing.T) {
	ps := layoutPanels(t, "overview.json")
	if len(ps) < 2 || ps[0].Type != "row" || ps[0].Title != "Fleet" || ps[1].Type != "table" {
		t.Fatalf("overview starts with %q (%s), %q; want the Fleet row and its table", ps[0].Title, ps[0].Type, ps[1].Title)
	}
	fleet := ps[1]
	wantCols := []string{"5m error ratio", "TTFT p50", "TTFT p99", "TTFT burn 1h", "availability burn 1h", "TTFT budget left", "availability budget left"}
	if len(fleet.Targets) != len(wantCols) {
		t.Errorf("fleet table has %d queries, want %d (%v)", len(fleet.Targets), len(wantCols), wantCols)
	}
	for _, tg := range fleet.Targets {
		if !tg.Instant || tg.Format != "table" || !strings.Contains(tg.Expr, "by (target)") || !strings.Contains(tg.Expr, "target:servingprobe_") {
			t.Errorf("fleet query is not an instant table query of a recorded series by target: instant=%v format=%q\n%s", tg.Instant, tg.Format, tg.Expr)
		}
	}
	moduleRows := 0
	inModuleRow := false
	for _, p := range ps {
		if p.Type == "row" {
			if p.Repeat == "target" {
				t.Errorf("row %q repeats per target: the panels would grow with the fleet", p.Title)
			}
			inModuleRow = p.Repeat == "module"
			if inModuleRow {
				moduleRows++
			}
			continue
		}
		for _, tg := range p.Targets {
			// A histogram pooled over modules mixes request shapes whose
			// latencies differ by design.
			if strings.Contains(tg.Expr, "_bucket{") && !inModuleRow {
				t.Errorf("panel %q reads buckets outside the per-module row: %s", p.Title, tg.Expr)
			}
		}
	}
	if moduleRows != 1 {
		t.Errorf("%d rows repeat per module, want 1", moduleRows)
	}
}

// TestOverviewLatencyReadsRecords: the latency panels plot rules.yaml's 5m
// records, as the alerts read them, not raw quantiles over the rate
// interval (a 1m window of 15s probes holds four, so its p99 is the max).
func TestOverviewLatencyReadsRecords(t *testing.T) {
	for _, p := range layoutPanels(t, "overview.json") {
		switch p.Title {
		case "TTFT", "ITL", "TPOT", "E2E latency", "Time to first answer token", "Answer ITL", "Answer TPOT", "Probe success ratio":
		default:
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "histogram_quantile") || !strings.Contains(tg.Expr, ":ratio_rate5m") && !strings.Contains(tg.Expr, ":quantile_rate5m") {
				t.Errorf("panel %q does not read a recorded 5m series: %s", p.Title, tg.Expr)
			}
		}
	}
}

// pLegend matches a percentile legend: p50, p90, p99, p99.9.
var pLegend = regexp.MustCompile(`^p(\d+(?:\.\d+)?)\b`)

// TestLegends: every percentile legend names a percentile of its query's
// quantile (0.9 is p90, never p9), and every burn-rate legend names the
// module, since the alerts fire per module.
func TestLegends(t *testing.T) {
	quantile := regexp.MustCompile(`histogram_quantile\((0\.\d+)|quantile="(0\.\d+)"`)
	for _, name := range Dashboards {
		for _, p := range layoutPanels(t, name) {
			for _, tg := range p.Targets {
				m := pLegend.FindStringSubmatch(tg.LegendFormat)
				qm := quantile.FindStringSubmatch(tg.Expr)
				if m == nil || qm == nil {
					continue
				}
				qq := qm[1] + qm[2]
				want := strings.TrimPrefix(qq, "0.")
				if len(want) == 1 {
					want += "0"
				}
				if len(want) > 2 {
					want = want[:2] + "." + want[2:]
				}
				if m[1] != want {
					t.Errorf("%s: panel %q legend %q for quantile %s, want p%s", name, p.Title, tg.LegendFormat, qq, want)
				}
			}
			if strings.Contains(p.Title, "burn rate") {
				for _, tg := range p.Targets {
					if !strings.Contains(tg.LegendFormat, "{{module}}") {
						t.Errorf("%s: panel %q legend %q lacks the module", name, p.Title, tg.LegendFormat)
					}
				}
			}
		}
	}
}

// TestHeatmapsDoNotOverlap: each heatmap cell is the increase over the
// query's own step ($__interval), so neighbouring cells never count one
// observation twice, and the panel's minimum interval keeps two scrapes in
// a cell.
func TestHeatmapsDoNotOverlap(t *testing.T) {
	n := 0
	for _, name := range Dashboards {
		for _, p := range layoutPanels(t, name) {
			if p.Type != "heatmap" {
				continue
			}
			n++
			if p.Interval == "" {
				t.Errorf("%s: heatmap %q has no minimum interval", name, p.Title)
			}
			for _, tg := range p.Targets {
				if strings.Contains(tg.Expr, "$__rate_interval") || !strings.Contains(tg.Expr, "[$__interval]") {
					t.Errorf("%s: heatmap %q does not count per non-overlapping interval: %s", name, p.Title, tg.Expr)
				}
			}
		}
	}
	if n < 4 {
		t.Errorf("%d heatmaps, want the overview's TTFT and ITL and the engine's prompt and output lengths", n)
	}
}

// TestPanelRunbookLinks: every panel link to the runbook points at a
// heading of docs/runbook.md, and the panels an on-call opens from a page
// carry one.
func TestPanelRunbookLinks(t *testing.T) {
	anchors := runbookAnchors(t)
	base := mixin.Default().RunbookURL + "#"
	linked := map[string]bool{}
	for _, name := range Dashboards {
		for _, p := range layoutPanels(t, name) {
			for _, l := range p.Links {
				anchor, ok := strings.CutPrefix(l.URL, base)
				if !ok || !anchors[anchor] {
					t.Errorf("%s: panel %q links %q, not a heading of docs/runbook.md", name, p.Title, l.URL)
				}
				linked[name+": "+p.Title] = true
			}
		}
	}
	for _, want := range []string{"Fleet", "TTFT", "ITL", "TPOT", "Probe success ratio", "Last probe age", "TTFT SLO error budget burn rate", "Availability SLO error budget burn rate"} {
		if !linked["overview.json: "+want] {
			t.Errorf("overview panel %q has no runbook link", want)
		}
	}
	if !linked["client-vs-server.json: TTFT p50 gap (client - server)"] {
		t.Error("client-vs-server panel \"TTFT p50 gap (client - server)\" has no runbook link")
	}
}

// TestClientVsServerGapNotClipped: the gap panels may go below 0 (the
// two sides' bucket estimates disagree), which a min of 0 would hide.
func TestClientVsServerGapNotClipped(t *testing.T) {
	n := 0
	for _, p := range layoutPanels(t, "client-vs-server.json") {
		if strings.Contains(p.Title, "gap") {
			n++
			if p.FieldConfig.Defaults.Min != nil {
				t.Errorf("panel %q clips its axis at %v", p.Title, *p.FieldConfig.Defaults.Min)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d gap panels, want TTFT, ITL and E2E", n)
	}
}

// TestOverviewQueriesOnSeries evaluates overview queries with promtool on
// synthetic series: the last-success age of a module that never succeeded
// is -1 (mapped to "never") instead of missing, and each fleet column is
// the worst module of its target, not a pool.
func TestOverviewQueriesOnSeries(t *testing.T) {
	pt := promtool(t)
	exprs := map[string]string{}
	for _, p := range layoutPanels(t, "overview.json") {
		for i, tg := range p.Targets {
			exprs[p.Title+" "+string(rune('A'+i))] = tg.Expr
		}
	}
	vars := promtest.Vars("1m", "1m")
	vars["module"] = "m2" // the row of the module that never succeeded
	sub := func(key string) string {
		e, ok := exprs[key]
		if !ok {
			t.Fatalf("overview has no query %q", key)
		}
		s, err := promtest.Substitute(e, vars)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ls := func(module string) string {
		return `{job="servingprobe", target="a", module="` + module + `", model="x"}`
	}
	allModules := promtest.Vars("1m", "1m")
	fleetErr, err := promtest.Substitute(exprs["Fleet A"], allModules)
	if err != nil {
		t.Fatal(err)
	}
	file := map[string]any{
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval": "1m",
			"input_series": []map[string]string{
				{"series": "servingprobe_last_probe_timestamp_seconds" + ls("m1"), "values": "0+60x10"},
				{"series": "servingprobe_last_success_timestamp_seconds" + ls("m1"), "values": "0+60x10"},
				{"series": "servingprobe_last_probe_timestamp_seconds" + ls("m2"), "values": "0+60x10"},
				{"series": "target:servingprobe_availability_slo_errors:ratio_rate5m" + ls("m1"), "values": "0x10"},
				{"series": "target:servingprobe_availability_slo_errors:ratio_rate5m" + ls("m2"), "values": "0.5x10"},
			},
			"promql_expr_test": []promqlExprTest{
				{Expr: sub("Last probe age B"), EvalTime: "5m", ExpSamples: []promqlSample{{Labels: `{target="a"}`, Value: -1}}},
				{Expr: sub("Last probe age A"), EvalTime: "5m", ExpSamples: []promqlSample{{Labels: `{target="a"}`, Value: 0}}},
				{Expr: fleetErr, EvalTime: "5m", ExpSamples: []promqlSample{{Labels: `{target="a"}`, Value: 0.5}}},
			},
		}},
	}
	b, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "overview_test.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pt, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, b)
	}
}
