package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/go-kit/log/level"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"valid", []string{"check-config", "--config.file=../../examples/servingprobe.yml"}, 0, "valid (2 targets, 3 modules)", `warning: modules["short_chat"]: dataset fixed sends the same prompt on every probe`},
		{"invalid", []string{"check-config", "--config.file=../../config/testdata/bad-many.yml"}, 1, "", `targets[1].modules[1]: unknown module "x"`},
		{"missing", []string{"check-config", "--config.file=does-not-exist.yml"}, 1, "", "does-not-exist.yml"},
		{"bad flag", []string{"check-config", "--no-such-flag"}, 2, "", "unknown long flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tc.wantCode, stderr)
			}
			if !strings.Contains(stdout, tc.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout, tc.wantStdout)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tc.wantStderr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, "--version")
	if code != 0 || !strings.Contains(stdout, "servingprobe, version") || strings.Contains(stdout, "usage:") {
		t.Errorf("--version: code %d, stdout %q", code, stdout)
	}
}

func TestLogFormat(t *testing.T) {
	for _, format := range []string{"logfmt", "json"} {
		c := &logConfig{level: "info", format: format}
		var buf bytes.Buffer
		l, _, err := c.newLoggers(&buf)
		if err != nil {
			t.Fatal(err)
		}
		l.Log("msg", "Hello")
		out := buf.String()
		for _, key := range []string{"ts", "caller", "msg"} {
			if !strings.Contains(out, key) {
				t.Errorf("%s: %q lacks key %q", format, out, key)
			}
		}
		if !strings.Contains(out, "main_test.go") {
			t.Errorf("%s: caller %q is not the logging line", format, out)
		}
	}
}

func TestLogLevelFilters(t *testing.T) {
	c := &logConfig{level: "warn", format: "logfmt"}
	var buf bytes.Buffer
	l, s, _ := c.newLoggers(&buf)
	level.Info(l).Log("msg", "Dropped")
	level.Warn(l).Log("msg", "Kept")
	if out := buf.String(); strings.Contains(out, "Dropped") || !strings.Contains(out, "Kept") {
		t.Errorf("level warn: output %q", out)
	}
	// The slog bridge writes into the same filtered logger.
	buf.Reset()
	s.Info("Dropped too")
	s.Warn("Bridged")
	out := buf.String()
	if strings.Contains(out, "Dropped too") || !strings.Contains(out, "Bridged") {
		t.Errorf("slog bridge: output %q", out)
	}
	// One ts, one caller (the slog call site), no second timestamp.
	if strings.Count(out, "ts=") != 1 || strings.Count(out, "caller=") != 1 || strings.Contains(out, "time=") ||
		!strings.Contains(out, "caller=main_test.go") {
		t.Errorf("slog bridge line %q: want exactly one ts and one caller (main_test.go), no time", out)
	}
}

func TestHelp(t *testing.T) {
	code, stdout, _ := runCLI(t, "--help")
	if code != 0 || !strings.Contains(stdout, "check-config") {
		t.Errorf("--help: code %d, stdout %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, "help", "probe")
	if code != 0 || !strings.Contains(stdout, "--max-tokens") {
		t.Errorf("help probe: code %d, stdout %q", code, stdout)
	}
}

// TestLogKeyOrder: our own lines and the ones libraries log through the
// slog bridge have one format: ts first, then level.
func TestLogKeyOrder(t *testing.T) {
	var b strings.Builder
	logger, slogger, err := (&logConfig{level: "info", format: "logfmt"}).newLoggers(&b)
	if err != nil {
		t.Fatal(err)
	}
	level.Info(logger).Log("msg", "ours")
	slogger.Info("theirs")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines:\n%s", len(lines), b.String())
	}
	for _, l := range lines {
		if !regexp.MustCompile(`^ts=\S+ level=info caller=\S+ msg=`).MatchString(l) {
			t.Errorf("line %q: want ts, level, caller, msg in that order", l)
		}
	}
}
