package exporter

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/servingprobe/servingprobe/prober"
)

// healthWindow is the window of the landing page's success ratio: the
// shortest window of the burn-rate rules in dashboards/rules.yaml, so
// that the page and the fastest alert read the same ratio of the same
// counter.
const healthWindow = 5 * time.Minute

// maxHealthSnaps bounds the counter readings kept per target and module:
// a probe every second fills 300 of them in healthWindow. Beyond it the
// oldest go, and the page states the shorter window it then covers.
const maxHealthSnaps = 1024

// healthTracker gives the landing page its success ratio from
// servingprobe_requests_total{mode="probe"}, the counter Prometheus
// scrapes: the ratio is the counters' increase over a stated window, as
// `increase()` computes it from two scrapes at the window's ends (without
// its extrapolation), and never a count of the kept history, whose
// failures are kept apart and longer than its successes.
//
// The counter only changes when a probe's result is observed, so reading
// it right after each observation (the tracker runs after the metrics
// observer) gives its value at any moment: the value of the latest reading
// at or before it. It is safe for concurrent use.
type healthTracker struct {
	requests *prometheus.CounterVec
	now      func() time.Time
	start    time.Time // every counter is 0 here

	mu    sync.Mutex
	snaps map[healthKey]*healthSeries
}

type healthKey struct{ target, module string }

// healthSnap is one reading of a target and module's counters: ok
// successes of n requests that count (every outcome but canceled, as in
// the burn-rate rules).
type healthSnap struct {
	t     time.Time
	ok, n float64
}

type healthSeries struct {
	snaps []healthSnap // oldest first
	// trimmed is set once a reading went for the count bound, not for
	// age: the readings no longer reach back to the window's start.
	trimmed bool
}

// healthFigures is a target and module's success over [Since, Until].
type healthFigures struct {
	OK, N        int
	Since, Until time.Time
	// Full says whether the figures span the whole healthWindow (the
	// daemon or the target is older than it).
	Full bool
}

func newHealthTracker(requests *prometheus.CounterVec, now func() time.Time) *healthTracker {
	if now == nil {
		now = time.Now
	}
	return &healthTracker{requests: requests, now: now, start: now(), snaps: map[healthKey]*healthSeries{}}
}

var _ prober.Observer = (*healthTracker)(nil)

// Observe reads the result's target and module's counters, which the
// metrics observer has just counted it in.
func (h *healthTracker) Observe(r prober.Result) {
	k := healthKey{r.Target, r.Module}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	ok, n := h.read(k)
	s := h.snaps[k]
	if s == nil {
		s = &healthSeries{}
		h.snaps[k] = s
	}
	s.snaps = append(s.snaps, healthSnap{t: now, ok: ok, n: n})
	// Keep the newest reading at or before the window's start, the
	// counters' value there, and every later one.
	cut := now.Add(-healthWindow)
	i := 0
	for i+1 < len(s.snaps) && !s.snaps[i+1].t.After(cut) {
		i++
	}
	if over := len(s.snaps) - i - maxHealthSnaps; over > 0 {
		i += over
		s.trimmed = true
	}
	if i > 0 {
		s.snaps = append(s.snaps[:0], s.snaps[i:]...)
	}
}

// forget drops the readings of the targets and modules keep refuses
// (removed by a reload, their series deleted).
func (h *healthTracker) forget(keep func(target, module string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.snaps {
		if !keep(k.target, k.module) {
			delete(h.snaps, k)
		}
	}
}

// read sums the probe counters of target and module over models; h.mu
// is held.
func (h *healthTracker) read(k healthKey) (ok, n float64) {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		h.requests.Collect(ch)
		close(ch)
	}()
	var m dto.Metric
	for c := range ch {
		m.Reset()
		if c.Write(&m) != nil {
			continue
		}
		var target, module, mode, outcome string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case labelTarget:
				target = l.GetValue()
			case labelModule:
				module = l.GetValue()
			case labelMode:
				mode = l.GetValue()
			case labelOutcome:
				outcome = l.GetValue()
			}
		}
		if target != k.target || module != k.module || mode != string(ModeProbe) || outcome == string(prober.OutcomeCanceled) {
			continue
		}
		v := m.GetCounter().GetValue()
		n += v
		if outcome == string(prober.OutcomeSuccess) {
			ok += v
		}
	}
	return ok, n
}

// figures is the increase of target and module's counters over the last
// healthWindow, or over the time since the daemon started or the readings
// reach back to when that is shorter. A counter that went down (a reload
// deleted its series) counts from 0 again, as increase() does on a reset.
func (h *healthTracker) figures(target, module string) healthFigures {
	k := healthKey{target, module}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	ok, n := h.read(k)
	cut := now.Add(-healthWindow)
	f := healthFigures{Until: now, Since: cut, Full: true}
	base := healthSnap{t: h.start}
	var later []healthSnap
	if s := h.snaps[k]; s != nil && len(s.snaps) > 0 {
		i := 0
		for i < len(s.snaps) && !s.snaps[i].t.After(cut) {
			i++
		}
		switch {
		case i > 0:
			base = s.snaps[i-1]
		case s.trimmed:
			base = s.snaps[0]
			i = 1
		}
		later = s.snaps[i:]
	}
	if base.t.After(cut) {
		f.Since, f.Full = base.t, false
	}
	prev := base
	var dok, dn float64
	for _, s := range append(later, healthSnap{t: now, ok: ok, n: n}) {
		if s.n < prev.n || s.ok < prev.ok {
			dok, dn = dok+s.ok, dn+s.n
		} else {
			dok, dn = dok+s.ok-prev.ok, dn+s.n-prev.n
		}
		prev = s
	}
	f.OK, f.N = int(dok), int(dn)
	return f
}
