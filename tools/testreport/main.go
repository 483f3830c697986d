// Command testreport reads `go test -json` output on stdin and writes what a
// person reading a CI log needs: every package's ok/FAIL line, the whole
// output of every failed test, every skipped test with its reason (a
// silent skip hides a check that did not run), and a closing count line.
// It exits 1 if any test or package failed, so `make test` can pipe through
// it without losing the verdict.
//
// With SERVINGPROBE_REQUIRE_EXTERNAL set (`make test` sets it), a test
// skipped because something external was missing (its reason carries
// external.Marker: Prometheus, Chromium, ollama, llm-d-inference-sim, ...)
// fails the run too: the make target installs and builds all of them, so
// such a skip there means a check that silently did not run.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/servingprobe/servingprobe/internal/envflag"
	"github.com/servingprobe/servingprobe/testkit/external"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() { os.Exit(run(os.Stdin, os.Stdout, envflag.Truthy(os.Getenv(external.RequireEnv)))) }

// run reports the events read from in; requireExternal makes a skip for
// something external a failure.
func run(in io.Reader, out io.Writer, requireExternal bool) int {
	type key struct{ pkg, test string }
	output := map[key]*strings.Builder{}
	var passed, failed, skipped int
	var skips, failures, externalSkips []string
	pkgFailed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not JSON: a build error or a crash printed before the
			// test binary ran. Pass it through.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			pkgFailed = true
		case "output":
			b := output[k]
			if b == nil {
				b = &strings.Builder{}
				output[k] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" { // the package's own verdict
				text := ""
				if b := output[k]; b != nil {
					text = b.String()
				}
				if e.Action == "fail" {
					pkgFailed = true
					fmt.Fprintf(out, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
					if !strings.Contains(text, "--- FAIL") {
						fmt.Fprint(out, text) // a panic or a timeout outside a test
					}
				} else {
					fmt.Fprintf(out, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
				}
				continue
			}
			text := ""
			if b := output[k]; b != nil {
				text = b.String()
			}
			switch e.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				failures = append(failures, text)
			case "skip":
				skipped++
				line := fmt.Sprintf("%s %s: %s", e.Package, e.Test, skipReason(text))
				skips = append(skips, line)
				if strings.Contains(text, external.Marker) {
					externalSkips = append(externalSkips, line)
				}
			}
			delete(output, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testreport:", err)
		pkgFailed = true
	}
	for _, f := range failures {
		fmt.Fprint(out, f)
	}
	slices.Sort(skips)
	for _, s := range skips {
		fmt.Fprintln(out, "SKIP", s)
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if requireExternal && len(externalSkips) > 0 {
		fmt.Fprintf(out, "FAIL: %d tests skipped for want of something `make test` provides (%s is set):\n", len(externalSkips), external.RequireEnv)
		slices.Sort(externalSkips)
		for _, s := range externalSkips {
			fmt.Fprintln(out, "  ", s)
		}
		return 1
	}
	if failed > 0 || pkgFailed {
		return 1
	}
	return 0
}

// skipReason is the message t.Skip printed: the output's last line that is
// not the "--- SKIP" header itself.
func skipReason(text string) string {
	reason := ""
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		reason = l
	}
	return reason
}
