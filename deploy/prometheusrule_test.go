package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/servingprobe/servingprobe/dashboards"
)

var update = flag.Bool("update", false, "rewrite generated files (kubernetes/prometheusrule.yaml)")

const prometheusRulePath = "kubernetes/prometheusrule.yaml"

const prometheusRuleHeader = `# Code generated from dashboards/rules.yaml and dashboards/alerts.yaml by
# "go test ./deploy -run PrometheusRule -update"; DO NOT EDIT.
# The recording rules come first: the alerts read the series they record.
# Your Prometheus' ruleSelector must match the labels below.
`

// ruleGroups returns the groups of every rule file in dashboards.RuleFiles,
// in file order, as YAML nodes so that the block scalars of the expressions
// survive unchanged.
func ruleGroups() ([]*yaml.Node, error) {
	var groups []*yaml.Node
	for _, name := range dashboards.RuleFiles {
		b, err := dashboards.FS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("dashboards/%s: %w", name, err)
		}
		if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("dashboards/%s: not a mapping", name)
		}
		m := doc.Content[0]
		found := false
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value != "groups" {
				return nil, fmt.Errorf("dashboards/%s: unexpected top-level key %q", name, m.Content[i].Value)
			}
			found = true
			for _, g := range m.Content[i+1].Content {
				g.HeadComment, g.LineComment, g.FootComment = "", "", ""
				groups = append(groups, g)
			}
		}
		if !found {
			return nil, fmt.Errorf("dashboards/%s: no groups", name)
		}
	}
	return groups, nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func mapping(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }

// generatePrometheusRule renders the PrometheusRule that carries every group.
func generatePrometheusRule() ([]byte, error) {
	groups, err := ruleGroups()
	if err != nil {
		return nil, err
	}
	root := mapping(
		scalar("apiVersion"), scalar("monitoring.coreos.com/v1"),
		scalar("kind"), scalar("PrometheusRule"),
		scalar("metadata"), mapping(
			scalar("name"), scalar("servingprobe"),
			scalar("labels"), mapping(
				scalar("app.kubernetes.io/name"), scalar("servingprobe"),
			),
		),
		scalar("spec"), mapping(
			scalar("groups"), &yaml.Node{Kind: yaml.SequenceNode, Content: groups},
		),
	)
	var buf bytes.Buffer
	buf.WriteString(prometheusRuleHeader)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func TestPrometheusRuleUpToDate(t *testing.T) {
	want, err := generatePrometheusRule()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(prometheusRulePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRulePath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale; run go test ./deploy -run PrometheusRule -update (-generated +committed):\n%s", prometheusRulePath, diff)
	}
}

// TestPrometheusRuleCarriesEveryRule checks the committed file by meaning,
// independently of the generator: the same groups and rules, in the same
// order, as the rule files, and group names unique as Prometheus requires.
func TestPrometheusRuleCarriesEveryRule(t *testing.T) {
	type ruleFile struct {
		Groups []map[string]any `yaml:"groups"`
	}
	var want []map[string]any
	for _, name := range dashboards.RuleFiles {
		b, err := dashboards.FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var f ruleFile
		if err := yaml.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		want = append(want, f.Groups...)
	}
	b, err := os.ReadFile(prometheusRulePath)
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       ruleFile
	}
	if err := yaml.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("%s is %s %s, want monitoring.coreos.com/v1 PrometheusRule", prometheusRulePath, pr.APIVersion, pr.Kind)
	}
	if len(want) == 0 {
		t.Fatal("the rule files hold no groups")
	}
	if diff := cmp.Diff(want, pr.Spec.Groups); diff != "" {
		t.Errorf("%s spec.groups differ from dashboards rule files (-files +PrometheusRule):\n%s", prometheusRulePath, diff)
	}
	var names []string
	alerts := 0
	for _, g := range pr.Spec.Groups {
		name, _ := g["name"].(string)
		if slices.Contains(names, name) {
			t.Errorf("group name %q appears twice; Prometheus rejects that", name)
		}
		names = append(names, name)
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			if _, ok := r.(map[string]any)["alert"]; ok {
				alerts++
			}
		}
	}
	if alerts == 0 {
		t.Errorf("%s carries no alerting rule", prometheusRulePath)
	}
}
