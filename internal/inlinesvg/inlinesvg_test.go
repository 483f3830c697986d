package inlinesvg

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestSparkline(t *testing.T) {
	msf := func(s float64) string { return strconv.FormatFloat(s*1000, 'f', 1, 64) + " ms" }
	for _, tc := range []struct {
		name               string
		in                 []float64
		polylines, circles int
		empty              bool
		firstPolyline      string
	}{
		{"nothing", nil, 0, 0, true, ""},
		{"all failed", []float64{-1, -1}, 0, 0, true, ""},
		// 4 points over 100 px: x steps of 98/3 from 1; y from 18 (0) up to
		// 2 (the top).
		{"a line", []float64{0.1, 0.2, 0.15, 0.3}, 1, 0, false, "1.0,12.7 33.7,7.3 66.3,10.0 99.0,2.0"},
		{"a failure breaks the line", []float64{0.1, 0.2, -1, 0.15, 0.3, 0.2}, 2, 0, false, "1.0,12.7 20.6,7.3"},
		{"a lone point is a dot", []float64{0.1, -1, 0.2, 0.3}, 1, 1, false, "66.3,7.3 99.0,2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(Sparkline(tc.in, 100, 20, "TTFT", msf))
			if tc.empty {
				if strings.Contains(got, "<svg") {
					t.Errorf("an empty series drew a chart: %s", got)
				}
				return
			}
			if n := strings.Count(got, "<polyline"); n != tc.polylines {
				t.Errorf("%d polylines, want %d: %s", n, tc.polylines, got)
			}
			if n := strings.Count(got, "<circle"); n != tc.circles {
				t.Errorf("%d dots, want %d: %s", n, tc.circles, got)
			}
			if m := regexp.MustCompile(`points="([^"]*)"`).FindStringSubmatch(got); m == nil || m[1] != tc.firstPolyline {
				t.Errorf("first polyline %v, want %q", m, tc.firstPolyline)
			}
			if !strings.Contains(got, "top 300.0 ms") && !strings.Contains(got, "top 200.0 ms") {
				t.Errorf("the title does not state the top: %s", got)
			}
		})
	}
}

func TestOutcomeStrip(t *testing.T) {
	if got := string(OutcomeStrip(nil, 100, 10, "x")); strings.Contains(got, "<svg") {
		t.Errorf("no outcome drew a chart: %s", got)
	}
	got := string(OutcomeStrip([]bool{true, false, true, true}, 100, 10, "<outcomes>"))
	cells := regexp.MustCompile(`<rect class="(\w+)" x="([0-9.]+)" y="0" width="([0-9.]+)"`).FindAllStringSubmatch(got, -1)
	want := [][3]string{{"ok", "0.00", "24.50"}, {"bad", "25.00", "24.50"}, {"ok", "50.00", "24.50"}, {"ok", "75.00", "24.50"}}
	if len(cells) != len(want) {
		t.Fatalf("%d cells, want %d: %s", len(cells), len(want), got)
	}
	for i, c := range cells {
		if [3]string{c[1], c[2], c[3]} != want[i] {
			t.Errorf("cell %d = %v, want %v", i, c[1:], want[i])
		}
	}
	if !strings.Contains(got, "<title>&lt;outcomes&gt;</title>") {
		t.Errorf("title not escaped: %s", got)
	}
}
