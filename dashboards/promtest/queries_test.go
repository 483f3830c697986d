package promtest

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSubstitute(t *testing.T) {
	vars := Vars("10s", "1m")
	for _, tc := range []struct {
		in, want, err string
	}{
		{`rate(x{job=~"$job", target=~"${target}"}[$__rate_interval])`, `rate(x{job=~".*", target=~".*"}[10s])`, ""},
		{`increase(x{model=~"${model:regex}"}[$__range])`, `increase(x{model=~".*"}[1m])`, ""},
		{`x{a=~"$nope"}`, "", "unknown Grafana variables [nope]"},
	} {
		got, err := Substitute(tc.in, vars)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Substitute(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Substitute(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestDashboardQueries(t *testing.T) {
	fsys := fstest.MapFS{"d.json": {Data: []byte(`{
		"annotations": {"list": [{"builtIn": 1, "name": "Annotations & Alerts"}, {"name": "Bench", "expr": "b > 0"}]},
		"panels": [
			{"type": "row", "title": "r", "panels": [{"type": "stat", "title": "inner", "targets": [{"refId": "A", "expr": "up"}]}]},
			{"type": "timeseries", "title": "ts", "targets": [{"refId": "A", "expr": "x"}, {"refId": "B", "expr": "y"}]}
		],
		"templating": {"list": [
			{"name": "datasource", "type": "datasource", "query": "prometheus"},
			{"name": "job", "type": "query", "query": "label_values(up{a=\"b\"}, job)"},
			{"name": "t", "type": "query", "query": {"query": "label_values(x, target)"}}
		]}}`)}}
	got, err := DashboardQueries(fsys, "d.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{Dashboard: "d.json", Kind: KindPanel, Title: "inner", RefID: "A", Expr: "up"},
		{Dashboard: "d.json", Kind: KindPanel, Title: "ts", RefID: "A", Expr: "x"},
		{Dashboard: "d.json", Kind: KindPanel, Title: "ts", RefID: "B", Expr: "y"},
		{Dashboard: "d.json", Kind: KindAnnotation, Title: "Bench", Expr: "b > 0"},
		{Dashboard: "d.json", Kind: KindVariable, Title: "job", Expr: `count by (job) (up{a="b"})`},
		{Dashboard: "d.json", Kind: KindVariable, Title: "t", Expr: "count by (target) (x)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DashboardQueries (-want +got):\n%s", diff)
	}
}

func TestConfigYAML(t *testing.T) {
	got, err := configYAML(Config{
		Targets:        []ScrapeTarget{{Job: "sp", URL: "http://127.0.0.1:9000/probe?target=a"}},
		RuleFiles:      []string{"/tmp/r.yaml"},
		ScrapeInterval: time.Second, EvaluationInterval: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `global:
  scrape_interval: 1000ms
  evaluation_interval: 2000ms
rule_files:
  - "/tmp/r.yaml"
scrape_configs:
  - job_name: "sp"
    scheme: http
    metrics_path: "/probe"
    static_configs:
      - targets: ["127.0.0.1:9000"]
    params:
      "target": ["a"]
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configYAML (-want +got):\n%s", diff)
	}
}
