// Command gen writes servingprobe's dashboards and rule files from the mixin
// knobs. Run through `go generate ./dashboards`.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", ".", "directory to write the files into; created if missing")
	knobs := fs.String("config", "", "optional YAML file overriding the default knobs (keys as in mixin.Config)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := mixin.Default()
	if *knobs != "" {
		var err error
		if cfg, err = mixin.Load(*knobs); err != nil {
			return err
		}
	}
	files, err := mixin.Files(cfg)
	if err != nil {
		return err
	}
	// A private copy usually goes to a new directory.
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(*out, n), files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}
