package main

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
)

// TestAlertingRecords checks the recording rules the harness evaluates:
// every series an alert reads is recorded, and so is every series those
// records read, while the dashboards' own quantiles are left out.
func TestAlertingRecords(t *testing.T) {
	cfg := mixin.Default()
	b, err := alertingRecords(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Rules []struct{ Record, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	var exprs []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			kept[r.Record] = true
			exprs = append(exprs, r.Expr)
		}
	}
	for _, g := range cfg.Alerts().Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	for _, e := range exprs {
		for _, m := range recordRE.FindAllString(e, -1) {
			if !kept[m] {
				t.Errorf("%s is read but not recorded", m)
			}
		}
	}
	all := 0
	for _, g := range cfg.Rules().Groups {
		for _, r := range g.Rules {
			all++
			if strings.Contains(r.Record, "e2e_request_latency") && kept[r.Record] {
				t.Errorf("%s, read by no alert, is evaluated", r.Record)
			}
		}
	}
	n := 0
	for _, g := range rf.Groups {
		n += len(g.Rules)
	}
	if n == 0 || n >= all {
		t.Errorf("kept %d of %d recording rules", n, all)
	}
}
