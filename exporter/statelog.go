package exporter

import (
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/prober"
)

// stateLog is an observer that logs, at info level, when a (target,
// module) starts failing and when it recovers: once per change, not per
// probe. Per-probe lines stay at the probe log level (debug), so an
// operator running at info still learns that a target went down, with
// its outcome and error, and when it came back.
type stateLog struct {
	logger log.Logger
	now    func() time.Time

	mu    sync.Mutex
	state map[[2]string]*probeState
}

type probeState struct {
	failing  bool
	since    time.Time // when the current state began
	failures int       // probes failed in a row
}

func newStateLog(logger log.Logger) *stateLog {
	return &stateLog{logger: logger, now: time.Now, state: map[[2]string]*probeState{}}
}

var _ prober.Observer = (*stateLog)(nil)

// Observe implements prober.Observer. A first success is not logged (the
// daemon's start line already says what it probes); a first failure is.
func (s *stateLog) Observe(r prober.Result) {
	key := [2]string{r.Target, r.Module}
	failing := r.Outcome != prober.OutcomeSuccess
	at := r.End
	if at.IsZero() {
		at = s.now()
	}
	s.mu.Lock()
	st, seen := s.state[key]
	if !seen {
		st = &probeState{since: at}
		s.state[key] = st
	}
	changed := st.failing != failing || (!seen && failing)
	var downFor time.Duration
	var failures int
	if failing {
		st.failures++
	} else {
		downFor, failures = at.Sub(st.since), st.failures
		st.failures = 0
	}
	if changed {
		st.failing, st.since = failing, at
	}
	s.mu.Unlock()
	if !changed {
		return
	}
	if failing {
		kv := []any{"msg", "Probes failing", "target", r.Target, "module", r.Module, "outcome", r.Outcome}
		if r.HTTPStatus != 0 {
			kv = append(kv, "http_status", r.HTTPStatus)
		}
		if r.Err != "" {
			kv = append(kv, "err", r.Err)
		}
		level.Info(s.logger).Log(kv...)
		return
	}
	level.Info(s.logger).Log("msg", "Probes recovered", "target", r.Target, "module", r.Module,
		"failed_probes", failures, "down_for", downFor.Round(time.Millisecond))
}

// forget drops the state of targets and modules a reload removed.
func (s *stateLog) forget(keep func(target, module string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.state {
		if !keep(k[0], k[1]) {
			delete(s.state, k)
		}
	}
}
