package prober

import (
	"testing"
	"time"
)

// TestReqClock: each read is stamped by the kernel when its bytes were
// stamped, by the process's clock otherwise, never backwards and never
// before the start; the result names the clocks that stamped its bytes.
func TestReqClock(t *testing.T) {
	start := time.Now().Add(-50 * time.Millisecond) // kernel stamps are in the past
	at := func(d time.Duration) int64 { return int64(start.Sub(clockBase) + d) }
	const user, same = -1, -2
	for _, tc := range []struct {
		name    string
		arrived []int64         // per read; noData, noStamp or a kernel time
		want    []time.Duration // after the start; user: the process's clock; same: the previous read's
		clock   Clock
	}{
		{"kernel", []int64{at(1 * time.Millisecond), at(3 * time.Millisecond), noData}, []time.Duration{1 * time.Millisecond, 3 * time.Millisecond, user}, ClockKernel},
		{"before the start", []int64{at(-time.Millisecond)}, []time.Duration{0}, ClockKernel},
		{"not backwards", []int64{at(5 * time.Millisecond), at(2 * time.Millisecond)}, []time.Duration{5 * time.Millisecond, 5 * time.Millisecond}, ClockKernel},
		{"unstamped read", []int64{noStamp, at(time.Millisecond)}, []time.Duration{user, same}, ClockMixed},
		{"no stamps", []int64{noStamp, noData}, []time.Duration{user, user}, ClockUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &stampConn{}
			k := reqClock{c: c, floor: start}
			var prev time.Time
			for i, a := range tc.arrived {
				c.arrived.Store(a)
				before := time.Now()
				got := k.read()
				switch w := tc.want[i]; {
				case w == same:
					if !got.Equal(prev) {
						t.Errorf("read %d: %v after the previous read's time, want the same", i, got.Sub(prev))
					}
				case w == user:
					if got.Before(before) {
						t.Errorf("read %d: %v before the clock was read; want the process's clock", i, before.Sub(got))
					}
				case !got.Equal(start.Add(w)):
					t.Errorf("read %d: %v after the start, want %v", i, got.Sub(start), w)
				}
				prev = got
			}
			if got := k.clock(); got != tc.clock {
				t.Errorf("clock %q, want %q", got, tc.clock)
			}
		})
	}
	if got := (&reqClock{}).clock(); got != ClockUser {
		t.Errorf("no stamped connection: clock %q, want user", got)
	}
}
