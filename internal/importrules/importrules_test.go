package importrules

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/servingprobe/servingprobe/"

// allowed lists, for each production package, the servingprobe packages
// it may import. The wiring (cmd/), the selftest command (selftest/), the
// test harnesses (testkit/: everything that exists only for tests), a
// package's own internal rooms (x/internal/) and the repo's own programs
// (tools/) may import anything and are not listed, with one exception held
// by check: only test code, testkit/ itself and tools/ import testkit/.
// internal/ is the ground floor: every package there is listed, imports
// nothing of ours and only the standard library (groundFloor), so every
// package may use it without an import running back up. A package missing
// from the table fails the test, so a new package states its place.
var allowed = map[string][]string{
	"config":              {},
	"datasets":            {"config", "internal/chatmsg"},
	"prober":              {"config", "datasets", "internal/pyfmt", "internal/rxstamp", "internal/txstamp", "internal/jsonscan"},
	"bench":               {"prober", "datasets", "servermetrics", "internal/pyfmt"},
	"exporter":            {"prober", "config", "dashboards", "internal/inlinesvg"},
	"dashboards":          {},
	"dashboards/promtest": {},
	// The tokenizer declares what it returns (tokenizer.Any) rather than
	// import datasets, which links a parquet reader it never uses.
	"tokenizer":              {"tokenizer/hub", "tokenizer/hftokenizers", "internal/chatmsg", "internal/envflag", "internal/jsonscan"},
	"tokenizer/hub":          {"internal/envflag"},
	"tokenizer/hftokenizers": {},
	"simulator":              {"internal/rxstamp", "tokenizer", "datasets"},
	// The run engine knows no HTTP API and no page: bench/api serves its
	// windows, report draws its runs.
	"bench/runner": {"bench", "config", "internal/pyfmt", "datasets", "prober", "servermetrics", "tokenizer", "tokenizer/hub", "internal/envflag"},
	"bench/api":    {"bench", "bench/runner", "config", "internal/pyfmt", "exporter", "prober", "bench/report", "servermetrics"},
	"deploy":       {},
	"bench/report": {"bench", "servermetrics"}, // the server block a run read
	// The server's own metrics, read and reduced over a run: a client
	// of a Prometheus text endpoint, imports nothing of ours.
	"servermetrics": {"config"}, // config.RedactURL: the endpoints' passwords never shown
	// Ground-floor primitives: internal packages held to a rule, which
	// import nothing of ours and only the standard library (groundFloor).
	"internal/pyfmt":       {}, // Python-compatible formatting: every Python byte we write
	"internal/jsonscan":    {}, // the JSON scanner the prober's streams and the tokenizer's file share
	"internal/rxstamp":     {}, // the kernel's receive timestamps
	"internal/txstamp":     {}, // the kernel's send timestamps
	"internal/envflag":     {}, // boolean environment switches
	"internal/nearest":     {}, // "did you mean" for misspelt names
	"internal/chatmsg":     {}, // a chat turn, which datasets builds and the tokenizer renders
	"internal/inlinesvg":   {}, // the landing page's inline charts, so the daemon links no report
	"internal/importrules": {}, // this test; no code of its own
}

// groundFloor are the primitives everything may stand on: they import
// only the standard library, so that no arrow runs from them back up.
var groundFloor = []string{
	"internal/pyfmt", "internal/jsonscan", "internal/rxstamp", "internal/txstamp",
	"internal/envflag", "internal/nearest", "internal/inlinesvg", "internal/importrules", "internal/chatmsg",
}

// forbiddenExternal are the non-standard imports a package must not use.
var forbiddenExternal = map[string][]string{
	// Measurement stays free of the Prometheus client: only the
	// exporter turns Results into metrics.
	"prober":        {"github.com/prometheus/client_golang"},
	"bench":         {"github.com/prometheus/client_golang"},
	"servermetrics": {"github.com/prometheus/client_golang"},
	"bench/runner":  {"github.com/prometheus/client_golang"},
	"bench/api":     {"github.com/prometheus/client_golang"},
	// datasets never touches the network: it imports no HTTP client of
	// ours (the table) and uses net/http only for DetectContentType.
	"datasets": {"github.com/prometheus/client_golang"},
	// config: only the standard library, yaml and prometheus/common.
	"config": {"github.com/prometheus/client_golang", "github.com/go-kit"},
}

// pkg is the part of `go list -json` the rules read.
type pkg struct {
	ImportPath string
	Imports    []string
}

// rules are the two tables above, passed in so that the checker can be
// tested on made-up graphs.
type rules struct {
	allowed   map[string][]string
	forbidden map[string][]string
	ground    []string
}

// testOnly is the tree of fakes, fixtures and end-to-end tests.
const testOnly = "testkit/"

// exempt says whether a package (relative to the module) is wiring, the
// selftest command, a test harness, a package's own internal room or a
// tool, which may import anything but the test-only tree (see
// mayImportTestOnly). internal/ is not exempt: it is the ground floor.
func exempt(name string) bool {
	return strings.HasPrefix(name, "cmd/") || name == "selftest" || strings.HasPrefix(name, testOnly) ||
		strings.Contains(name, "/internal/") || strings.HasPrefix(name, "tools/")
}

// mayImportTestOnly says whether a package's non-test code may import the
// test-only tree: only the tree itself and the tools that drive it (soak)
// may. go list reports test files' imports apart (TestImports), so tests
// anywhere are free to use the fakes.
func mayImportTestOnly(name string) bool {
	return strings.HasPrefix(name, testOnly) || strings.HasPrefix(name, "tools/")
}

// check returns one line per violation of r in pkgs, and how many packages
// it held to a rule. It is pure: everything it reads is in its arguments.
func check(pkgs []pkg, r rules) (violations []string, checked int) {
	for _, p := range pkgs {
		name, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		if !mayImportTestOnly(name) {
			for _, imp := range p.Imports {
				if dep, ok := strings.CutPrefix(imp, module); ok && strings.HasPrefix(dep, testOnly) {
					violations = append(violations, name+" imports "+dep+": only tests use the test-only tree")
				}
			}
		}
		// An exempt package is held to the table only when it is listed
		// there.
		if _, listed := r.allowed[name]; exempt(name) && !listed {
			continue
		}
		checked++
		rule, ok := r.allowed[name]
		if !ok {
			violations = append(violations, "package "+name+" has no import rule: add it to the table")
			continue
		}
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, module); ok {
				switch {
				case strings.HasPrefix(dep, "cmd/"):
					violations = append(violations, name+" imports "+dep+": nothing imports the command")
				case !slices.Contains(rule, dep):
					violations = append(violations, name+" imports "+dep+"; it may import only ["+strings.Join(rule, " ")+"]")
				}
				continue
			}
			if slices.Contains(r.ground, name) && !standard(imp) {
				violations = append(violations, name+" imports "+imp+": a ground-floor primitive imports only the standard library")
			}
			for _, bad := range r.forbidden[name] {
				if imp == bad || strings.HasPrefix(imp, bad+"/") {
					violations = append(violations, name+" imports "+imp+", which it must not")
				}
			}
		}
	}
	return violations, checked
}

// standard says whether an import path is the standard library's: its
// first element has no dot, as the go command decides.
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func TestCheck(t *testing.T) {
	r := rules{
		allowed: map[string][]string{
			"prober":        {"config"},
			"bench":         {"prober"},
			"exporter":      {"prober"},
			"config":        {},
			"internal/prim": {},
		},
		forbidden: map[string][]string{
			"prober": {"github.com/prometheus/client_golang"},
		},
		ground: []string{"internal/prim"},
	}
	// m names a package of the module; p builds one with its imports.
	m := func(name string) string { return module + name }
	p := func(name string, imports ...string) pkg { return pkg{ImportPath: m(name), Imports: imports} }
	for _, tc := range []struct {
		name    string
		pkgs    []pkg
		want    []string
		checked int
	}{
		{
			name:    "clean graph",
			pkgs:    []pkg{p("config"), p("prober", m("config"), "net/http"), p("bench", m("prober")), p("exporter", m("prober"), "github.com/prometheus/client_golang/prometheus")},
			checked: 4,
		},
		{
			name:    "exporter imports bench",
			pkgs:    []pkg{p("exporter", m("prober"), m("bench"))},
			want:    []string{"exporter imports bench; it may import only [prober]"},
			checked: 1,
		},
		{
			name:    "prober imports the Prometheus client",
			pkgs:    []pkg{p("prober", m("config"), "github.com/prometheus/client_golang/prometheus")},
			want:    []string{"prober imports github.com/prometheus/client_golang/prometheus, which it must not"},
			checked: 1,
		},
		{
			name:    "a forbidden module itself, not only its subpackages",
			pkgs:    []pkg{p("prober", "github.com/prometheus/client_golang")},
			want:    []string{"prober imports github.com/prometheus/client_golang, which it must not"},
			checked: 1,
		},
		{
			name:    "a look-alike module is not forbidden",
			pkgs:    []pkg{p("prober", "github.com/prometheus/client_golang_extra")},
			checked: 1,
		},
		{
			name:    "a package with no rule",
			pkgs:    []pkg{p("report", m("bench"))},
			want:    []string{"package report has no import rule: add it to the table"},
			checked: 1,
		},
		{
			name:    "a library imports the command",
			pkgs:    []pkg{p("bench", m("prober"), m("cmd/servingprobe"))},
			want:    []string{"bench imports cmd/servingprobe: nothing imports the command"},
			checked: 1,
		},
		{
			name:    "wiring and helpers may import anything",
			pkgs:    []pkg{p("cmd/servingprobe", m("bench"), m("exporter")), p("testkit/e2e", m("cmd/servingprobe")), p("tokenizer/internal/x", m("exporter")), p("tools/soak", m("testkit/hostile"))},
			checked: 0,
		},
		{
			name: "production code imports a test fake",
			pkgs: []pkg{p("cmd/servingprobe", m("testkit/llmtest")), p("selftest", m("testkit/hostile")), p("prober", m("testkit/llmtest"))},
			want: []string{
				"cmd/servingprobe imports testkit/llmtest: only tests use the test-only tree",
				"selftest imports testkit/hostile: only tests use the test-only tree",
				"prober imports testkit/llmtest: only tests use the test-only tree",
				"prober imports testkit/llmtest; it may import only [config]",
			},
			checked: 1,
		},
		{
			name: "a ground-floor primitive imports only the standard library, and every one is listed",
			pkgs: []pkg{p("internal/prim", "strconv", "unicode/utf8", "golang.org/x/text/unicode/norm", m("prober")), p("internal/other", m("prober"))},
			want: []string{
				"internal/prim imports golang.org/x/text/unicode/norm: a ground-floor primitive imports only the standard library",
				"internal/prim imports prober; it may import only []",
				"package internal/other has no import rule: add it to the table",
			},
			checked: 2,
		},
		{
			name:    "packages outside the module are not ours to judge",
			pkgs:    []pkg{{ImportPath: "example.com/other", Imports: []string{m("bench")}}},
			checked: 0,
		},
		{
			name: "every violation is reported, not only the first",
			pkgs: []pkg{p("config", m("prober")), p("prober", m("bench"), "github.com/prometheus/client_golang/prometheus/promhttp")},
			want: []string{
				"config imports prober; it may import only []",
				"prober imports bench; it may import only [config]",
				"prober imports github.com/prometheus/client_golang/prometheus/promhttp, which it must not",
			},
			checked: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, checked := check(tc.pkgs, r)
			if !slices.Equal(got, tc.want) {
				t.Errorf("violations:\n got %q\nwant %q", got, tc.want)
			}
			if checked != tc.checked {
				t.Errorf("checked %d packages, want %d", checked, tc.checked)
			}
		})
	}
}

// TestImportRules holds the real module, with and without the hftokenizers
// tag (its backend has imports of its own), to the tables.
func TestImportRules(t *testing.T) {
	for _, tags := range []string{"", "hftokenizers"} {
		args := []string{"list", "-json", "-tags", tags, module + "..."}
		out, err := exec.Command("go", args...).Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		var pkgs []pkg
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for {
			var p pkg
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			pkgs = append(pkgs, p)
		}
		violations, checked := check(pkgs, rules{allowed: allowed, forbidden: forbiddenExternal, ground: groundFloor})
		for _, v := range violations {
			t.Errorf("tags %q: %s", tags, v)
		}
		if checked < 10 {
			t.Fatalf("go list found only %d packages under rules", checked)
		}
	}
}

// TestDaemonLinksNoBench holds the daemon's exporter apart from the bench
// subsystem: it draws its page with the ground floor's inline charts, so
// that a change to bench or report cannot reach the probing daemon, nor its
// binary carry them when built without the bench windows.
func TestDaemonLinksNoBench(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"exporter").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"prober") {
		t.Fatalf("go list -deps %sexporter lists no prober: %v", module, deps)
	}
	for _, d := range deps {
		name, ok := strings.CutPrefix(d, module)
		if !ok {
			continue
		}
		for _, banned := range []string{"bench", "bench/runner", "bench/api", "bench/report"} {
			if name == banned || strings.HasPrefix(name, banned+"/") {
				t.Errorf("exporter links %s", name)
			}
		}
	}
}
