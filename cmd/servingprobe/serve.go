package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/servingprobe/servingprobe/bench/api"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// defaultServeAddress is servingprobe's port. 9775 is unclaimed on the
// Prometheus default port allocations page, next to other exporters' 97xx.
const (
	defaultServeAddress = ":9775"
	demoServeAddress    = "127.0.0.1:9775"
)

//go:embed demo.yml
var demoConfig string

type serveFlags struct {
	configFile             string
	web                    *web.FlagConfig
	disableExporterMetrics bool
	probeLogLevel          string
	demo                   bool
	maxConnections         int
}

func addServeCommand(app *kingpin.Application) func(ctx context.Context, env *cliEnv) error {
	cmd := app.Command("serve", "Probe the configured targets continuously and serve the metrics, /probe and the result history.")
	f := &serveFlags{}
	cmd.Flag("config.file", "Path to the configuration file.").Default("servingprobe.yml").StringVar(&f.configFile)
	f.web = kingpinflag.AddFlags(cmd, defaultServeAddress)
	cmd.Flag("web.disable-exporter-metrics", "Exclude the Go runtime and process metrics from /metrics.").BoolVar(&f.disableExporterMetrics)
	cmd.Flag("log.prober", "Level at which per-probe log lines (including failures) are logged; they show when --log.level allows it. One of: [debug, info, warn, error]").
		Default("debug").EnumVar(&f.probeLogLevel, "debug", "info", "warn", "error")
	cmd.Flag("web.max-connections", "Most HTTP connections open at once; more are closed as they are accepted. Idle and slow connections are also closed by timeouts (see docs/robustness.md). 0: no cap.").
		Default(strconv.Itoa(exporter.DefaultServerLimits.MaxConnections)).IntVar(&f.maxConnections)
	cmd.Flag("demo", "Start the built-in simulator on a loopback port and probe it with an embedded config (ignores --config.file). Listens on "+demoServeAddress+" unless --web.listen-address says otherwise.").BoolVar(&f.demo)
	return func(ctx context.Context, env *cliEnv) error { return runServe(ctx, env, f) }
}

// daemonGOGC is the GC target of serve when GOGC is not set. The daemon's
// live heap is about 10 MB (half of it the embedded tokenizer) and it
// allocates tens of KB per second, so Go's default of 100 (the heap grows to
// twice the live heap between cycles) is what decides its RSS: about 42 MiB
// at the top of a cycle with 50 targets, against 36 MiB at 50. The price is a
// GC cycle every minute instead of every two, each a few ms.
const daemonGOGC = 50

// daemonGCPercent says which GC percent serve should set: daemonGOGC,
// unless the operator chose one with GOGC.
func daemonGCPercent(lookupEnv func(string) (string, bool)) (int, bool) {
	if _, set := lookupEnv("GOGC"); set {
		return 0, false
	}
	return daemonGOGC, true
}

func runServe(ctx context.Context, env *cliEnv, f *serveFlags) error {
	logger := env.Logger
	if pct, ok := daemonGCPercent(os.LookupEnv); ok {
		defer debug.SetGCPercent(debug.SetGCPercent(pct)) // restored for in-process callers (tests)
	}
	configFile := f.configFile
	if f.demo {
		path, stop, err := startDemo(logger)
		if err != nil {
			return err
		}
		defer stop()
		configFile = path
		// A demo has no business on every interface; an address the user
		// chose is kept.
		if addrs := *f.web.WebListenAddresses; len(addrs) == 1 && addrs[0] == defaultServeAddress {
			addrs[0] = demoServeAddress
		}
	}
	probeLogger, err := rewriteLevel(logger, f.probeLogLevel)
	if err != nil {
		return err
	}
	d, err := exporter.New(exporter.Options{
		ConfigFile:             configFile,
		Logger:                 logger,
		ProbeLogger:            probeLogger,
		DisableExporterMetrics: f.disableExporterMetrics,
		BuildProbe:             daemonProbeBuilder(),
		Seed:                   rand.Uint64(),
		Validate:               api.ValidateCapacityChecks,
	})
	if err != nil {
		if !f.demo && errors.Is(err, fs.ErrNotExist) {
			// A first run has no config file yet: say how to try the
			// daemon without one.
			return fmt.Errorf("%w (write a config file and pass it with --config.file, or run serve --demo to probe the built-in simulator with an embedded one)", err)
		}
		return err
	}
	benches, err := api.Enable(d, api.Options{Run: api.Runner()})
	if err != nil {
		return err
	}
	defer benches.Close()

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	// Targets' capacity_check searches, as bench windows of their own.
	defer benches.ScheduleCapacityChecks(runCtx, api.CapacityOptions{})()
	runDone := make(chan error, 1)
	go func() { runDone <- d.Run(runCtx) }()

	limits := exporter.DefaultServerLimits
	limits.MaxConnections = max(f.maxConnections, 0)
	srv := d.NewServer(limits)
	serveDone := make(chan error, 1)
	go func() { serveDone <- web.ListenAndServe(srv, f.web, env.Slog) }()
	level.Info(logger).Log("msg", "Starting servingprobe", "version", version.Info(), "config_file", configFile,
		"addresses", strings.Join(*f.web.WebListenAddresses, ","))

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	var serveErr error
loop:
	for {
		select {
		case <-hup:
			_ = d.Reload(ctx) // Reload logs its outcome and sets the gauges
		case serveErr = <-serveDone:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	level.Info(logger).Log("msg", "Shutting down")
	cancelRun()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		level.Warn(logger).Log("msg", "HTTP server shutdown", "err", err)
	}
	if serveErr == nil {
		if err := <-serveDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
		}
	}
	if err := <-runDone; err != nil {
		return err
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("--web.listen-address=%s: %w", strings.Join(*f.web.WebListenAddresses, ","), serveErr)
	}
	return nil
}

// startDemo starts the simulator on a loopback port and writes the demo
// config pointing at it to a temporary file.
func startDemo(logger log.Logger) (configPath string, stop func(), err error) {
	sim, err := simulator.New(simulator.DefaultConfig(), log.With(logger, "component", "simulator"))
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("demo simulator: %w", err)
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	dir, err := os.MkdirTemp("", "servingprobe-demo-")
	if err != nil {
		_ = srv.Close()
		<-done
		return "", nil, err
	}
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
		_ = os.RemoveAll(dir)
	}
	url := "http://" + ln.Addr().String()
	path := filepath.Join(dir, "demo.yml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(demoConfig, "SIMULATOR_URL", url)), 0o600); err != nil {
		stop()
		return "", nil, err
	}
	level.Info(logger).Log("msg", "Demo simulator started", "url", url, "config_file", path)
	return path, stop, nil
}

// daemonProbeBuilder is how serve builds its probes, and so how
// check-config checks that it can.
func daemonProbeBuilder() exporter.ProbeBuilder {
	return prober.NewProbeBuilder(prober.ProbeBuilderOptions{
		Tokenizer: resolveTokenizer,
		UserAgent: "servingprobe/" + version.Version,
	})
}

// resolveTokenizer turns a module's tokenizer setting into a tokenizer:
// "" is the embedded Qwen3 tokenizer, anything else a path or hub id.
func resolveTokenizer(name string) (datasets.Tokenizer, error) {
	switch name {
	case "":
		return tokenizer.Default()
	case "server":
		// The /tokenize endpoint belongs to a target, and a module is shared
		// between targets; refuse rather than guess which one.
		return nil, errors.New(`tokenizer "server" is not supported for continuous probes yet; use a path or hub id`)
	}
	return tokenizer.ResolveAny(context.Background(), name, nil)
}

// rewriteLevel returns a logger that emits every record at the given level,
// as blackbox_exporter's --log.prober does: probe lines then show or not
// according to --log.level.
func rewriteLevel(l log.Logger, lvl string) (log.Logger, error) {
	var v any
	switch lvl {
	case "debug":
		v = level.DebugValue()
	case "info":
		v = level.InfoValue()
	case "warn":
		v = level.WarnValue()
	case "error":
		v = level.ErrorValue()
	default:
		return nil, fmt.Errorf("unknown probe log level %q", lvl)
	}
	return log.LoggerFunc(func(kv ...any) error {
		out := make([]any, len(kv))
		copy(out, kv)
		for i := 0; i+1 < len(out); i += 2 {
			if out[i] == level.Key() {
				out[i+1] = v
			}
		}
		return l.Log(out...)
	}), nil
}
