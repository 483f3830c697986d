package dashboards

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/servingprobe/servingprobe/dashboards/promtest"
)

// TestModelChangeAnnotation evaluates the overview's "Model changes"
// annotation, as shipped in overview.json, with promtool over a target
// whose model changes. The dashboard integration test cannot: no model
// changes while it runs. One step marks the change, with the new model;
// the steps before and after, the first model of a target that never
// changed and an exporter restart that kept its series mark nothing.
func TestModelChangeAnnotation(t *testing.T) {
	qs, err := promtest.DashboardQueries(FS, "overview.json")
	if err != nil {
		t.Fatal(err)
	}
	var expr string
	for _, q := range qs {
		if q.Kind == promtest.KindAnnotation && q.Title == "Model changes" {
			expr, err = promtest.Substitute(q.Expr, promtest.Vars("1m", "1h"))
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if expr == "" {
		t.Fatal(`overview.json has no "Model changes" annotation`)
	}
	changed := promqlSample{Labels: `{job="sp", model="b", target="t"}`, Value: 1}
	file := map[string]any{
		"rule_files":          []string{},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval": "1m",
			"input_series": []any{
				// t serves a up to minute 30, then b (a "x N" is N+1
				// samples, "_x N" N gaps).
				map[string]string{"series": `servingprobe_target_info{job="sp", target="t", model="a", backend="openai-chat"}`, "values": "1x30 stale"},
				map[string]string{"series": `servingprobe_target_info{job="sp", target="t", model="b", backend="openai-chat"}`, "values": "_x31 1x29"},
				// u appears at minute 10 and keeps its model; its
				// exporter is not scraped from minute 41 to 50 (past the
				// 5-minute lookback), then is again, with the same series.
				map[string]string{"series": `servingprobe_target_info{job="sp", target="u", model="c", backend="openai-chat"}`, "values": "_x10 1x30 _x10 1x10"},
			},
			"promql_expr_test": []promqlExprTest{
				{Expr: expr, EvalTime: "10m"},
				{Expr: expr, EvalTime: "30m"},
				{Expr: expr, EvalTime: "31m", ExpSamples: []promqlSample{changed}},
				{Expr: expr, EvalTime: "32m"},
				{Expr: expr, EvalTime: "50m"},
				{Expr: expr, EvalTime: "51m"},
			},
		}},
	}
	b, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model_change.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "test", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, b)
	}
}
