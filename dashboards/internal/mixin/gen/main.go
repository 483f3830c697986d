// Command gen writes servingprobe's dashboards and rule files from the mixin
// knobs. Run through `go generate ./dashboards`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
)

func main() {
	out := flag.String("out", ".", "directory to write the files into")
	knobs := flag.String("config", "", "optional YAML file overriding the default knobs (keys as in mixin.Config)")
	flag.Parse()
	cfg := mixin.Default()
	if *knobs != "" {
		var err error
		if cfg, err = mixin.Load(*knobs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	files, err := mixin.Files(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(*out, n), files[n], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
