package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench/api"
	"github.com/servingprobe/servingprobe/exporter"
)

func addCheckConfigCommand(app *kingpin.Application) func(context.Context, *cliEnv) error {
	cmd := app.Command("check-config", "Validate a configuration file as serve loads it (decoding, validation, and building every probe: datasets, tokenizers; nothing is sent). Exits 0 when it is valid and 1 when it is not, printing every problem.")
	path := cmd.Flag("config.file", "Configuration file to check.").Default("servingprobe.yml").String()
	return func(_ context.Context, env *cliEnv) error {
		c, err := exporter.CheckConfig(*path, daemonProbeBuilder(), api.ValidateCapacityChecks)
		if err != nil {
			fmt.Fprintln(env.Stderr, err)
			return &exitError{code: 1}
		}
		fmt.Fprintf(env.Stdout, "%s: valid (%d targets, %d modules)\n", *path, len(c.Targets), len(c.Modules))
		// Warnings go to stderr and leave the exit code at 0: the file is
		// valid, it may just measure something else than its reader thinks.
		for _, w := range c.Warnings() {
			fmt.Fprintln(env.Stderr, "warning:", w)
		}
		return nil
	}
}
