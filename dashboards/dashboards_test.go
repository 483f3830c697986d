package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v2"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
	"github.com/servingprobe/servingprobe/dashboards/promtest"
	"github.com/servingprobe/servingprobe/testkit/external"
)

// goldenUIDs must never change: users bookmark and provision by uid.
var goldenUIDs = map[string]string{
	"overview.json":         "servingprobe-overview",
	"bench.json":            "servingprobe-bench",
	"client-vs-server.json": "servingprobe-client-vs-server",
}

// goldenExposition is the exporter's golden exposition: every metric family
// of the contract except build_info, which the version collector adds.
const goldenExposition = "../exporter/testdata/metrics.golden.prom"

// contractMetrics returns the exporter's metric contract, name to type:
// the families of the golden exposition (from its "# TYPE" lines) and
// servingprobe_build_info. Recorded series are checked against rules.yaml.
func contractMetrics(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(goldenExposition)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"servingprobe_build_info": "gauge"}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) != 2 {
				t.Fatalf("%s: malformed line %q", goldenExposition, line)
			}
			out[f[0]] = f[1]
		}
	}
	// A sanity floor: an empty or truncated golden file must not pass
	// every name by accident of parsing nothing.
	for _, name := range []string{"servingprobe_time_to_first_token_seconds", "servingprobe_requests_total", "servingprobe_bench_running"} {
		if out[name] == "" {
			t.Fatalf("%s lacks %s; is it the exporter's exposition?", goldenExposition, name)
		}
	}
	return out
}

// serverMetrics are the inference servers' own histograms and gauges that
// the optional client-vs-server panels read, old and new names (sources:
// servermetrics/names.go).
var serverMetrics = []string{
	"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
	"vllm:e2e_request_latency_seconds", "sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
	"sglang:time_per_output_token_seconds", "sglang:e2e_request_latency_seconds",
	"vllm:request_queue_time_seconds", "sglang:queue_time_seconds",
	"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage",
	"vllm:num_requests_waiting", "sglang:num_queue_reqs", "vllm:num_requests_running", "sglang:num_running_reqs",
	// The engine rows: counters by their _total sample, and the prefix-cache
	// counters also as llm-d-inference-sim (client_golang) spells them.
	"vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
	"vllm:request_prompt_tokens", "vllm:request_generation_tokens", "vllm:request_success_total",
	"vllm:num_preemptions_total", "sglang:num_retracted_requests_total",
	"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits", "vllm:prefix_cache_queries",
	"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total",
	"sglang:cached_tokens_total", "sglang:prompt_tokens_total",
}

func TestGeneratedFilesUpToDate(t *testing.T) {
	files, err := mixin.Files(mixin.Default())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Errorf("%s: %v (run go generate ./dashboards)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output; run go generate ./dashboards:\n%s", name, cmp.Diff(string(want), string(got)))
		}
	}
	var embedded []string
	for _, pat := range []string{"*.json", "*.yaml"} {
		m, _ := fs.Glob(FS, pat)
		embedded = append(embedded, m...)
	}
	for _, name := range embedded {
		if _, ok := files[name]; !ok {
			t.Errorf("%s is embedded but not generated", name)
		}
	}
	all := append(slices.Clone(Dashboards), RuleFiles...)
	sort.Strings(all)
	sort.Strings(embedded)
	if diff := cmp.Diff(all, embedded); diff != "" {
		t.Errorf("Dashboards+RuleFiles vs embedded files (-want +got):\n%s", diff)
	}
}

type dash struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Annotations   struct {
		List []struct {
			BuiltIn    int             `json:"builtIn"`
			Name       string          `json:"name"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      any             `json:"query"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Datasource  json.RawMessage `json:"datasource"`
	GridPos     struct{ H, W, X, Y int }
	Panels      []panel `json:"panels"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Options struct {
		YAxis struct {
			Unit string `json:"unit"`
		} `json:"yAxis"`
	} `json:"options"`
	Targets []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T, name string) dash {
	t.Helper()
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var d dash
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

const dsVar = `{"type":"prometheus","uid":"${datasource}"}`

func isDSVar(raw json.RawMessage) bool {
	var v struct{ Type, UID string }
	return json.Unmarshal(raw, &v) == nil && v.Type == "prometheus" && v.UID == "${datasource}"
}

// latencyExpr matches queries whose result is a duration in seconds.
var latencyExpr = regexp.MustCompile(`histogram_quantile\(|time\(\) -`)

// heatmapUnit is the y-axis unit of a heatmap of the bucket query expr.
func heatmapUnit(expr string) string {
	if strings.Contains(expr, "_seconds_bucket") {
		return "s"
	}
	return "short"
}

func TestDashboards(t *testing.T) {
	seen := map[string]string{}
	for _, name := range Dashboards {
		t.Run(name, func(t *testing.T) {
			d := loadDashboard(t, name)
			if d.UID != goldenUIDs[name] {
				t.Errorf("uid = %q, want %q (uids are stable)", d.UID, goldenUIDs[name])
			}
			if other, ok := seen[d.UID]; ok {
				t.Errorf("uid %q also used by %s", d.UID, other)
			}
			seen[d.UID] = name
			if d.SchemaVersion < 36 {
				t.Errorf("schemaVersion = %d, want >= 36", d.SchemaVersion)
			}
			var vars []string
			for _, v := range d.Templating.List {
				vars = append(vars, v.Name)
				if v.Type == "query" && !isDSVar(v.Datasource) {
					t.Errorf("variable %s: datasource = %s, want %s", v.Name, v.Datasource, dsVar)
				}
			}
			for _, want := range []string{"datasource", "job", "target", "module", "model"} {
				if !slices.Contains(vars, want) {
					t.Errorf("variables %v lack %q", vars, want)
				}
			}
			if d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Type != "datasource" {
				t.Errorf("first variable = %+v, want the datasource variable", d.Templating.List[0])
			}
			for _, a := range d.Annotations.List {
				if a.BuiltIn == 0 && !isDSVar(a.Datasource) {
					t.Errorf("annotation %q: datasource = %s, want %s", a.Name, a.Datasource, dsVar)
				}
			}
			ids := map[int]bool{}
			npanels := 0
			for _, p := range flatten(d.Panels) {
				if ids[p.ID] {
					t.Errorf("panel id %d is not unique", p.ID)
				}
				ids[p.ID] = true
				if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
					t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
				}
				if p.Type == "row" {
					continue
				}
				npanels++
				if !isDSVar(p.Datasource) {
					t.Errorf("panel %q: datasource = %s, want %s", p.Title, p.Datasource, dsVar)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no queries", p.Title)
				}
				for _, tg := range p.Targets {
					if !isDSVar(tg.Datasource) {
						t.Errorf("panel %q [%s]: datasource = %s, want %s", p.Title, tg.RefID, tg.Datasource, dsVar)
					}
					// A heatmap's y axis is the bucket bound: seconds for a
					// latency histogram, a plain number for a token count.
					if want := heatmapUnit(tg.Expr); p.Type == "heatmap" && p.Options.YAxis.Unit != want {
						t.Errorf("heatmap %q: yAxis unit = %q, want %s", p.Title, p.Options.YAxis.Unit, want)
					}
					if latencyExpr.MatchString(tg.Expr) && p.FieldConfig.Defaults.Unit != "s" {
						t.Errorf("latency panel %q: unit = %q, want s", p.Title, p.FieldConfig.Defaults.Unit)
					}
				}
			}
			if npanels < 5 {
				t.Errorf("only %d panels", npanels)
			}
		})
	}
}

var (
	metricName = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	selectors  = regexp.MustCompile(`(servingprobe_[a-z_]+)\{([^}]*)\}`)
)

// allExprs returns every PromQL expression shipped: dashboard queries and rules.
func allExprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	qs, err := promtest.DashboardQueries(FS, Dashboards...)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		out[q.Name()] = q.Expr
	}
	for _, f := range RuleFiles {
		for _, r := range loadRules(t, f) {
			out[f+": "+r.Record+r.Alert] += r.Expr + "\n"
		}
	}
	return out
}

type ruleYAML struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T, name string) []ruleYAML {
	t.Helper()
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name     string     `yaml:"name"`
			Interval string     `yaml:"interval"`
			Rules    []ruleYAML `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []ruleYAML
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

func TestMetricNamesExist(t *testing.T) {
	contract := contractMetrics(t)
	records := map[string]bool{}
	for _, r := range loadRules(t, "rules.yaml") {
		records[r.Record] = true
	}
	for where, expr := range allExprs(t) {
		// Strip strings and ranges so label values and [7d:1h] are not read
		// as names.
		bare := regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(expr, `""`)
		bare = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(bare, "[]")
		for _, name := range metricName.FindAllString(bare, -1) {
			switch {
			case strings.HasPrefix(name, "servingprobe_"):
				base := name
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(name, suf); ok && contract[b] == "histogram" {
						base = b
					}
				}
				if _, ok := contract[base]; !ok {
					t.Errorf("%s: %s is not in the metric contract (%s)", where, name, goldenExposition)
				}
			case strings.HasPrefix(name, "target:"):
				if !records[name] {
					t.Errorf("%s: %s is not recorded by rules.yaml", where, name)
				}
			case strings.HasPrefix(name, "vllm:"), strings.HasPrefix(name, "sglang:"):
				base := strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count")
				if !slices.Contains(serverMetrics, base) {
					t.Errorf("%s: unknown server metric %s", where, name)
				}
			case strings.Contains(name, ":"):
				t.Errorf("%s: unknown recorded metric %s", where, name)
			}
		}
	}
}

// Dashboard selectors of servingprobe series honour $job; rule selectors
// carry the configured selector.
func TestSelectors(t *testing.T) {
	qs, err := promtest.DashboardQueries(FS, Dashboards...)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		for _, m := range selectors.FindAllStringSubmatch(q.Expr, -1) {
			if !strings.Contains(m[2], `job=~"$job"`) {
				t.Errorf("%s: selector %s lacks job=~\"$job\"", q.Name(), m[0])
			}
			perTarget := m[1] != "servingprobe_build_info" && m[1] != "servingprobe_config_last_reload_successful" &&
				m[1] != "servingprobe_config_last_reload_success_timestamp_seconds" &&
				!(q.Kind == promtest.KindVariable && q.Title == "target")
			if perTarget && !strings.Contains(m[2], `target=~"$target"`) {
				t.Errorf("%s: selector %s lacks target=~\"$target\"", q.Name(), m[0])
			}
		}
	}
	sel := mixin.Default().Selector
	for _, f := range RuleFiles {
		for _, r := range loadRules(t, f) {
			for _, m := range selectors.FindAllStringSubmatch(r.Expr, -1) {
				if !strings.Contains(m[2], sel) {
					t.Errorf("%s %s: selector %s lacks %s", f, r.Record+r.Alert, m[0], sel)
				}
			}
		}
	}
}

func promtool(t *testing.T) string {
	t.Helper()
	return external.Program(t, "promtool")
}

// promqlExprTest is one promql_expr_test of a promtool unit test file,
// for the tests that write one around a dashboard query.
type promqlExprTest struct {
	Expr       string         `yaml:"expr"`
	EvalTime   string         `yaml:"eval_time"`
	ExpSamples []promqlSample `yaml:"exp_samples"`
}

type promqlSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// TestDashboardQueriesParse feeds every dashboard query, with the Grafana
// variables substituted, to promtool as a recording rule: promtool parses it
// with the same PromQL parser as Prometheus 2.42.
func TestDashboardQueriesParse(t *testing.T) {
	pt := promtool(t)
	qs, err := promtest.DashboardQueries(FS, Dashboards...)
	if err != nil {
		t.Fatal(err)
	}
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, q := range qs {
		expr, err := promtest.Substitute(q.Expr, promtest.Vars("5m", "1h"))
		if err != nil {
			t.Errorf("%s: %v", q.Name(), err)
			continue
		}
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard_query_%d", i), Expr: expr})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboards", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "queries.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pt, "check", "rules", path).CombinedOutput()
	if err != nil {
		// promtool names the rule; map it back to the panel.
		msg := string(out)
		for i, q := range qs {
			msg = strings.ReplaceAll(msg, fmt.Sprintf("dashboard_query_%d\"", i), q.Name()+"\"")
		}
		t.Fatalf("promtool check rules: %v\n%s", err, msg)
	}
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(rules)); !strings.Contains(string(out), want) {
		t.Errorf("promtool check rules output %q lacks %q", out, want)
	}
	t.Logf("%d dashboard queries parse", len(rules))
}

func TestPromtoolCheckRules(t *testing.T) {
	out, err := exec.Command(promtool(t), "check", "rules", "rules.yaml", "alerts.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestPromtoolTestRules runs every tests/*.yaml file, in parallel because
// the multi-day ones take a while.
func TestPromtoolTestRules(t *testing.T) {
	pt := promtool(t)
	files, err := filepath.Glob("tests/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests/*.yaml: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			if testing.Short() && strings.Contains(f, "regression") {
				t.Skip("eight days of input; run without -short")
			}
			out, err := exec.Command(pt, "test", "rules", f).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool test rules %s: %v\n%s", f, err, out)
			}
		})
	}
}

// TestEveryAlertTested requires, for every alert, a promtool case in which it
// fires and one in which it must not.
func TestEveryAlertTested(t *testing.T) {
	type alertTest struct {
		Alertname string `yaml:"alertname"`
		ExpAlerts []any  `yaml:"exp_alerts"`
	}
	type testFile struct {
		Tests []struct {
			AlertRuleTest []alertTest `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	files, _ := filepath.Glob("tests/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tf testFile
		if err := yaml.Unmarshal(b, &tf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range tf.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
		}
	}
	for _, r := range loadRules(t, "alerts.yaml") {
		if !fires[r.Alert] {
			t.Errorf("%s: no promtool test where it fires", r.Alert)
		}
		if !silent[r.Alert] {
			t.Errorf("%s: no promtool test where it stays silent", r.Alert)
		}
	}
}

var anchorChars = regexp.MustCompile(`[^a-z0-9 _-]`)

// githubAnchor is how GitHub turns a heading into an anchor.
func githubAnchor(heading string) string {
	s := anchorChars.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), "")
	return strings.ReplaceAll(s, " ", "-")
}

// runbookAnchors are the anchors of docs/runbook.md's headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	runbook, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(runbook), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[githubAnchor(strings.TrimLeft(h, "#"))] = true
		}
	}
	return anchors
}

func TestAlertMetadata(t *testing.T) {
	anchors := runbookAnchors(t)
	base := mixin.Default().RunbookURL + "#"
	names := map[string]bool{}
	for _, r := range loadRules(t, "alerts.yaml") {
		if names[r.Alert] {
			t.Errorf("alert %s defined twice", r.Alert)
		}
		names[r.Alert] = true
		if r.For == "" {
			t.Errorf("%s: no for", r.Alert)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity = %q, want critical or warning", r.Alert, s)
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if r.Annotations[k] == "" {
				t.Errorf("%s: no %s", r.Alert, k)
			}
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], base)
		if !ok || !anchors[anchor] {
			t.Errorf("%s: runbook_url %q does not point at a heading of docs/runbook.md", r.Alert, r.Annotations["runbook_url"])
		}
	}
}

// TestReadmeServingClaim holds README.md's sentence about who serves the
// files to the code: it may say the exporter serves them only if production
// code outside this directory imports the package.
func TestReadmeServingClaim(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	claims := !strings.Contains(string(readme), "the exporter does not serve them")
	served := false
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "dashboards" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), `"github.com/servingprobe/servingprobe/dashboards"`) {
			served = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if claims != served {
		t.Errorf("README.md says the exporter serves the files: %v; production code imports package dashboards: %v", claims, served)
	}
}

// alertTable returns the measured table between the alertharness markers.
func alertTable(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	const begin, end = "<!-- alertharness table: begin -->\n", "<!-- alertharness table: end -->"
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no alertharness table markers", path)
	}
	return s[i+len(begin) : j]
}

// TestAlertQualityTable requires the harness's table in the runbook and in
// README.md, the same in both, with every alert of alerts.yaml in its false
// alert rows, and no target it reports as missed.
func TestAlertQualityTable(t *testing.T) {
	runbook, readme := alertTable(t, "../docs/runbook.md"), alertTable(t, "README.md")
	if runbook != readme {
		t.Errorf("the measured tables of docs/runbook.md and dashboards/README.md differ")
	}
	if !strings.HasPrefix(runbook, "Time to fire in minutes after the injection") {
		t.Fatalf("docs/runbook.md: the table is not the harness's output:\n%s", runbook)
	}
	for _, r := range loadRules(t, "alerts.yaml") {
		if !strings.Contains(runbook, "\n| "+r.Alert+" | ") {
			t.Errorf("no false-alert row for %s", r.Alert)
		}
	}
	if strings.Contains(runbook, "**no**") {
		t.Errorf("the measured table reports a missed target:\n%s", runbook)
	}
}
