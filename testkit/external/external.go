// Package external is how a test finds what the repository does not hold
// and `go test` does not build: Debian's Prometheus, promtool, Alertmanager
// and Chromium (which `make deps` installs), llm-d-inference-sim and ollama
// (which `make test` builds into .build/), and Meta's Llama 3 tokenizer
// (which `make deps` fetches).
//
// Without one, the test is skipped, so that `go test ./...` passes on a bare
// checkout, and the reason starts with Marker and names the make target
// that provides what is missing. `make test` promises every check, so it
// sets RequireEnv, and tools/testreport then fails the run on any skip
// that carries the marker: a check the target provides never passes
// unseen.
package external

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Marker starts the reason of every skip for something external that is
// missing; tools/testreport looks for it.
const Marker = "needs-external:"

// RequireEnv, set to a true value (1, true, yes, on), makes
// tools/testreport fail a run in which a test skipped with Marker.
const RequireEnv = "SERVINGPROBE_REQUIRE_EXTERNAL"

// Provided by make targets, for the skip reasons.
const (
	// ByDeps: scripts/install-deps.sh, which `make test` runs first.
	ByDeps = "run `make deps`, which installs it (`make test` runs it)"
)

// debianPackage names the Debian package of each program a test runs,
// as scripts/install-deps.sh installs it.
var debianPackage = map[string]string{
	"prometheus":              "prometheus",
	"promtool":                "prometheus",
	"prometheus-alertmanager": "prometheus-alertmanager",
	"amtool":                  "prometheus-alertmanager",
	"chromium":                "chromium",
}

// Program returns the path of name on $PATH, or skips the test saying
// which Debian package and make target provide it. name must be one of
// the programs scripts/install-deps.sh installs.
func Program(t testing.TB, name string) string {
	t.Helper()
	pkg, ok := debianPackage[name]
	if !ok {
		t.Fatalf("external.Program(%q): not a program scripts/install-deps.sh installs (add it there and here)", name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, fmt.Sprintf("%s (Debian's %s package)", name, pkg), ByDeps, err)
	}
	return p
}

// Skip skips the test because what is missing (err says how), naming
// the make target or command that provides it.
func Skip(t testing.TB, what, provider string, err error) {
	t.Helper()
	t.Skip(Reason(what, provider, err))
}

// Reason is the skip message: the marker, what is missing, why, and how
// to get it.
func Reason(what, provider string, err error) string {
	return fmt.Sprintf("%s %s is missing (%v): %s", Marker, what, err, provider)
}

// BuildPath returns path under the repository's .build directory, where
// the Makefile builds and fetches what the tests use.
func BuildPath(path ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), "..", "..", ".build"}, path...)...)
}

// Path returns the path the environment variable env names, or else def,
// once check(path) succeeds. A path the variable names that fails the
// check fails the test: someone asked for that one. A missing default
// skips the test, naming the provider.
func Path(t testing.TB, env, def, what, provider string, check func(string) error) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		if err := check(p); err != nil {
			t.Fatalf("%s=%s: %v", env, p, err)
		}
		return p
	}
	if err := check(def); err != nil {
		Skip(t, what, provider+"; or set "+env, err)
	}
	return def
}
