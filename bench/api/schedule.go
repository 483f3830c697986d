package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// CapacityTag is the tag of the bench windows a capacity check starts, so
// that the page and the API list them with the others and a restart finds
// the last one.
const CapacityTag = "capacity_check"

// Defaults of the capacity checks' timing (docs/slo-search.md).
const (
	// capacityFirstDelay and capacityFirstSpread place a target's first
	// check: shortly after start, once the daemon's probes have a first
	// answer, and spread by a per-target offset so that targets on one
	// machine are not searched at once.
	capacityFirstDelay  = time.Minute
	capacityFirstSpread = 4 * time.Minute
	// capacityRetry is how long a skipped check waits before it looks
	// again.
	capacityRetry = time.Minute
	// busyHeadroom is the headroom under which a check is skipped: a
	// search's points go up to the capacity on top of the server's own
	// traffic, so with more than half of it already served they would
	// push production traffic past the SLO.
	busyHeadroom = 0.5
	// headroomEvery is how often the server's counter is read, and
	// headroomWindow the span its rate is taken over: long enough that a
	// few requests more or less do not swing it, short enough to follow
	// traffic within a scrape or two.
	headroomEvery  = 15 * time.Second
	headroomWindow = time.Minute
)

// CapacityOptions tune the capacity checks; the zero value is the
// documented schedule. Tests shorten it.
type CapacityOptions struct {
	FirstDelay, FirstSpread, Retry time.Duration
	HeadroomEvery, HeadroomWindow  time.Duration
	// ReadServer reads target's own metrics endpoints; nil reads them
	// as a bench window does (the target's server_metrics, or its URL's
	// /metrics), with servermetrics' client.
	ReadServer func(ctx context.Context, t config.Target) (*servermetrics.Snapshot, error)
}

func (o CapacityOptions) withDefaults() CapacityOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.FirstDelay, capacityFirstDelay)
	def(&o.FirstSpread, capacityFirstSpread)
	def(&o.Retry, capacityRetry)
	def(&o.HeadroomEvery, headroomEvery)
	def(&o.HeadroomWindow, headroomWindow)
	if o.ReadServer == nil {
		o.ReadServer = readServer
	}
	return o
}

// capacityChecks runs the targets' capacity_check searches as bench
// windows and keeps their gauges: one loop for every target, so that
// their state needs no lock.
type capacityChecks struct {
	b      *Windows
	o      CapacityOptions
	logger log.Logger
	// startAt is when the loop started: first checks are placed from it.
	startAt time.Time
	targets map[string]*capacityState
	// checked is the config checksum whose checks were last validated.
	checked string
	invalid map[string]bool
}

// capacityState is one target's checks and headroom.
type capacityState struct {
	next    time.Time // when the next check is due
	pending string    // id of the check's window while it runs
	skipped string    // the reason of the last skip, logged once
	// capacity is the last check's answer (req/s); 0: none yet.
	capacity float64
	// reads are the server's counter readings within the window, oldest
	// first; noCounter says the server states none (logged once).
	reads     []counterRead
	noCounter bool
	// ratio is the headroom last exported; hasRatio says there is one.
	ratio    float64
	hasRatio bool
}

type counterRead struct {
	at    time.Time
	count float64
}

// ScheduleCapacityChecks starts the loop that runs every target's
// capacity_check (on the configuration as it is at each tick, so that a
// reload adds, changes and removes checks) until ctx ends or stop is
// called; stop returns once the loop has. A check's window is a window
// like any other: Close cancels it. Call it once, after Enable.
func (b *Windows) ScheduleCapacityChecks(ctx context.Context, o CapacityOptions) (stop func()) {
	c := &capacityChecks{b: b, o: o.withDefaults(), logger: b.logger, startAt: time.Now(),
		targets: map[string]*capacityState{}, invalid: map[string]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.loop(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

func (c *capacityChecks) loop(ctx context.Context) {
	t := time.NewTicker(c.o.HeadroomEvery)
	defer t.Stop()
	for {
		c.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick is one look at every target with a check.
func (c *capacityChecks) tick(ctx context.Context) {
	cfg := c.b.d.Config()
	if cfg.Checksum != c.checked || c.checked == "" {
		c.validate(cfg)
	}
	seen := map[string]bool{}
	for _, t := range cfg.Targets {
		if t.CapacityCheck == nil || c.invalid[t.Name] {
			continue
		}
		seen[t.Name] = true
		st, ok := c.targets[t.Name]
		if !ok {
			st = c.restore(t)
			c.targets[t.Name] = st
		}
		c.step(ctx, t, st)
	}
	for name := range c.targets {
		if !seen[name] {
			// A check removed by a reload: its gauges go with it.
			delete(c.targets, name)
			c.b.d.Metrics().ForgetCapacity(name)
		}
	}
}

// CapacityCheckProblem is a target's capacity_check that cannot run.
type CapacityCheckProblem struct {
	Target string
	Path   string // targets[i].capacity_check
	Why    string
}

func (p CapacityCheckProblem) String() string { return p.Path + ": " + p.Why }

// CapacityCheckProblems decodes each target's check window as POST would,
// so that a bad SLO, an objective the module cannot judge (valid>=P%
// without answer checks) or a limit it exceeds is found when the
// configuration loads, naming the check, rather than a skip every day.
// A daemon refuses such a file (ValidateCapacityChecks).
func CapacityCheckProblems(cfg *config.Config) []CapacityCheckProblem {
	var ps []CapacityCheckProblem
	for i, t := range cfg.Targets {
		if t.CapacityCheck == nil {
			continue
		}
		var why string
		if !cfg.Bench.Enabled {
			why = "bench windows are disabled (bench.enabled: false), and a check is one"
		} else if _, e := decodeRequest(bytes.NewReader(checkBody(t)), cfg); e != nil {
			// The window's sweep.slo is the check's slo.
			why = strings.ReplaceAll(e.msg, "sweep.slo: ", "slo: ")
		}
		if why != "" {
			ps = append(ps, CapacityCheckProblem{Target: t.Name, Path: fmt.Sprintf("targets[%d].capacity_check", i), Why: why})
		}
	}
	return ps
}

// ValidateCapacityChecks is CapacityCheckProblems as one error, for the
// daemon's Options.Validate: serve, a reload and check-config refuse a
// file with a check that cannot run.
func ValidateCapacityChecks(cfg *config.Config) error {
	var errs []error
	for _, p := range CapacityCheckProblems(cfg) {
		errs = append(errs, errors.New(p.String()))
	}
	return errors.Join(errs...)
}

// validate finds the checks that cannot run, once per configuration (a
// daemon built without ValidateCapacityChecks may load one).
func (c *capacityChecks) validate(cfg *config.Config) {
	c.checked, c.invalid = cfg.Checksum, map[string]bool{}
	for _, p := range CapacityCheckProblems(cfg) {
		c.invalid[p.Target] = true
		level.Error(c.logger).Log("msg", "Capacity check not scheduled", "target", p.Target, "path", p.Path, "err", p.Why)
	}
}

// checkBody is the bench window a target's check runs: an SLO search by
// request rate of its module, within the daemon's limits as any window.
func checkBody(t config.Target) []byte {
	cc := t.CapacityCheck
	body := map[string]any{
		"target": t.Name,
		"tag":    CapacityTag,
		"sweep": map[string]any{
			"slo":        cc.SLO,
			"slo_budget": cc.BudgetOrDefault().String(),
		},
	}
	if cc.Module != "" {
		body["module"] = cc.Module
	}
	b, _ := json.Marshal(body) // strings and maps only
	return b
}

// restore starts a target's state from its last stored check, so that a
// restart neither forgets the capacity nor searches again at once when
// the last check is recent.
func (c *capacityChecks) restore(t config.Target) *capacityState {
	st := &capacityState{next: c.startAt.Add(c.o.FirstDelay + firstOffset(t.Name, c.o.FirstSpread))}
	c.b.mu.Lock()
	views := c.b.listLocked()
	c.b.mu.Unlock()
	for _, v := range views { // newest first
		if v.Target != t.Name || v.Tag != CapacityTag || v.Ended == nil {
			continue
		}
		if capacity, lower, ok := checkCapacity(v); ok {
			st.capacity = capacity
			c.b.d.Metrics().CapacityChecked(t.Name, *v.Ended, capacity, lower)
			if due := nextCheck(t.CapacityCheck, *v.Ended); due.After(st.next) {
				st.next = due
			}
			break
		}
	}
	return st
}

// firstOffset spreads first checks over spread, by target name: the same
// target gets the same offset after every restart.
func firstOffset(name string, spread time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return time.Duration(h.Sum64() % uint64(spread))
}

// nextCheck is when the check after one that ended at last is due: Every
// later, or, with At, the first At (local time) after last + Every − 12h,
// so that a check that ran late falls back on its hour, and the first one,
// run at start, is followed by the next At at least half a day later.
func nextCheck(cc *config.CapacityCheck, last time.Time) time.Time {
	every := time.Duration(cc.Every)
	hour, minute, ok := cc.AtClock()
	if !ok {
		return last.Add(every)
	}
	from := last.Add(every - 12*time.Hour)
	y, m, d := from.Date()
	at := time.Date(y, m, d, hour, minute, 0, 0, from.Location())
	if !at.After(from) {
		at = time.Date(y, m, d+1, hour, minute, 0, 0, from.Location())
	}
	return at
}

// step advances one target: follows its running check, starts a due one,
// and reads the server's traffic for its headroom.
func (c *capacityChecks) step(ctx context.Context, t config.Target, st *capacityState) {
	m := c.b.d.Metrics()
	logger := log.With(c.logger, "target", t.Name)
	now := time.Now()
	if st.pending != "" {
		v, ok := c.view(st.pending)
		switch {
		case !ok: // forgotten: nothing to read
			st.pending, st.next = "", nextCheck(t.CapacityCheck, now)
		case v.Ended != nil:
			st.pending, st.next = "", nextCheck(t.CapacityCheck, *v.Ended)
			capacity, lower, has := checkCapacity(v)
			if has {
				st.capacity = capacity
				m.CapacityChecked(t.Name, *v.Ended, capacity, lower)
			}
			kv := []any{"msg", "Capacity check ended", "id", v.ID, "status", v.Status,
				"capacity_requests_per_second", capacity, "lower_bound", lower, "next", st.next.Format(time.RFC3339)}
			if lower {
				kv = append(kv, "bounded_by", v.Sweep.Search.BoundedBy)
			}
			level.Info(logger).Log(kv...)
		}
	}
	busyWindow := c.activeWindow(t.Name)
	if st.pending == "" && !now.Before(st.next) {
		why := ""
		if busyWindow != "" {
			why = "another bench window is running on the target (" + busyWindow + ")"
		}
		var snap *servermetrics.Snapshot
		if why == "" && st.hasRatio && st.ratio < busyHeadroom {
			why = fmt.Sprintf("the server serves %.0f%% of its last capacity (headroom under %.0f%%)", 100*(1-st.ratio), 100*busyHeadroom)
		}
		if why == "" {
			snap = c.read(ctx, t)
			if snap != nil {
				if w := servermetrics.GaugeValues(snap)[servermetrics.Waiting]; w > 0 {
					why = fmt.Sprintf("the server's queue holds %v waiting requests", w)
				}
			}
		}
		if why == "" {
			id, err := c.start(t)
			if err != nil {
				why = err.Error()
			} else {
				st.pending, st.skipped = id, ""
				busyWindow = id
				level.Info(logger).Log("msg", "Capacity check started", "id", id, "slo", t.CapacityCheck.SLO)
			}
		}
		if why != "" {
			st.next = now.Add(c.o.Retry)
			if why != st.skipped {
				level.Warn(logger).Log("msg", "Capacity check skipped", "reason", why, "retry_seconds", c.o.Retry.Seconds())
			}
			st.skipped = why
		}
	}
	c.headroom(ctx, t, st, busyWindow != "", logger)
}

// headroom reads the server's completed-request counter and sets the
// target's headroom ratio from its rate over the window. While a bench
// window runs on the target, the server's traffic is mostly ours: the
// gauge goes, and the window starts anew after it.
func (c *capacityChecks) headroom(ctx context.Context, t config.Target, st *capacityState, windowRuns bool, logger log.Logger) {
	m := c.b.d.Metrics()
	set := func(ratio float64, ok bool) {
		st.ratio, st.hasRatio = ratio, ok
		m.SetHeadroom(t.Name, ratio, ok)
	}
	if windowRuns || st.capacity <= 0 {
		st.reads = st.reads[:0]
		set(0, false)
		return
	}
	snap := c.read(ctx, t)
	if snap == nil {
		st.reads = st.reads[:0]
		set(0, false)
		return
	}
	count, _, ok := servermetrics.CompletedRequests(snap)
	if !ok {
		if !st.noCounter {
			level.Warn(logger).Log("msg", "No capacity headroom: the server states no completed-request counter")
		}
		st.noCounter = true
		set(0, false)
		return
	}
	st.noCounter = false
	now := time.Now()
	if n := len(st.reads); n > 0 && count < st.reads[n-1].count {
		st.reads = st.reads[:0] // the server restarted: its counter too
	}
	st.reads = append(st.reads, counterRead{now, count})
	// Keep the newest read at least the window old, and nothing older.
	for len(st.reads) > 2 && now.Sub(st.reads[1].at) >= c.o.HeadroomWindow {
		st.reads = st.reads[1:]
	}
	rate, ok := counterRate(st.reads, c.o.HeadroomWindow)
	if !ok {
		return // not a window yet: the gauge keeps its last value, if any
	}
	set(headroomRatio(rate, st.capacity), true)
}

// counterRate is the rate between the oldest and the newest read, once
// they span at least window; false before.
func counterRate(reads []counterRead, window time.Duration) (float64, bool) {
	if len(reads) < 2 {
		return 0, false
	}
	first, last := reads[0], reads[len(reads)-1]
	span := last.at.Sub(first.at)
	if span < window {
		return 0, false
	}
	return (last.count - first.count) / span.Seconds(), true
}

// headroomRatio is 1 − rate/capacity: 1 for an idle server, 0 at the
// capacity, below 0 past it.
func headroomRatio(rate, capacity float64) float64 { return 1 - rate/capacity }

// checkCapacity is the capacity a check's stored window gives: its
// search's answer, as the bench gauges map it (searchCapacity), and
// whether that is only a lower bound, by the answer's one rule
// (bench.SearchAnswer.LowerBound), which the bench gauges read too. A
// window that gave no capacity (cancelled, failed, no stable answer,
// nothing held) gives none.
func checkCapacity(v View) (capacity float64, lowerBound, ok bool) {
	if v.Status != exporter.BenchSucceeded || v.Sweep == nil || v.Sweep.Search == nil {
		return 0, false, false
	}
	a := v.Sweep.Search
	by, value := searchCapacity(a)
	if by != bench.ByRequestRate || !(value > 0) {
		return 0, false, false
	}
	return value, a.LowerBound(), true
}

// start starts the check's window through POST /api/v1/benches' own
// handler, so that it is decoded, held to the limits and refused (a
// window already running, bench.max_concurrent_runs) exactly as one an
// HTTP caller starts.
func (c *capacityChecks) start(t config.Target) (string, error) {
	rec := &recorder{header: http.Header{}}
	req, err := http.NewRequest(http.MethodPost, "/api/v1/benches", bytes.NewReader(checkBody(t)))
	if err != nil {
		return "", err
	}
	c.b.handleCreate(rec, req)
	var out struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(rec.body.Bytes(), &out)
	if rec.status != http.StatusAccepted {
		if out.Error == "" {
			out.Error = strings.TrimSpace(rec.body.String())
		}
		return "", fmt.Errorf("the bench window was refused (%d): %s", rec.status, out.Error)
	}
	return out.ID, nil
}

// recorder is the ResponseWriter start hands to the handler.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(status int) { r.status = status }

// view is the window id as listed, false when it is not (forgotten).
func (c *capacityChecks) view(id string) (View, bool) {
	c.b.mu.Lock()
	r, ok := c.b.runs[id]
	c.b.mu.Unlock()
	if !ok {
		return View{}, false
	}
	return r.snapshot(), true
}

// activeWindow is the id of the window queued or running on target, "".
func (c *capacityChecks) activeWindow(target string) string {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return c.b.active[target]
}

// read is one read of the target's own metrics; nil when none answered.
func (c *capacityChecks) read(ctx context.Context, t config.Target) *servermetrics.Snapshot {
	rctx, cancel := context.WithTimeout(ctx, servermetrics.DefaultTimeout)
	defer cancel()
	s, err := c.o.ReadServer(rctx, t)
	if err != nil {
		return nil
	}
	return s
}

// readServer reads the first of the target's metrics endpoints that
// answers, as a bench window on it would read them.
func readServer(ctx context.Context, t config.Target) (*servermetrics.Snapshot, error) {
	urls := runner.ServerMetricsURLs(t)
	var last error = fmt.Errorf("target %q reads no server metrics (no_server_metrics)", t.Name)
	for _, u := range urls {
		s, err := servermetrics.Fetch(ctx, nil, u, 0)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}
