package bench

import "testing"

// TestGrowPrepends: indices below the base prepend with headroom, keep
// what was there, and the base moves with them.
func TestGrowPrepends(t *testing.T) {
	var s []int
	base := 0
	s = grow(s, &base, 10)
	s[10-base] = 7
	for i := 9; i >= -1000; i-- {
		s = grow(s, &base, i)
		s[i-base]++
	}
	s = grow(s, &base, 20)
	if s[10-base] != 7 || s[-1000-base] != 1 || s[20-base] != 0 || base > -1000 {
		t.Fatalf("base %d, s[10] %d, s[-1000] %d", base, s[10-base], s[-1000-base])
	}
	if len(s) > 4*1031 {
		t.Errorf("%d slots for 1,031 indices", len(s))
	}
}
