// Command servingprobe is a Prometheus exporter, continuous prober and
// benchmark client for LLM inference servers.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/prometheus/common/version"
)

// cliEnv is what every subcommand gets: the standard streams and a logger
// built from the global --log.* flags.
type cliEnv struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Logger         log.Logger
	Slog           *slog.Logger // the same logger, for libraries that need slog
	// Dial, if set, makes bench's connections to the server
	// (runner.Env.DialContext); nil, as in main, dials the network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args and runs one subcommand. It returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runDial(ctx, args, stdin, stdout, stderr, nil)
}

// newApp is the command line: every command's flags, and the function
// that runs each command, by name.
func newApp(stdout, stderr io.Writer) (*kingpin.Application, *logConfig, map[string]func(context.Context, *cliEnv) error) {
	app := kingpin.New("servingprobe", "Prometheus exporter, continuous prober and benchmark client for LLM inference servers.")
	app.Version(version.Print("servingprobe"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	// kingpin calls terminate after --help and --version; turn that into a
	// return so that run stays testable and main alone calls os.Exit.
	app.Terminate(func(code int) { panic(terminated(code)) })
	logCfg := addLogFlags(app)

	commands := map[string]func(context.Context, *cliEnv) error{}
	register := func(name string, fn func(context.Context, *cliEnv) error) { commands[name] = fn }

	register("serve", addServeCommand(app))
	register("bench", addBenchCommand(app))
	register("probe", addProbeCommand(app))
	register("report", addReportCommand(app))
	register("merge", addMergeCommand(app))
	register("compare", addCompareCommand(app))
	register("simulate", addSimulateCommand(app))
	register("check-config", addCheckConfigCommand(app))
	register("selftest", addSelftestCommand(app))
	tokenizeRun := addTokenizeCommand(app)
	register("tokenize", func(ctx context.Context, env *cliEnv) error {
		return tokenizeRun(ctx, env.Stdin, env.Stdout, env.Stderr)
	})
	return app, logCfg, commands
}

// runDial is run with bench's connections to the server made by dial:
// a test's way to run the command line against a server over in-memory
// connections in a testing/synctest bubble, where every latency is on
// the bubble's clock.
func runDial(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, dial func(ctx context.Context, network, addr string) (net.Conn, error)) int {
	app, logCfg, commands := newApp(stdout, stderr)
	if isBenchHelp(args) {
		// bench's flags are many: its help groups them (writeBenchHelp)
		// where kingpin's would list them in one run.
		if err := writeBenchHelp(stdout, app); err != nil {
			fmt.Fprintf(stderr, "servingprobe: %v\n", err)
			return 1
		}
		return 0
	}
	cmd, code, err := parse(app, args)
	if code >= 0 { // --help or --version already printed
		return code
	}
	if err != nil {
		fmt.Fprintf(stderr, "servingprobe: %v\n", err)
		return 2
	}
	// Log lines and bench's progress line share stderr through termLine,
	// so that a log line never lands on the progress line.
	stderr = &termLine{w: stderr}
	logger, slogger, err := logCfg.newLoggers(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "servingprobe: %v\n", err)
		return 2
	}
	env := &cliEnv{Stdin: stdin, Stdout: stdout, Stderr: stderr, Logger: logger, Slog: slogger, Dial: dial}
	if err := commands[cmd](ctx, env); err != nil {
		var ec exitCoder
		if asExitCoder(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintf(stderr, "servingprobe %s: %v\n", cmd, err)
			}
			return ec.ExitCode()
		}
		fmt.Fprintf(stderr, "servingprobe %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

type terminated int

// parse runs kingpin's parser. code is the exit code kingpin asked for after
// --help or --version, or -1 when a command should run.
func parse(app *kingpin.Application, args []string) (cmd string, code int, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(terminated)
			if !ok {
				panic(r)
			}
			cmd, code, err = "", int(t), nil
		}
	}()
	args, err = argparseArgs(app, args)
	if err != nil {
		return "", -1, err
	}
	nameFlagErrors(app)
	cmd, err = app.Parse(args)
	if err != nil {
		err = suggestParseError(app, args, err)
	}
	return cmd, -1, err
}
