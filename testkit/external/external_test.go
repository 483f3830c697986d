package external

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records a skip or a fatal error instead of
// ending the real test, so that both outcomes can be checked here.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skip(args ...any)          { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)         { r.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...); runtime.Goexit() }

// call runs f on a recorder in a goroutine of its own, as the testing
// package runs a test, so that Goexit ends f alone.
func call(f func(t testing.TB) string) (r *recorder, got string) {
	r = &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = f(r)
	}()
	<-done
	return r, got
}

func TestPath(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "present")
	if err := os.WriteFile(present, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	exists := func(p string) error { _, err := os.Stat(p); return err }
	for _, tc := range []struct {
		name, env, def string
		want, skip     string // the path returned, or the start of the skip
		fatal          bool
	}{
		{name: "default present", def: present, want: present},
		{name: "variable present", env: present, def: missing, want: present},
		{name: "default missing skips, naming the target", def: missing, skip: Marker + " the sim is missing ("},
		{name: "variable names a missing path", env: missing, def: present, fatal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SERVINGPROBE_EXTERNAL_TEST", tc.env)
			r, got := call(func(tb testing.TB) string {
				return Path(tb, "SERVINGPROBE_EXTERNAL_TEST", tc.def, "the sim", "run `make sim`", exists)
			})
			switch {
			case tc.fatal:
				if r.fatal == "" || r.skipped != "" {
					t.Errorf("Path: fatal %q, skip %q; want a failure for the path the variable names", r.fatal, r.skipped)
				}
			case tc.skip != "":
				if !strings.HasPrefix(r.skipped, tc.skip) || !strings.Contains(r.skipped, "run `make sim`; or set SERVINGPROBE_EXTERNAL_TEST") {
					t.Errorf("Path skipped with %q, want it to start %q and name the make target", r.skipped, tc.skip)
				}
			default:
				if got != tc.want || r.skipped != "" || r.fatal != "" {
					t.Errorf("Path = %q (skip %q, fatal %q), want %q", got, r.skipped, r.fatal, tc.want)
				}
			}
		})
	}
}

func TestProgram(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // nothing on it
	r, _ := call(func(tb testing.TB) string { return Program(tb, "promtool") })
	if want := Marker + " promtool (Debian's prometheus package) is missing ("; !strings.HasPrefix(r.skipped, want) || !strings.HasSuffix(r.skipped, ByDeps) {
		t.Errorf("Program(promtool) without it on PATH skipped with %q, want it to start %q and end %q", r.skipped, want, ByDeps)
	}
	r, _ = call(func(tb testing.TB) string { return Program(tb, "kubectl") })
	if r.fatal == "" {
		t.Error("Program(kubectl), which install-deps.sh does not install, did not fail")
	}
}
