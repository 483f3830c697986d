package main

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servingprobe/servingprobe/prober"
)

func TestProgressLine(t *testing.T) {
	got := progressLine(prober.ProgressSnapshot{Total: 100, Done: 50, Failed: 2}, 5)
	if want := " 50% 50/100 failed 2 | 5.0 req/s | ETA 0:10"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	if got := progressLine(prober.ProgressSnapshot{Total: 10}, 0); !strings.Contains(got, "ETA ?") {
		t.Errorf("progressLine with no rate = %q, want ETA ?", got)
	}
}

// TestRateMeter: the ETA follows the recent rate, not the average since
// the start, which a fast start or a slowdown makes wild.
func TestRateMeter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var m rateMeter
	if r := m.add(t0, 0); r != 0 {
		t.Errorf("rate of one point = %v, want 0", r)
	}
	m.add(t0.Add(10*time.Second), 100) // 10 req/s at first
	for s := 11; s <= 30; s++ {        // then 1 req/s
		m.add(t0.Add(time.Duration(s)*time.Second), 100+s-10)
	}
	if r := m.add(t0.Add(31*time.Second), 121); r < 0.9 || r > 1.2 {
		t.Errorf("recent rate = %.2f req/s, want about 1 (the average since the start is 3.9)", r)
	}
}

// TestTermLine: a log line clears the progress line instead of landing on
// it, and the progress line is redrawn in place.
func TestTermLine(t *testing.T) {
	var b bytes.Buffer
	tl := &termLine{w: &b}
	tl.redraw(" 10% 1/10", false)
	tl.redraw(" 20% 2/10", false)
	if _, err := tl.Write([]byte("level=info msg=\"Benchmark started\"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Write([]byte("second line\n")); err != nil {
		t.Fatal(err)
	}
	tl.redraw("100% 10/10", true)
	want := clearLine + " 10% 1/10" + clearLine + " 20% 2/10" + clearLine + "level=info msg=\"Benchmark started\"\nsecond line\n" + clearLine + "100% 10/10\n"
	if got := b.String(); got != want {
		t.Errorf("terminal bytes\n got %q\nwant %q", got, want)
	}
}

// TestProgressBarWaitsForTotal: during warmup (no total yet) nothing is
// drawn, rather than "0% 0/0 ... ETA ?". The bar runs in a synctest bubble:
// the sleep advances the bubble's clock past three redraw ticks, and
// synctest.Wait returns only once the bar's goroutine has handled them and
// is blocked again, so "nothing drawn" is checked after the ticks, not
// after a guess at how long they take.
func TestProgressBarWaitsForTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b bytes.Buffer
		tl := &termLine{w: &b}
		p := &prober.Progress{}
		stop := startProgressBar(tl, p, true, time.Now)
		time.Sleep(3 * progressInterval)
		synctest.Wait()
		stop()
		if b.Len() != 0 {
			t.Errorf("drew %q before the run had a total", b.String())
		}
	})
}
