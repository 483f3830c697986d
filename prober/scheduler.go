package prober

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// ProbeFunc runs one probe and returns its Result. It must return promptly
// once ctx is done; logger is the probe's own logger (--log.prober).
type ProbeFunc func(ctx context.Context, logger log.Logger) Result

// Observer receives every finished Result. It is implemented by the
// exporter, which decides the metric mode; it must be safe for concurrent use.
type Observer interface{ Observe(Result) }

// LoopObserver receives the scheduler's own health signals. It must be safe
// for concurrent use.
type LoopObserver interface {
	// ObserveLag reports how late a probe started: actual start minus the
	// planned tick.
	ObserveLag(target, module string, lag time.Duration)
	// ObserveSkip reports a tick that found MaxInFlight probes still running.
	ObserveSkip(target, module string)
}

// Job is one continuous probe loop: one (target, module) pair.
type Job struct {
	Target, Module string
	Interval       time.Duration
	// Timeout bounds one probe, from its start.
	Timeout time.Duration
	// MaxInFlight caps concurrent probes of this job; values below 1 mean 1.
	MaxInFlight int
	// Version identifies the configuration the job was built from: an
	// Update that carries the same key with another Version restarts the loop.
	Version string
	Probe   ProbeFunc
}

// JobKey identifies a Job.
type JobKey struct{ Target, Module string }

// Key returns the job's key.
func (j Job) Key() JobKey { return JobKey{j.Target, j.Module} }

// SchedulerOptions configures a Scheduler.
type SchedulerOptions struct {
	// Observers each receive every finished Result, in order (the
	// daemon's: metrics, then the state-change log).
	Observers []Observer
	Loops     LoopObserver
	// Logger receives lifecycle and per-probe debug lines; ProbeLogger is
	// handed to each ProbeFunc. Nil means discard.
	Logger, ProbeLogger log.Logger
	// Seed spreads the loops' start offsets. The offset of a job is a hash
	// of (Seed, target, module) modulo its interval, so a given seed always
	// gives the same offsets: restarts keep the spread, and tests can
	// predict exact start times.
	Seed uint64
}

// Scheduler runs one loop per Job. Each loop waits for its start offset,
// then probes every Interval on a ticker; a tick that finds MaxInFlight
// probes still running is skipped and reported, never queued, so a slow
// target cannot build a backlog.
//
// Results of probes that were cancelled because their loop stopped
// (shutdown, or a reload that changed or removed the job) are dropped, with
// a debug line: they say nothing about the target.
type Scheduler struct {
	o       SchedulerOptions
	updates chan update
	done    chan struct{} // closed when Run returns
	started chan struct{} // closed when Run starts
	once    sync.Once
}

type update struct {
	jobs []Job
	ack  chan struct{}
}

// ErrSchedulerStopped is returned by Update once Run has returned.
var ErrSchedulerStopped = errors.New("scheduler stopped")

// NewScheduler returns a Scheduler; start it with Run.
func NewScheduler(o SchedulerOptions) *Scheduler {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.ProbeLogger == nil {
		o.ProbeLogger = log.NewNopLogger()
	}
	return &Scheduler{
		o:       o,
		updates: make(chan update),
		done:    make(chan struct{}),
		started: make(chan struct{}),
	}
}

// Update replaces the set of jobs: loops whose key disappeared or whose
// Version changed are stopped (their in-flight probes cancelled) and have
// exited when Update returns; new and changed jobs are started. It blocks
// until Run has applied the update, ctx is done, or Run has returned.
func (s *Scheduler) Update(ctx context.Context, jobs []Job) error {
	u := update{jobs: jobs, ack: make(chan struct{})}
	select {
	case s.updates <- u:
	case <-s.done:
		return ErrSchedulerStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-u.ack:
		return nil
	case <-s.done:
		return ErrSchedulerStopped
	}
}

// Run runs the loops until ctx is done, then cancels every probe in flight
// and returns once every goroutine it started has exited. Run may be called
// once.
func (s *Scheduler) Run(ctx context.Context) error {
	ran := false
	s.once.Do(func() { ran = true })
	if !ran {
		return errors.New("scheduler: Run called twice")
	}
	defer close(s.done)
	close(s.started)

	loops := map[JobKey]*loopHandle{}
	defer func() {
		for _, l := range loops {
			l.cancel()
		}
		for _, l := range loops {
			<-l.done
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u := <-s.updates:
			s.reconcile(ctx, loops, u.jobs)
			close(u.ack)
		}
	}
}

type loopHandle struct {
	version string
	cancel  context.CancelFunc
	done    chan struct{}
}

func (s *Scheduler) reconcile(ctx context.Context, loops map[JobKey]*loopHandle, jobs []Job) {
	want := make(map[JobKey]Job, len(jobs))
	for _, j := range jobs {
		want[j.Key()] = j
	}
	// Stop first, all at once, then wait: stopping is bounded by how fast
	// the probes honour cancellation, not by the number of loops.
	var stopping []*loopHandle
	for k, l := range loops {
		if j, ok := want[k]; ok && j.Version == l.version {
			continue
		}
		l.cancel()
		stopping = append(stopping, l)
		delete(loops, k)
	}
	for _, l := range stopping {
		<-l.done
	}
	for k, j := range want {
		if _, ok := loops[k]; ok {
			continue
		}
		lctx, cancel := context.WithCancel(ctx)
		h := &loopHandle{version: j.Version, cancel: cancel, done: make(chan struct{})}
		loops[k] = h
		go func() {
			defer close(h.done)
			s.loop(lctx, j)
		}()
	}
}

// Offset returns the start offset of a job with this key and interval:
// a deterministic hash of the seed and the key, in [0, interval).
func (s *Scheduler) Offset(k JobKey, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], s.o.Seed)
	h.Write(b[:])
	h.Write([]byte(k.Target))
	h.Write([]byte{0})
	h.Write([]byte(k.Module))
	return time.Duration(h.Sum64() % uint64(interval))
}

func (s *Scheduler) loop(ctx context.Context, j Job) {
	logger := log.With(s.o.Logger, "target", j.Target, "module", j.Module)
	probeLogger := log.With(s.o.ProbeLogger, "target", j.Target, "module", j.Module)
	maxInFlight := max(j.MaxInFlight, 1)
	interval := j.Interval
	if interval <= 0 {
		// Validate rejects this; a zero interval would spin.
		level.Error(logger).Log("msg", "Probe loop not started", "err", "interval must be positive")
		return
	}
	offset := s.Offset(j.Key(), interval)
	level.Debug(logger).Log("msg", "Probe loop starting", "interval_seconds", interval.Seconds(), "offset_seconds", offset.Seconds())

	first := time.NewTimer(offset)
	defer first.Stop()
	var planned time.Time
	select {
	case <-ctx.Done():
		return
	case planned = <-first.C:
	}

	ticker := time.NewTicker(interval)
	defer ticker.Stop()

	var wg sync.WaitGroup
	defer wg.Wait() // runs before ticker.Stop: every probe has returned when loop does
	slots := make(chan struct{}, maxInFlight)
	for {
		select {
		case slots <- struct{}{}:
			planned := planned
			wg.Go(func() {
				defer func() { <-slots }()
				s.probeOnce(ctx, j, planned, logger, probeLogger)
			})
		default:
			if s.o.Loops != nil {
				s.o.Loops.ObserveSkip(j.Target, j.Module)
			}
			level.Debug(logger).Log("msg", "Probe skipped", "reason", "max in flight reached", "max_in_flight", maxInFlight)
		}
		select {
		case <-ctx.Done():
			return
		case planned = <-ticker.C:
			// A timer channel delivers the time the tick was due, not the
			// time it was received, so this is the planned time.
		}
	}
}

func (s *Scheduler) probeOnce(ctx context.Context, j Job, planned time.Time, logger, probeLogger log.Logger) {
	start := time.Now()
	if s.o.Loops != nil {
		s.o.Loops.ObserveLag(j.Target, j.Module, max(start.Sub(planned), 0))
	}
	pctx, cancel := context.WithTimeout(ctx, j.Timeout)
	r := j.Probe(pctx, probeLogger)
	cancel()
	if ctx.Err() != nil {
		level.Debug(logger).Log("msg", "Probe result dropped", "reason", "loop stopped", "outcome", r.Outcome)
		return
	}
	// A conversation probe's earlier turns are requests of their own:
	// each is observed, in order, before the last.
	before := r.Before
	r.Before = nil
	for _, e := range append(before, r) {
		if e.Target == "" {
			e.Target = j.Target
		}
		if e.Module == "" {
			e.Module = j.Module
		}
		if e.Scheduled.IsZero() {
			e.Scheduled = planned
		}
		// The probe logs its own one line per request (the ProbeFunc
		// knows its requests); the scheduler adds none.
		for _, o := range s.o.Observers {
			o.Observe(e)
		}
	}
}
