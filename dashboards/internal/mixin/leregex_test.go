package mixin

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// openMetricsFloat spells a float as client_golang's OpenMetrics encoder does:
// integers get a ".0" suffix.
func openMetricsFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if f == math.Trunc(f) && !regexp.MustCompile(`[.e]`).MatchString(s) {
		s += ".0"
	}
	return s
}

func TestLeAtMost(t *testing.T) {
	thresholds := []string{"2", "0.75", "1.5", "10", "0.05", "120", "30", "0.1", "9.99", "100.25"}
	rng := rand.New(rand.NewPCG(1, 2))
	var values []float64
	values = append(values, prometheus.ExponentialBucketsRange(0.01, 120, 40)...)
	values = append(values, prometheus.ExponentialBucketsRange(0.001, 5, 30)...)
	values = append(values, prometheus.ExponentialBucketsRange(0.0001, 60, 30)...)
	values = append(values, 0, 0.00005, 1, 2, 10, 100, 1000, 1e6, 0.75, 0.7500001, 0.7499999, 2.0000001, 1.9999999)
	for range 2000 {
		values = append(values, math.Exp(rng.Float64()*14-9))
	}
	for _, th := range thresholds {
		re, err := LeAtMost(th)
		if err != nil {
			t.Fatalf("LeAtMost(%q): %v", th, err)
		}
		anchored := regexp.MustCompile("^(?:" + re + ")$")
		limit, _ := strconv.ParseFloat(th, 64)
		for _, v := range values {
			for _, s := range []string{strconv.FormatFloat(v, 'g', -1, 64), openMetricsFloat(v)} {
				if got, want := anchored.MatchString(s), v <= limit; got != want {
					t.Errorf("LeAtMost(%q) matches %q = %v, want %v", th, s, got, want)
				}
			}
		}
		for _, s := range []string{"+Inf", "Inf", "NaN", ""} {
			if anchored.MatchString(s) {
				t.Errorf("LeAtMost(%q) matches %q", th, s)
			}
		}
	}
}

func TestLeAtMostRejects(t *testing.T) {
	for _, th := range []string{"", "1e3", "-1", "01", "1.50", ".5", "abc"} {
		if _, err := LeAtMost(th); err == nil {
			t.Errorf("LeAtMost(%q) = nil error, want an error", th)
		}
	}
}
