package exporter

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/servingprobe/servingprobe/config"
)

func TestWeightedQuantile(t *testing.T) {
	s := func(vn ...float64) []itlSample {
		var out []itlSample
		for i := 0; i < len(vn); i += 2 {
			out = append(out, itlSample{PerToken: vn[i], Tokens: int(vn[i+1])})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []itlSample
		q    float64
		want float64
	}{
		{"none", nil, 0.5, -1},
		{"zero weight", s(1, 0), 0.5, -1},
		{"one", s(0.02, 1), 0.99, 0.02},
		{"median of odd count", s(3, 1, 1, 1, 2, 1), 0.5, 2},
		{"median of even count is the lower (nearest rank)", s(4, 1, 1, 1, 3, 1, 2, 1), 0.5, 2},
		{"p99 of 100 is the 99th", append(s(9, 1), func() []itlSample {
			var x []itlSample
			for i := range 99 {
				x = append(x, itlSample{PerToken: float64(i) / 100, Tokens: 1})
			}
			return x
		}()...), 0.99, 0.98},
		// A 3-token event is 3 samples: it outweighs two 1-token events.
		{"weights count", s(0.010, 1, 0.050, 3, 0.012, 1), 0.5, 0.050},
		{"p0 is the minimum", s(5, 2, 1, 2), 0, 1},
		{"p100 is the maximum", s(5, 2, 1, 2), 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := weightedQuantile(tc.in, tc.q); got != tc.want {
				t.Errorf("weightedQuantile(q=%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// TestLandingEscapes: errors and model names come from servers; the page
// must show them as text.
func TestLandingEscapes(t *testing.T) {
	cfg := &config.Config{Targets: []config.Target{{Name: "a", Backend: "vllm", Modules: []string{"m"}}}}
	bad := "<script>alert(1)</script>"
	entries := []HistoryEntry{{Time: time.Unix(0, 0), Target: "a", Module: "m", Model: bad, Mode: ModeProbe, Outcome: "http_5xx", Error: bad}}
	var b bytes.Buffer
	if err := landingTmpl.Execute(&b, landingData{Targets: targetViews(cfg, entries, func(string, string) healthFigures { return healthFigures{} }), Recent: entries}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") || !strings.Contains(b.String(), "&lt;script&gt;") {
		t.Errorf("server text not escaped:\n%s", b.String())
	}
}

// TestLandingPage runs the daemon against the simulator and a closed port
// and reads the page an on-call engineer opens first: a row per target and
// module with its state, quantiles and charts that hold the probes' data.
func TestLandingPage(t *testing.T) {
	f := newFixture(t, false)
	m := f.d.Metrics()
	waitFor(t, "6 successes and 3 connect errors", func() bool {
		return testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "success")) >= 6 &&
			testutil.ToFloat64(m.requests.WithLabelValues("down", "short", "m", "probe", "connect_error")) >= 3
	})
	code, page := f.get("/")
	if code != 200 {
		t.Fatalf("GET / = %d", code)
	}
	rows := regexp.MustCompile(`(?s)<tr class="target">(.*?)</tr>`).FindAllStringSubmatch(page, -1)
	if len(rows) != 2 {
		t.Fatalf("%d target rows, want 2 (sim and down):\n%s", len(rows), page)
	}
	sim, down := rows[0][1], rows[1][1]
	if !strings.Contains(sim, "<td>sim</td>") || !strings.Contains(down, "<td>down</td>") {
		t.Fatalf("rows out of the config's order:\n%s\n%s", sim, down)
	}
	if !strings.Contains(sim, `class="ok">success`) || !strings.Contains(sim, "100.0%") {
		t.Errorf("sim row lacks its state:\n%s", sim)
	}
	// TTFT and ITL quantiles are numbers, and the TTFT and ITL charts are
	// lines through at least 5 probes.
	cells := regexp.MustCompile(`<td>([0-9.]+) / ([0-9.]+) ms</td>`).FindAllStringSubmatch(sim, -1)
	if len(cells) != 2 {
		t.Errorf("sim row: want TTFT and ITL p50/p99 in ms, got %q", cells)
	}
	lines := regexp.MustCompile(`<polyline points="([^"]*)"`).FindAllStringSubmatch(sim, -1)
	if len(lines) != 2 {
		t.Fatalf("sim row: %d chart lines, want TTFT and ITL", len(lines))
	}
	for _, l := range lines {
		if n := len(strings.Fields(l[1])); n < 5 {
			t.Errorf("a chart line has %d points, want >= 5: %s", n, l[1])
		}
	}
	if n := strings.Count(sim, `<rect class="ok"`); n < 5 {
		t.Errorf("sim outcome strip: %d successes, want >= 5", n)
	}
	if !strings.Contains(down, `class="bad">connect_error`) || !strings.Contains(down, "0.0%") || strings.Count(down, `<rect class="bad"`) < 3 {
		t.Errorf("down row lacks its failures:\n%s", down)
	}
	if strings.Contains(down, "<polyline") {
		t.Errorf("down row draws a latency line without a success:\n%s", down)
	}
	// The results list shows each probe's ITL.
	if !regexp.MustCompile(`<td class="ok">success</td><td>[0-9.]+ ms</td><td>[0-9.]+ ms</td>`).MatchString(page) {
		t.Errorf("recent results lack TTFT and ITL of a success")
	}
}
