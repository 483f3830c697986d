package pyfmt

import (
	"math"
	"strconv"
	"strings"
)

// Float formats f as Python's repr(float) does, which is what json.dumps
// and str.format with no type write: the shortest digits that round-trip,
// in fixed notation with at least one decimal when the decimal exponent is
// in [-4, 16), else d.ddde+XX. Non-finite values are inf, -inf and nan.
func Float(f float64) string { return string(AppendFloat(nil, f)) }

// AppendFloat appends Float(f) to b.
func AppendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	if e[0] == '-' {
		b, e = append(b, '-'), e[1:]
	}
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
		b = append(b, digits[0])
		if len(digits) > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if exp < 0 {
			b, exp = append(b, '-'), -exp
		} else {
			b = append(b, '+')
		}
		if exp < 10 {
			b = append(b, '0')
		}
		return strconv.AppendInt(b, int64(exp), 10)
	}
	switch point := exp + 1; {
	case point <= 0:
		b = append(b, "0."...)
		b = append(b, strings.Repeat("0", -point)...)
		b = append(b, digits...)
	case point >= len(digits):
		b = append(b, digits...)
		b = append(b, strings.Repeat("0", point-len(digits))...)
		b = append(b, ".0"...)
	default:
		b = append(b, digits[:point]...)
		b = append(b, '.')
		b = append(b, digits[point:]...)
	}
	return b
}

// Fixed2 is Python's format(f, ".2f"): Go rounds the exact binary value
// half to even as Python does, but spells infinities differently.
func Fixed2(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return Float(f)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}
