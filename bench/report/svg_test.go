package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi float64
		n      int
		want   []float64
	}{
		{"steps of 0.2", 0, 1, 5, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"round steps of 20", 0, 100, 5, []float64{0, 20, 40, 60, 80, 100}},
		{"ends off the grid are not ticks", 3, 97, 5, []float64{20, 40, 60, 80}},
		{"steps of 5", 0, 23, 6, []float64{0, 5, 10, 15, 20}},
		{"negative to positive", -10, 10, 4, []float64{-10, -5, 0, 5, 10}},
		{"an empty span is one tick", 7, 7, 5, []float64{7}},
		{"a reversed span is one tick", 5, 1, 5, []float64{5}},
		{"NaN is one tick", math.NaN(), 1, 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ticks(tc.lo, tc.hi, tc.n)
			if tc.want == nil {
				if len(got) != 1 {
					t.Errorf("ticks(%v, %v, %d) = %v, want one tick", tc.lo, tc.hi, tc.n, got)
				}
				return
			}
			// Steps are added up in floating point: compare to 1e-9.
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
				t.Errorf("ticks(%v, %v, %d) (-want +got):\n%s", tc.lo, tc.hi, tc.n, diff)
			}
			if len(got) > tc.n+1 {
				t.Errorf("ticks(%v, %v, %d) = %d ticks, want at most %d", tc.lo, tc.hi, tc.n, len(got), tc.n+1)
			}
		})
	}
}

func TestFmtTick(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {0.25, "0.25"}, {1234, "1234"}, {12345, "12.3k"}, {-25000, "-25k"}, {2500000, "2.5M"}, {1.0 / 3, "0.3333"},
	} {
		if got := fmtTick(tc.v); got != tc.want {
			t.Errorf("fmtTick(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestHistogram(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vals   []float64
		n      int
		xs, ys []float64
	}{
		// Bins of width (hi-lo)/n; xs are their centres, and the maximum
		// falls in the last bin, not one past it.
		{"four bins", []float64{0, 1, 1, 2, 3, 4}, 4, []float64{0.5, 1.5, 2.5, 3.5}, []float64{1, 2, 1, 2}},
		{"every value counted once", []float64{10, 20, 20, 20, 30}, 2, []float64{15, 25}, []float64{1, 4}},
		{"one value is one bar of all", []float64{5, 5, 5}, 10, []float64{5}, []float64{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs, ys := histogram(tc.vals, tc.n)
			if !cmp.Equal(xs, tc.xs) || !cmp.Equal(ys, tc.ys) {
				t.Errorf("histogram(%v, %d) = %v, %v, want %v, %v", tc.vals, tc.n, xs, ys, tc.xs, tc.ys)
			}
		})
	}
}

func TestCDF(t *testing.T) {
	t.Run("small: every value, in order, up to 1", func(t *testing.T) {
		xs, ys := cdf([]float64{3, 1, 2, 2})
		if want := []float64{1, 2, 2, 3}; !cmp.Equal(xs, want) {
			t.Errorf("cdf x = %v, want %v", xs, want)
		}
		if want := []float64{0.25, 0.5, 0.75, 1}; !cmp.Equal(ys, want) {
			t.Errorf("cdf y = %v, want %v", ys, want)
		}
	})
	t.Run("large: at most 401 points, ending at the maximum and 1", func(t *testing.T) {
		vals := make([]float64, 1001)
		for i := range vals {
			vals[i] = float64(1000 - i)
		}
		xs, ys := cdf(vals)
		if len(xs) > 401 || len(xs) < 300 {
			t.Errorf("%d points, want at most 401", len(xs))
		}
		if xs[0] != 0 || xs[len(xs)-1] != 1000 || ys[len(ys)-1] != 1 {
			t.Errorf("cdf runs %v..%v up to %v, want 0..1000 up to 1", xs[0], xs[len(xs)-1], ys[len(ys)-1])
		}
		for i := 1; i < len(xs); i++ {
			if xs[i] < xs[i-1] || ys[i] <= ys[i-1] {
				t.Fatalf("cdf not increasing at %d: (%v, %v) after (%v, %v)", i, xs[i], ys[i], xs[i-1], ys[i-1])
			}
		}
		// The fraction at x is the share of values <= x: the values are
		// 0..1000, so (x+1)/1001.
		for i := range xs {
			if ys[i] != (xs[i]+1)/1001 {
				t.Fatalf("cdf y at %v = %v, want (x+1)/1001", xs[i], ys[i])
			}
		}
	})
}

func TestBarWidth(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 1}, {[]float64{4}, 1}, {[]float64{0, 2, 3, 7}, 1}, {[]float64{10, 30, 60}, 20}, {[]float64{1, 1}, 1},
	} {
		if got := barWidth(tc.xs); got != tc.want {
			t.Errorf("barWidth(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

// TestChartSVG: a chart states how many points it draws, overall and per
// series (the browser tests read them), skips values it cannot place, and
// escapes its text.
func TestChartSVG(t *testing.T) {
	c := chart{ID: "x<y", Title: "a & b", XLabel: "t", YLabel: "v", YFromZero: true,
		Series: []series{
			{Name: "line", Kind: line, X: []float64{0, 1, 2, 3}, Y: []float64{1, math.NaN(), 3, math.Inf(1)}},
			{Name: "dots", Kind: points, X: []float64{0, 1}, Y: []float64{2, 2}},
			{Name: "bars", Kind: bars, X: []float64{0, 1, 2}, Y: []float64{1, 2, 3}},
		},
		Segments: []segment{{Y: 0, X0: 0, X1: 1, Class: "prefill"}},
		VMarks:   []mark{{At: 1.5, Label: "p99", Class: "pct"}},
	}
	svg := string(c.SVG())
	if !strings.Contains(svg, `data-chart="x&lt;y" data-points="10"`) {
		t.Errorf("chart does not state its 4+2+3 points and 1 segment, or its id is not escaped:\n%.300s", svg)
	}
	per := regexp.MustCompile(`class="series (\w+)[^"]*" data-points="(\d+)"`).FindAllStringSubmatch(svg, -1)
	got := map[string]int{}
	for _, m := range per {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	// The line's NaN and +Inf are not drawn.
	if want := map[string]int{"line": 2, "points": 2, "bars": 3, "timeline": 1}; !cmp.Equal(got, want) {
		t.Errorf("series points = %v, want %v", got, want)
	}
	if n := strings.Count(svg, "<rect "); n != 4 {
		t.Errorf("%d rects, want 3 bars and 1 segment", n)
	}
	if !strings.Contains(svg, "<title>a &amp; b</title>") || strings.Contains(svg, "a & b") {
		t.Errorf("title not escaped")
	}
	if !strings.Contains(svg, `class="mark pct"`) || !strings.Contains(svg, ">p99<") {
		t.Errorf("the p99 mark is missing")
	}
	if strings.Count(svg, `class="legend`) != 3 {
		t.Errorf("a chart of 3 series has no legend of 3")
	}
}
