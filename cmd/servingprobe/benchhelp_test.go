package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// TestBenchHelpNotSupported: bench --help says "not supported" of one
// thing only, bench_serving's gserver backend, whose request function
// raises NotImplementedError; every other bench_serving flag and backend
// it lists works.
func TestBenchHelpNotSupported(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "--help")
	if code != 0 {
		t.Fatalf("bench --help exited %d: %s", code, stderr)
	}
	help := regexp.MustCompile(`\s+`).ReplaceAllString(stdout+stderr, " ")
	n := strings.Count(help, "not supported")
	if n != 1 || !strings.Contains(help, "gserver is not supported: its request function raises NotImplementedError") {
		t.Errorf("bench --help says \"not supported\" %d times, want once, of gserver:\n%s", n, help)
	}
}

// TestBenchHelpGroups: bench --help lists every bench flag once, under
// the groups of benchHelpGroups in their order and none under "Other
// flags"; "..." marks the flags that take several values and no other;
// a boolean reads as its name alone, never --[no-]X (which made
// --[no-]no-server-metrics); help bench and -h print the same.
func TestBenchHelpGroups(t *testing.T) {
	code, help, stderr := runCLI(t, "bench", "--help")
	if code != 0 {
		t.Fatalf("bench --help exited %d: %s", code, stderr)
	}
	for _, alt := range [][]string{{"help", "bench"}, {"bench", "-h"}, {"bench", "--num-prompts", "5", "--help"}} {
		if code, out, _ := runCLI(t, alt...); code != 0 || out != help {
			t.Errorf("%v: exit %d, and not bench --help's text", alt, code)
		}
	}
	if strings.Contains(help, "[no-]") || strings.Contains(help, "Other flags:") {
		t.Errorf("bench --help shows --[no-] or flags in no group:\n%s", help)
	}

	app := kingpin.New("servingprobe", "")
	addBenchFlags(app.Command("bench", ""))
	flagLine := regexp.MustCompile(`(?m)^  --([a-z0-9.-]+)(=\S+)?( \.\.\.)?( |$)`)
	lines := flagLine.FindAllStringSubmatch(help, -1)
	seen := map[string]int{}
	for _, l := range lines {
		seen[l[1]]++
	}
	for _, f := range app.Model().Commands[0].Flags {
		if f.Hidden {
			continue
		}
		if seen[f.Name] != 1 {
			t.Errorf("--%s is listed %d times, want once", f.Name, seen[f.Name])
		}
		_, list := f.Value.(*listValue)
		for _, l := range lines {
			if l[1] == f.Name && (l[3] != "") != list {
				t.Errorf("--%s: \"...\" shown %v, but it takes several values: %v", f.Name, l[3] != "", list)
			}
		}
	}

	// The groups, in order, each with its flags below it.
	at := 0
	for _, g := range benchHelpGroups {
		i := strings.Index(help[at:], "\n"+g.title+":\n")
		if i < 0 {
			t.Errorf("group %q missing or out of order", g.title)
			continue
		}
		at += i + 1
		section := help[at:]
		if end := strings.Index(section, "\n\n"); end >= 0 {
			section = section[:end]
		}
		for _, name := range g.flags {
			if !regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(name) + `(=| |$)`).MatchString(section) {
				t.Errorf("--%s is not under %q", name, g.title)
			}
		}
	}
}
