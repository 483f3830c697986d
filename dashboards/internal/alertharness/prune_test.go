package main

import (
	"regexp"
	"slices"
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
			Rules []struct {
				Record, Expr string
				Labels       map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	quantiles := map[string][]string{}
	var exprs []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			kept[r.Record] = true
			quantiles[r.Record] = append(quantiles[r.Record], r.Labels["quantile"])
			exprs = append(exprs, r.Expr)
		}
	}
	for _, g := range cfg.Alerts().Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	for _, e := range exprs {
		for _, m := range recordRE.FindAllStringSubmatch(e, -1) {
			if !kept[m[1]] {
				t.Errorf("%s is read but not recorded", m[0])
				continue
			}
			q := quantileRE.FindStringSubmatch(m[2])
			if q == nil {
				continue
			}
			re := regexp.MustCompile("^(?:" + q[2] + ")$")
			if !slices.ContainsFunc(quantiles[m[1]], re.MatchString) {
				t.Errorf("%s is read, but only quantiles %v are recorded", m[0], quantiles[m[1]])
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
			// The alerts read the 5m TTFT p50 and p99, never its p90.
			if r.Record == mixin.QuantileRecord(mixin.TTFT, "5m") && slices.Contains(quantiles[r.Record], "0.9") {
				t.Errorf("%s{quantile=\"0.9\"}, read by no alert, is evaluated", r.Record)
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
