package main

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
	"github.com/servingprobe/servingprobe/testkit/external"
)

// expand reads promtool's expanding notation back ("a+bxn" is a, a+b, ...,
// a+n*b), the inverse of encoder for the forms it writes.
func expand(t *testing.T, s string) []float64 {
	t.Helper()
	var out []float64
	for _, tok := range strings.Fields(s) {
		x := strings.LastIndexByte(tok, 'x')
		if x < 0 {
			v, err := strconv.ParseFloat(tok, 64)
			if err != nil {
				t.Fatalf("token %q: %v", tok, err)
			}
			out = append(out, v)
			continue
		}
		n, err := strconv.Atoi(tok[x+1:])
		if err != nil {
			t.Fatalf("token %q: %v", tok, err)
		}
		body := tok[:x]
		i := strings.LastIndexAny(body[1:], "+-") + 1
		a, err1 := strconv.ParseFloat(body[:i], 64)
		b, err2 := strconv.ParseFloat(body[i:], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("token %q: %v %v", tok, err1, err2)
		}
		for k := 0; k <= n; k++ {
			out = append(out, a+float64(k)*b)
		}
	}
	return out
}

func TestEncoderRoundTrip(t *testing.T) {
	for _, vals := range [][]float64{
		{0},
		{0, 0, 0, 0},
		{0, 2, 4, 6, 7, 8, 8, 8, 20},
		{1, 0, 1, 0, 1},
		{5, 3, 1, 2.5},
	} {
		var e encoder
		for _, v := range vals {
			e.add(v)
		}
		s := e.String()
		if got := expand(t, s); !slices.Equal(got, vals) {
			t.Errorf("%v encoded as %q reads back as %v", vals, s, got)
		}
	}
	var e encoder
	for i := range 1000 {
		e.add(float64(2 * i))
	}
	if s := e.String(); s != "0+2x999" {
		t.Errorf("a steady counter is %q, want one run", s)
	}
}

func TestParseGot(t *testing.T) {
	out := `Unit Testing:  run.yaml
  FAILED:
    expr: "min_over_time(...)", time: 20m,
        exp: nil
        got: {alertname="A", alertstate="firing", target="t0"} 4.2E+02, {alertname="B", alertstate="firing", target="t1"} 6E+01
`
	fs, err := parseGot(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Labels["alertname"] != "A" || fs[0].Value != 420 || fs[1].Labels["target"] != "t1" || fs[1].Value != 60 {
		t.Errorf("parsed %+v", fs)
	}
	if fs, err := parseGot("SUCCESS", true); err != nil || fs != nil {
		t.Errorf("a passing run: %v, %v", fs, err)
	}
	if _, err := parseGot("error in rule file", false); err == nil {
		t.Error("a promtool error was taken for a result")
	}
}

// TestModelHealthyMedian checks the model draws what it says: the median TTFT
// of a day of probes is near TTFTMedian (the daily cycle averages out).
func TestModelHealthyMedian(t *testing.T) {
	m := DefaultModel()
	s := NewServer(m, 7, 24*time.Hour)
	var ttft []float64
	fails := 0
	for at := time.Duration(0); at < 24*time.Hour; at += m.ProbeInterval {
		p := s.Probe(at, nil, 0)
		if p.Outcome != "success" {
			fails++
			continue
		}
		ttft = append(ttft, p.TTFT)
	}
	slices.Sort(ttft)
	if med := ttft[len(ttft)/2]; med < 0.25 || med > 0.36 {
		t.Errorf("median TTFT of a healthy day = %v, want about %v", med, m.TTFTMedian)
	}
	if fails == 0 || float64(fails)/float64(len(ttft)) > 0.01 {
		t.Errorf("%d failed probes of %d in a healthy day", fails, len(ttft)+fails)
	}
	sc := &Scenario{FailRatio: 1}
	if p := s.Probe(time.Hour, sc, 0); p.Outcome != "http_5xx" {
		t.Errorf("a probe under a 100%% failure scenario: %q", p.Outcome)
	}
}

// TestHarnessShort runs the harness end to end through promtool on one
// scenario: every probe failing must page (ServingprobeTargetDown) within
// its 3-minute target, and no alert may name the healthy second target.
func TestHarnessShort(t *testing.T) {
	external.Program(t, "promtool")
	o := DefaultOptions()
	o.ScenarioSeeds, o.HealthyDays, o.ScenarioWarmup, o.Observe = 1, 0, 2*time.Hour, 15*time.Minute
	o.Scenarios = []Scenario{scenario(t, "one target of three down")}
	res, sev, err := measureConfig(context.Background(), "promtool", mixin.Default(), DefaultModel(), o)
	if err != nil {
		t.Fatal(err)
	}
	sc := o.Scenarios[0]
	ds := res.Fire[sc.Name][sc.Expect]
	if len(ds) != 1 || ds[0] > sc.Within || ds[0] < 0 {
		t.Errorf("%s: %s fired after %v, want one firing within %v", sc.Name, sc.Expect, ds, sc.Within)
	}
	if w := res.Wrong[sc.Name]; len(w) > 0 {
		t.Errorf("alerts on healthy targets: %v", w)
	}
	if sev[sc.Expect] != "critical" {
		t.Errorf("%s severity %q, want critical (a page)", sc.Expect, sev[sc.Expect])
	}
	var b strings.Builder
	res.Table(&b, sev)
	if !strings.Contains(b.String(), "| "+sc.Name+" | "+sc.Expect+" (critical) | 1/1 |") {
		t.Errorf("table lacks the scenario's row:\n%s", b.String())
	}
}

// scenario returns the scenario named name.
func scenario(t *testing.T, name string) Scenario {
	t.Helper()
	i := slices.IndexFunc(Scenarios, func(sc Scenario) bool { return sc.Name == name })
	if i < 0 {
		t.Fatalf("no scenario %q", name)
	}
	return Scenarios[i]
}

// TestHarnessSignals runs the scenarios of the signals beside latency
// (answer checks, conversations, live headroom) through promtool: each
// must raise its alert within its target, and only on the target it
// broke. Their alerts need no day-old baseline, so two hours of healthy
// history stand before the injection.
func TestHarnessSignals(t *testing.T) {
	external.Program(t, "promtool")
	o := DefaultOptions()
	o.ScenarioSeeds, o.HealthyDays, o.ScenarioWarmup, o.Observe = 1, 0, 2*time.Hour, 40*time.Minute
	o.Scenarios = []Scenario{
		scenario(t, "a quarter of answers fail a check"),
		scenario(t, "prefix cache lost"),
		scenario(t, "traffic at 90% of capacity"),
	}
	res, _, err := measureConfig(context.Background(), "promtool", mixin.Default(), DefaultModel(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range o.Scenarios {
		ds := res.Fire[sc.Name][sc.Expect]
		if len(ds) != 1 || ds[0] > sc.Within || ds[0] < 0 {
			t.Errorf("%s: %s fired after %v, want one firing within %v (fired: %v)", sc.Name, sc.Expect, ds, sc.Within, res.Fire[sc.Name])
		}
		if w := res.Wrong[sc.Name]; len(w) > 0 {
			t.Errorf("%s: alerts on healthy targets: %v", sc.Name, w)
		}
	}
}

// TestTableHealthyOnly checks that a run of the healthy series alone (-only
// healthy) prints the false-alert table alone, with its counts per week.
func TestTableHealthyOnly(t *testing.T) {
	o := DefaultOptions()
	o.Seeds, o.HealthyDays, o.Scenarios = 4, 7, nil
	res := &Result{Options: o, False: map[string]int{"A": 2}, Weeks: 4}
	var b strings.Builder
	res.Table(&b, map[string]string{"A": "warning", "B": "critical"})
	got := b.String()
	if strings.Contains(got, "Time to fire") || !strings.HasPrefix(got, "False alerts on the healthy series") {
		t.Errorf("healthy-only table:\n%s", got)
	}
	for _, row := range []string{"| A | warning | 2 | 0.50 | ≤ 1 | yes |", "| B | critical | 0 | 0.00 | 0 | yes |", "over 4 weeks (4 seeds of 7 days)"} {
		if !strings.Contains(got, row) {
			t.Errorf("table lacks %q:\n%s", row, got)
		}
	}
}

// TestNativeHistogram checks the native variant's buckets against their
// definition (bucket i holds (2^((i-1)/8), 2^(i/8)]) and promtool's notation.
func TestNativeHistogram(t *testing.T) {
	for _, v := range []float64{0.0123, 0.3, 1, 1.05, 2.7, 61} {
		i := nativeIndex(v)
		lo, hi := math.Exp2(float64(i-1)/8), math.Exp2(float64(i)/8)
		if !(lo < v && v <= hi*(1+1e-12)) {
			t.Errorf("%v in bucket %d: (%v, %v]", v, i, lo, hi)
		}
	}
	h := newHistogram("x", nil, true)
	h.scrape()
	h.observe(0.3)
	h.observe(0.3)
	h.observe(1.05)
	h.scrape()
	var b strings.Builder
	h.write(&b, `a="b"`)
	want := "  - series: 'x{a=\"b\"}'\n    values: '{{schema:3 sum:0 count:0}} {{schema:3 sum:1.65 count:3 buckets:[2 0 0 0 0 0 0 0 0 0 0 0 0 0 1] offset:-13}}'\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
