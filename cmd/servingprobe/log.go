package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	slgk "github.com/tjhop/slog-gokit"
)

type logConfig struct {
	level  string
	format string
}

func addLogFlags(app *kingpin.Application) *logConfig {
	c := &logConfig{}
	app.Flag("log.level", "Only log messages with the given severity or above. One of: [debug, info, warn, error]").
		Default("info").EnumVar(&c.level, "debug", "info", "warn", "error")
	app.Flag("log.format", "Output format of log messages. One of: [logfmt, json]").
		Default("logfmt").EnumVar(&c.format, "logfmt", "json")
	return c
}

// newLoggers builds the process logger and, for libraries that only accept
// *slog.Logger (exporter-toolkit), a slog.Logger that writes into it.
// Filtering comes before the ts and caller keys so that the caller is the
// line that logged, not a wrapper. The slog side takes its caller from the
// record (the library's call site) and its timestamp from go-kit, so its
// lines carry the same keys as ours, once each.
func (c *logConfig) newLoggers(w io.Writer) (log.Logger, *slog.Logger, error) {
	var l log.Logger
	switch c.format {
	case "logfmt", "":
		l = log.NewLogfmtLogger(log.NewSyncWriter(w))
	case "json":
		l = log.NewJSONLogger(log.NewSyncWriter(w))
	default:
		return nil, nil, fmt.Errorf("unknown log format %q", c.format)
	}
	opt, err := levelOption(c.level)
	if err != nil {
		return nil, nil, err
	}
	l = level.NewFilter(l, opt)
	withTS := tsFirst{l}
	bridge := slog.New(untimedHandler{slgk.NewGoKitHandler(withTS, slogLevel(c.level))})
	return log.With(withTS, "caller", log.DefaultCaller), bridge, nil
}

// tsFirst stamps ts as the first key of every line. log.With would put it
// after level, since level.Info(l) prefixes level to l's context, while
// the slog bridge's lines put level after ts: one format has one order.
type tsFirst struct{ next log.Logger }

func (t tsFirst) Log(kv ...any) error {
	return t.next.Log(append([]any{"ts", log.DefaultTimestampUTC()}, kv...)...)
}

// untimedHandler drops slog's own record time: go-kit's ts already says it.
type untimedHandler struct{ slog.Handler }

func (h untimedHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Time = time.Time{}
	return h.Handler.Handle(ctx, r)
}

func (h untimedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return untimedHandler{h.Handler.WithAttrs(attrs)}
}

func (h untimedHandler) WithGroup(name string) slog.Handler {
	return untimedHandler{h.Handler.WithGroup(name)}
}

func levelOption(s string) (level.Option, error) {
	switch s {
	case "debug":
		return level.AllowDebug(), nil
	case "info", "":
		return level.AllowInfo(), nil
	case "warn":
		return level.AllowWarn(), nil
	case "error":
		return level.AllowError(), nil
	}
	return nil, fmt.Errorf("unknown log level %q", s)
}

// slogLevel maps a go-kit level name to slog's, for the bridge.
func slogLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// exitCoder lets a command choose its exit code, e.g. check-config exits 1
// on an invalid file and 2 on a usage error.
type exitCoder interface {
	error
	ExitCode() int
}

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) ExitCode() int { return e.code }
func (e *exitError) Unwrap() error { return e.err }

func asExitCoder(err error, target *exitCoder) bool { return errors.As(err, target) }
