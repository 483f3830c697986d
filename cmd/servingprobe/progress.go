package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/servingprobe/servingprobe/prober"
)

// termLine is stderr shared between log lines and a progress line redrawn
// in place. A log line first clears the progress line, so that it is not
// written onto it; the next redraw puts the progress line back below.
type termLine struct {
	mu      sync.Mutex
	w       io.Writer
	partial bool // a progress line without its newline is on screen
}

// clearLine is a carriage return and ANSI "erase to end of line".
const clearLine = "\r\x1b[K"

func (t *termLine) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.partial {
		if _, err := io.WriteString(t.w, clearLine); err != nil {
			return 0, err
		}
		t.partial = false
	}
	return t.w.Write(p)
}

// redraw replaces the progress line with s; final ends it with a newline.
func (t *termLine) redraw(s string, final bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprint(t.w, clearLine+s+end)
	t.partial = !final
}

// isTerminal reports whether w is a character device (a terminal), so
// that a redirected stderr gets no progress bar.
func isTerminal(w io.Writer) bool {
	if t, ok := w.(*termLine); ok {
		w = t.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressInterval is how often the bar is redrawn.
const progressInterval = 200 * time.Millisecond

// rateWindow is how far back the rate behind the ETA looks: long enough
// to smooth Poisson arrivals, short enough to follow a server that slows
// down, where an average since the start would be wild early on.
const rateWindow = 10 * time.Second

// rateMeter estimates a recent completion rate from (time, done) points.
type rateMeter struct {
	t    []time.Time
	done []int
}

// add records done at now and returns the rate over the last rateWindow
// (0 until two points a moment apart exist).
func (m *rateMeter) add(now time.Time, done int) float64 {
	m.t, m.done = append(m.t, now), append(m.done, done)
	k := 0
	for k < len(m.t)-2 && now.Sub(m.t[k+1]) >= rateWindow {
		k++
	}
	m.t, m.done = m.t[k:], m.done[k:]
	span := now.Sub(m.t[0]).Seconds()
	if span <= 0 {
		return 0
	}
	return float64(done-m.done[0]) / span
}

// startProgressBar draws done/total, failed, the recent rate and the ETA
// on one line of w until the returned stop is called. Nothing is drawn
// before the measured run has a total (warmup, preparation). With show
// false it draws nothing.
func startProgressBar(w io.Writer, p *prober.Progress, show bool, now func() time.Time) (stop func()) {
	if !show {
		return func() {}
	}
	tl, ok := w.(*termLine)
	if !ok {
		tl = &termLine{w: w}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		var m rateMeter
		for {
			final := false
			select {
			case <-done:
				final = true
			case <-t.C:
			}
			s := p.Snapshot()
			rate := m.add(now(), s.Done)
			if s.Total > 0 {
				tl.redraw(progressLine(s, rate), final)
			}
			if final {
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// progressLine is tqdm-like: " 12% 120/1000 failed 2 | 48.1 req/s | ETA 0:18",
// with the rate over the last few seconds. It is pure, for tests.
func progressLine(s prober.ProgressSnapshot, rate float64) string {
	eta := "?"
	if rate > 0 && s.Total >= s.Done {
		left := time.Duration(float64(s.Total-s.Done) / rate * float64(time.Second)).Round(time.Second)
		eta = fmt.Sprintf("%d:%02d", int(left.Minutes()), int(left.Seconds())%60)
	}
	pct := 0
	if s.Total > 0 {
		pct = s.Done * 100 / s.Total
	}
	return fmt.Sprintf("%3d%% %d/%d failed %d | %.1f req/s | ETA %s", pct, s.Done, s.Total, s.Failed, rate, eta)
}
