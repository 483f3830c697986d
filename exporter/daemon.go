package exporter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// ProbeBuilder builds the probe of one (target, module); see
// prober.ProbeBuilder. prober.NewProbeBuilder is the one servingprobe uses.
type ProbeBuilder = prober.ProbeBuilder

// Options configure a Daemon.
type Options struct {
	// ConfigFile is read by New and by every reload.
	ConfigFile string
	// Logger gets lifecycle lines; ProbeLogger gets per-probe lines (the
	// caller applies --log.prober to it). Nil means discard; nil
	// ProbeLogger means Logger.
	Logger, ProbeLogger log.Logger
	// DisableExporterMetrics leaves out the Go and process collectors.
	DisableExporterMetrics bool
	// BuildProbe builds the probe of one (target, module).
	BuildProbe ProbeBuilder
	// Seed spreads the probe loops' start offsets (see prober.SchedulerOptions).
	Seed uint64
	// HistorySize is how many results, and separately failures, the
	// history keeps. Default 100.
	HistorySize int
	// MaxConcurrentProbes caps /probe requests running at once; more get
	// 429, so that /probe cannot be turned into a load generator. Default 8.
	MaxConcurrentProbes int
	// Validate, when set, refuses a configuration for what the caller
	// runs beside the probes (the command passes the bench windows'
	// capacity checks, which this package may not link): New, Reload and
	// CheckConfig then refuse the same files.
	Validate func(*config.Config) error
}

// Daemon is the continuous prober with its metrics, history and HTTP
// surface. Its methods are safe for concurrent use.
type Daemon struct {
	o       Options
	logger  log.Logger
	reg     *prometheus.Registry
	metrics *Metrics
	history *History
	health  *healthTracker
	sched   *prober.Scheduler
	// stateLog logs at info when a target's probes start failing and when
	// they recover.
	stateLog *stateLog

	// reloadMu serialises loads and the scheduler updates that follow.
	reloadMu sync.Mutex
	running  bool // Run has applied the jobs; guarded by reloadMu
	state    atomic.Pointer[state]
	ready    atomic.Bool

	probeSlots chan struct{}
	mux        *http.ServeMux
	classes    map[string]routeClass // by mux pattern; see route
	handler    http.Handler          // mux behind loadGate
	links      []link
	benches    func() []BenchWindow
}

// state is one loaded configuration and everything derived from it.
type state struct {
	cfg  *config.Config
	red  *config.Redactor
	jobs map[prober.JobKey]job
}

// job is a scheduler job with the config it was built from, so that a
// reload can tell whether it changed.
type job struct {
	prober.Job
	target config.Target
	module config.Module
}

// New loads the config file and prepares the daemon; probing starts with
// Run. A config that fails to load is an error here: there is no old
// config to fall back to.
func New(o Options) (*Daemon, error) {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.ProbeLogger == nil {
		o.ProbeLogger = o.Logger
	}
	if o.HistorySize <= 0 {
		o.HistorySize = 100
	}
	if o.MaxConcurrentProbes <= 0 {
		o.MaxConcurrentProbes = 8
	}
	if o.BuildProbe == nil {
		return nil, errors.New("exporter: no probe builder")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(versioncollector.NewCollector(namespace))
	if !o.DisableExporterMetrics {
		reg.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}
	d := &Daemon{
		o:          o,
		logger:     o.Logger,
		reg:        reg,
		metrics:    NewMetrics(reg),
		history:    NewHistory(o.HistorySize),
		probeSlots: make(chan struct{}, o.MaxConcurrentProbes),
		stateLog:   newStateLog(o.Logger),
	}
	d.health = newHealthTracker(d.metrics.requests, nil)
	d.sched = prober.NewScheduler(prober.SchedulerOptions{
		// The health tracker reads the counters the metrics observer has
		// just counted a result in: it comes after it.
		Observers:   []prober.Observer{d.metrics.Observer(ModeProbe), d.health, d.stateLog},
		Loops:       d.metrics,
		Logger:      o.Logger,
		ProbeLogger: o.ProbeLogger,
		Seed:        o.Seed,
	})
	cfg, err := prober.ConfigChecks.Load(o.ConfigFile)
	if err != nil {
		return nil, err
	}
	st, err := d.prepare(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("config file %q: %w", o.ConfigFile, err)
	}
	d.state.Store(st)
	d.metrics.SetTargets(targetSeries(cfg))
	d.metrics.ReloadSucceeded(time.Now())
	d.routes()
	return d, nil
}

// Logger is the daemon's lifecycle logger.
func (d *Daemon) Logger() log.Logger { return d.logger }

// Redactor redacts the secrets of the config in force.
func (d *Daemon) Redactor() *config.Redactor { return d.state.Load().red }

// Registry is the daemon's registry, served at /metrics.
func (d *Daemon) Registry() *prometheus.Registry { return d.reg }

// Metrics returns the daemon's metrics, for bench windows to report into.
func (d *Daemon) Metrics() *Metrics { return d.metrics }

// History returns the result history.
func (d *Daemon) History() *History { return d.history }

// Config returns the running config. Callers must not modify it.
func (d *Daemon) Config() *config.Config { return d.state.Load().cfg }

// Run starts the probe loops and blocks until ctx is done and every loop
// and probe has exited.
func (d *Daemon) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- d.sched.Run(ctx) }()

	d.reloadMu.Lock()
	err := d.sched.Update(ctx, jobList(d.state.Load()))
	d.running = err == nil
	d.reloadMu.Unlock()
	if err == nil {
		d.ready.Store(true)
		st := d.state.Load()
		level.Info(d.logger).Log("msg", "Probing started", "targets", len(st.cfg.Targets), "loops", len(st.jobs))
	}
	err = <-errc
	d.ready.Store(false)
	return err
}

// ErrUnchanged is returned by Reload when the file's checksum equals the
// running config's; nothing was changed.
var ErrUnchanged = errors.New("config unchanged")

// Reload loads the config file again. The whole new config is loaded,
// validated and every probe built before anything changes; on any error
// the running config stays and the reload gauge goes to 0. On success, the
// removed targets' series are deleted and the changed loops restarted.
func (d *Daemon) Reload(ctx context.Context) (err error) {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	defer func() {
		switch {
		case errors.Is(err, ErrUnchanged):
			// The running config is what the file says.
			d.metrics.reloadSuccess.Set(1)
			level.Info(d.logger).Log("msg", "Config unchanged, reload skipped", "file", d.o.ConfigFile)
		case err != nil:
			d.metrics.ReloadFailed()
			level.Error(d.logger).Log("msg", "Config reload failed, keeping the running config", "file", d.o.ConfigFile, "err", err)
		default:
			d.metrics.ReloadSucceeded(time.Now())
		}
	}()
	old := d.state.Load()
	cfg, err := prober.ConfigChecks.Load(d.o.ConfigFile)
	if err != nil {
		return err
	}
	if cfg.Checksum != "" && cfg.Checksum == old.cfg.Checksum {
		return ErrUnchanged
	}
	st, err := d.prepare(cfg, old)
	if err != nil {
		return fmt.Errorf("config file %q: %w", d.o.ConfigFile, err)
	}
	d.state.Store(st)
	// Series first: from here on, results of removed targets are dropped,
	// so the loops being stopped below cannot re-create deleted series.
	d.metrics.SetTargets(targetSeries(cfg))
	configured := func(target, module string) bool {
		_, ok := st.jobs[prober.JobKey{Target: target, Module: module}]
		return ok
	}
	d.stateLog.forget(configured)
	d.health.forget(configured)
	if d.running {
		if err := d.sched.Update(ctx, jobList(st)); err != nil {
			return fmt.Errorf("apply config: %w", err)
		}
	}
	level.Info(d.logger).Log("msg", "Config reloaded", "file", d.o.ConfigFile, "targets", len(cfg.Targets), "loops", len(st.jobs))
	return nil
}

// CheckConfig loads a config file, runs validate (Options.Validate) and
// builds every probe in it with build, exactly as New and Reload do,
// without sending anything: check-config and serve accept and refuse the
// same files (a module's tokenizer or dataset file that cannot be loaded
// fails both).
func CheckConfig(path string, build ProbeBuilder, validate func(*config.Config) error) (*config.Config, error) {
	cfg, err := prober.ConfigChecks.Load(path)
	if err != nil {
		return nil, err
	}
	d := &Daemon{o: Options{BuildProbe: build, Validate: validate}}
	if _, err := d.prepare(cfg, nil); err != nil {
		return nil, fmt.Errorf("config file %q: %w", path, err)
	}
	return cfg, nil
}

// prepare builds the jobs of cfg, reusing the jobs of old whose target and
// module did not change (same loop, same HTTP client, same version).
func (d *Daemon) prepare(cfg *config.Config, old *state) (*state, error) {
	if d.o.Validate != nil {
		if err := d.o.Validate(cfg); err != nil {
			return nil, err
		}
	}
	st := &state{cfg: cfg, red: config.NewRedactor(cfg), jobs: map[prober.JobKey]job{}}
	version := strconv.FormatInt(time.Now().UnixNano(), 36)
	var errs []error
	for _, t := range cfg.Targets {
		for _, name := range t.Modules {
			m := cfg.Modules[name]
			key := prober.JobKey{Target: t.Name, Module: name}
			if old != nil {
				if j, ok := old.jobs[key]; ok && reflect.DeepEqual(j.target, t) && reflect.DeepEqual(j.module, m) {
					st.jobs[key] = j
					continue
				}
			}
			pf, err := d.o.BuildProbe(t, name, m)
			if err != nil {
				errs = append(errs, fmt.Errorf("target %q module %q: %w", t.Name, name, err))
				continue
			}
			st.jobs[key] = job{
				Job: prober.Job{
					Target: t.Name, Module: name,
					Interval:    time.Duration(t.Interval),
					Timeout:     t.EffectiveTimeout(),
					MaxInFlight: t.MaxInFlight,
					Version:     version,
					Probe:       d.withHistory(pf),
				},
				target: t, module: m,
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Building probes loads tokenizers and generates prompts: an 11 MB
	// tokenizer.json leaves about 40 MB of garbage behind its 22 MB of live
	// tables. The daemon then idles for seconds between probes, so the
	// heap the runtime would otherwise keep for minutes goes back now.
	debug.FreeOSMemory()
	return st, nil
}

// withHistory captures a probe's log lines and records its result in the
// history, unless the probe was cancelled because its loop stopped.
func (d *Daemon) withHistory(pf prober.ProbeFunc) prober.ProbeFunc {
	return func(ctx context.Context, logger log.Logger) prober.Result {
		logs := &probeLog{}
		r := pf(ctx, teeLogger{capture: logs, out: logger})
		if errors.Is(ctx.Err(), context.Canceled) {
			return r
		}
		red := d.state.Load().red
		// A conversation's turns are requests of their own; the probe's
		// log lines go with its last.
		for _, e := range r.Before {
			d.history.Add(entryOf(e, e.Model, ModeProbe, &probeLog{}, red))
		}
		d.history.Add(entryOf(r, r.Model, ModeProbe, logs, red))
		return r
	}
}

func jobList(st *state) []prober.Job {
	out := make([]prober.Job, 0, len(st.jobs))
	for _, j := range st.jobs {
		out = append(out, j.Job)
	}
	return out
}

func targetSeries(cfg *config.Config) []TargetSeries {
	out := make([]TargetSeries, 0, len(cfg.Targets))
	for _, t := range cfg.Targets {
		ts := TargetSeries{Name: t.Name, Backend: t.Backend, Model: t.Model, Modules: t.Modules, Endpoint: t.URL}
		for _, mod := range t.Modules {
			if c := prober.ModuleCheckNames(cfg.Modules[mod].Checks); len(c) > 0 {
				if ts.Checks == nil {
					ts.Checks = map[string][]prober.CheckName{}
				}
				ts.Checks[mod] = c
			}
		}
		for _, mod := range t.Modules {
			if n := cfg.Modules[mod].ConversationTurns(); n > 0 {
				if ts.Turns == nil {
					ts.Turns = map[string]int{}
				}
				ts.Turns[mod] = n
			}
		}
		out = append(out, ts)
	}
	return out
}
