package mixin

import (
	"fmt"
	"regexp"
	"strings"
)

var plainDecimal = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$`)

// LeAtMost returns an RE2 regexp that matches every classic-bucket `le` label
// value whose number is <= t, and nothing else (not "+Inf").
//
// Subtleness ahead! A classic latency SLI needs the bucket at the threshold,
// but the exporter's boundaries come from ExponentialBucketsRange and are not
// round numbers, and the same boundary is spelled "1" in the text format and
// "1.0" in OpenMetrics. Matching every boundary <= t and taking max() of the
// cumulative bucket rates selects the highest boundary <= t whatever the
// layout and the spelling, so the rules do not hard-code the bucket layout.
//
// t must be a plain decimal such as "2" or "0.75". Label values are assumed to
// be formatted by Go's strconv 'g' (text) or with a ".0" suffix (OpenMetrics);
// exponent forms are only produced for values < 1e-4 and are matched as small.
func LeAtMost(t string) (string, error) {
	m := plainDecimal.FindStringSubmatch(t)
	if m == nil {
		return "", fmt.Errorf("threshold %q: want a plain decimal such as 2 or 0.75", t)
	}
	intPart, frac := m[1], strings.TrimPrefix(m[2], ".")

	var alts []string
	// Exponent forms: Go formats only values below 1e-4 (or >= 1e21) that way.
	alts = append(alts, `[0-9](\.[0-9]+)?e-[0-9]+`)
	// Integer part strictly below intPart, any fraction.
	for _, ip := range intLess(intPart) {
		alts = append(alts, ip+`(\.[0-9]+)?`)
	}
	// Integer part equal to intPart, fraction <= frac.
	alts = append(alts, regexp.QuoteMeta(intPart)+fracAtMost(frac))
	return strings.Join(alts, "|"), nil
}

// intLess returns regexps for the canonical integers (no leading zeros) < n.
func intLess(n string) []string {
	var out []string
	k := len(n)
	// Fewer digits.
	if k >= 2 {
		out = append(out, "0")
		if k == 2 {
			out = append(out, "[1-9]")
		} else {
			out = append(out, fmt.Sprintf("[1-9][0-9]{0,%d}", k-2))
		}
	}
	// Same number of digits: equal prefix, then a smaller digit.
	for i := 0; i < k; i++ {
		lo := byte('0')
		if i == 0 && k > 1 {
			lo = '1'
		}
		if n[i] <= lo {
			continue
		}
		r := n[:i] + digitRange(lo, n[i]-1)
		if rest := k - i - 1; rest > 0 {
			r += fmt.Sprintf("[0-9]{%d}", rest)
		}
		out = append(out, r)
	}
	return out
}

// fracAtMost returns a regexp for an optional fraction ".f" with 0.f <= 0.frac.
func fracAtMost(frac string) string {
	if frac == "" {
		return `(\.0*)?`
	}
	var alts []string
	for i := 0; i < len(frac); i++ {
		if frac[i] > '0' {
			alts = append(alts, frac[:i]+digitRange('0', frac[i]-1)+`[0-9]*`)
		}
	}
	// A proper prefix of frac is smaller (missing digits are zeros).
	for i := 1; i < len(frac); i++ {
		alts = append(alts, frac[:i])
	}
	alts = append(alts, frac+`0*`)
	return `(\.(` + strings.Join(alts, "|") + `))?`
}

func digitRange(lo, hi byte) string {
	if lo == hi {
		return string(lo)
	}
	return "[" + string(lo) + "-" + string(hi) + "]"
}
