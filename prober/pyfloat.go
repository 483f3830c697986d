package prober

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// PyFloat formats f as Python's repr(float) does, which is what json.dumps
// and str.format with no type write: the shortest digits that round-trip,
// in fixed notation with at least one decimal when the decimal exponent is
// in [-4, 16), else d.ddde+XX. Non-finite values are inf, -inf and nan.
// It is servingprobe's one formatter of Python floats: request bodies,
// the bench table and JSONL, and bench_serving's file names use it.
func PyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
	}
	var s string
	switch point := exp + 1; {
	case point <= 0:
		s = "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		s = digits + strings.Repeat("0", point-len(digits)) + ".0"
	default:
		s = digits[:point] + "." + digits[point:]
	}
	return sign + s
}
