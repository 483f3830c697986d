package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// TestAnswerChecksCounted: every configured check's series exists at zero
// once the config loads; a probe's verdicts are counted by check and
// result; a failed check keeps the request's latency (it was served); the
// history keeps the failure's reason, redacted, among the failures.
func TestAnswerChecksCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	checks := []prober.CheckName{prober.CheckJSONSchema, prober.CheckRegex}
	m.SetTargets([]TargetSeries{{Name: "a", Backend: "ollama", Model: "x", Modules: []string{"m"},
		Checks: map[string][]prober.CheckName{"m": checks}}})
	if got, want := testutil.CollectAndCount(m.answerChecks), len(checks)*len(prober.CheckOutcomes); got != want {
		t.Fatalf("answer check series after SetTargets = %d, want %d", got, want)
	}
	sent := time.Unix(1000, 0)
	r := prober.Result{Target: "a", Module: "m", Model: "x", Outcome: prober.OutcomeSuccess, Stream: true,
		Sent: sent, FirstToken: sent.Add(50 * time.Millisecond), End: sent.Add(400 * time.Millisecond),
		Events: []prober.Event{{At: sent.Add(50 * time.Millisecond), Tokens: 1}}, OutputTokens: 1,
		Checks: []prober.CheckResult{
			{Check: prober.CheckJSONSchema, Result: prober.CheckPass},
			{Check: prober.CheckRegex, Result: prober.CheckFail, Reason: `no match for the regex in "sk-secret-token-1234 is the answer"`},
		}}
	m.Observer(ModeProbe).Observe(r)
	for _, tc := range []struct {
		check, result string
		want          float64
	}{
		{"json_schema", "pass", 1}, {"json_schema", "fail", 0}, {"regex", "fail", 1}, {"regex", "pass", 0}, {"regex", "error", 0},
	} {
		if got := testutil.ToFloat64(m.answerChecks.WithLabelValues("a", "m", tc.check, tc.result)); got != tc.want {
			t.Errorf("answer_checks_total{check=%q,result=%q} = %v, want %v", tc.check, tc.result, got, tc.want)
		}
	}
	if got := testutil.CollectAndCount(m.e2e); got == 0 {
		t.Fatal("no E2E series")
	}
	var e2e float64
	if mf, err := reg.Gather(); err == nil {
		for _, f := range mf {
			if f.GetName() == "servingprobe_e2e_request_latency_seconds" {
				for _, s := range f.GetMetric() {
					e2e += float64(s.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	if e2e != 1 {
		t.Errorf("e2e_request_latency_seconds samples = %v, want 1: a failed check keeps its latency", e2e)
	}

	red := config.NewRedactor(&config.Config{Targets: []config.Target{{Name: "a", HTTPClientConfig: promconfig.HTTPClientConfig{BearerToken: "sk-secret-token-1234"}}}})
	h := NewHistory(4)
	h.Add(entryOf(r, "x", ModeProbe, nil, red))
	// Push the entry out of the recent ring with passing probes.
	ok := r
	ok.Checks = []prober.CheckResult{{Check: prober.CheckJSONSchema, Result: prober.CheckPass}, {Check: prober.CheckRegex, Result: prober.CheckPass}}
	for range 4 {
		h.Add(entryOf(ok, "x", ModeProbe, nil, red))
	}
	var kept *HistoryEntry
	for _, e := range h.List() {
		if !e.checksPassed() {
			kept = &e
		}
	}
	if kept == nil {
		t.Fatal("the entry with a failed check was not kept among the failures")
	}
	reason := kept.Checks[1].Reason
	if strings.Contains(reason, "sk-secret-token-1234") || !strings.Contains(reason, "no match") {
		t.Errorf("kept reason = %q, want the reason with the secret redacted", reason)
	}
	if got := answersCell(h.recentEntries()); !strings.Contains(got, "answers right 4/4") {
		t.Errorf("answersCell = %q, want 4/4 over the recent results", got)
	}
	var b strings.Builder
	answerChecksText(&b, r.Checks)
	if got := b.String(); !strings.Contains(got, "check regex: fail (no match") {
		t.Errorf("debug text = %q", got)
	}
}

// TestAnswerChecksReload: a module whose checks change loses the old
// checks' series.
func TestAnswerChecksReload(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	ts := TargetSeries{Name: "a", Backend: "ollama", Model: "x", Modules: []string{"m"},
		Checks: map[string][]prober.CheckName{"m": {prober.CheckRegex, prober.CheckEquals}}}
	m.SetTargets([]TargetSeries{ts})
	ts.Checks = map[string][]prober.CheckName{"m": {prober.CheckRegex}}
	m.SetTargets([]TargetSeries{ts})
	if got, want := testutil.CollectAndCount(m.answerChecks), len(prober.CheckOutcomes); got != want {
		t.Errorf("series after dropping a check = %d, want %d", got, want)
	}
}
