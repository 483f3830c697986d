package dashboards

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
)

// ttfatAlertTest is a promtool test of the opt-in ServingprobeTTFATBreach
// alert, rendered with ttfat_threshold_seconds "30": a target whose probes
// answer in (30s, 60s] after reasoning fires, one answering within 10s does
// not, and bench requests are not read.
const ttfatAlertTest = `rule_files:
  - rules.yaml
  - alerts.yaml
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'servingprobe_time_to_first_answer_token_seconds_bucket{job="servingprobe", instance="sp:9", target="thinker", module="chat", model="m", mode="probe", le="10"}'
        values: '0x30'
      - series: 'servingprobe_time_to_first_answer_token_seconds_bucket{job="servingprobe", instance="sp:9", target="thinker", module="chat", model="m", mode="probe", le="30"}'
        values: '0x30'
      - series: 'servingprobe_time_to_first_answer_token_seconds_bucket{job="servingprobe", instance="sp:9", target="thinker", module="chat", model="m", mode="probe", le="60"}'
        values: '0+4x30'
      - series: 'servingprobe_time_to_first_answer_token_seconds_bucket{job="servingprobe", instance="sp:9", target="thinker", module="chat", model="m", mode="probe", le="+Inf"}'
        values: '0+4x30'
      - series: 'servingprobe_time_to_first_answer_token_seconds_bucket{job="servingprobe", instance="sp:9", target="quick", module="chat", model="m", mode="probe", le="10"}'
        values: '0+4x30'
      - series: 'servingprobe_time_to_first_answer_token_seconds_bucket{job="servingprobe", instance="sp:9", target="quick", module="chat", model="m", mode="probe", le="+Inf"}'
        values: '0+4x30'
      - series: 'servingprobe_time_to_first_answer_token_seconds_bucket{job="servingprobe", instance="sp:9", target="quick", module="chat", model="m", mode="bench", le="10"}'
        values: '0x30'
      - series: 'servingprobe_time_to_first_answer_token_seconds_bucket{job="servingprobe", instance="sp:9", target="quick", module="chat", model="m", mode="bench", le="+Inf"}'
        values: '0+50x30'
    alert_rule_test:
      - eval_time: 10m
        alertname: ServingprobeTTFATBreach
        exp_alerts: []
      - eval_time: 25m
        alertname: ServingprobeTTFATBreach
        exp_alerts:
          - exp_labels: {severity: warning, job: servingprobe, target: thinker, module: chat, model: m, mode: probe, quantile: "0.99"}
            exp_annotations:
              summary: Probe time to first answer token p99 is above its threshold.
              description: The 5m p99 time to the first answer token (after any reasoning) of probes to thinker (module chat, model m) is 59.7s, above the 30s threshold for 15m.
              runbook_url: https://github.com/servingprobe/servingprobe/blob/main/docs/runbook.md#servingprobettfatbreach
`

// TestTTFATAlertOptIn: the shipped alerts leave ServingprobeTTFATBreach
// out; with ttfat_threshold_seconds set it is rendered, fires and stays
// silent as promtool shows, and has a runbook section.
func TestTTFATAlertOptIn(t *testing.T) {
	for _, r := range loadRules(t, "alerts.yaml") {
		if r.Alert == "ServingprobeTTFATBreach" {
			t.Fatal("alerts.yaml has ServingprobeTTFATBreach, which is opt-in")
		}
	}
	c := mixin.Default()
	c.TTFATThresholdSeconds = "30"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	files, err := mixin.Files(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"rules.yaml", "alerts.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(string(files["alerts.yaml"]), "alert: ServingprobeTTFATBreach") {
		t.Fatalf("alerts.yaml rendered with ttfat_threshold_seconds lacks ServingprobeTTFATBreach:\n%s", files["alerts.yaml"])
	}
	test := filepath.Join(dir, "ttfat.yaml")
	if err := os.WriteFile(test, []byte(ttfatAlertTest), 0o644); err != nil {
		t.Fatal(err)
	}
	pt := promtool(t)
	if out, err := exec.Command(pt, "check", "rules", filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "alerts.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := exec.Command(pt, "test", "rules", test).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	runbook, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(runbook), "\n## ServingprobeTTFATBreach\n") {
		t.Error("docs/runbook.md has no ServingprobeTTFATBreach section")
	}
}
