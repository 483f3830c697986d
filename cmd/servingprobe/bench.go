package main

import (
	"context"
	"errors"

	"github.com/alecthomas/kingpin/v2"
)

// addBenchCommand registers bench. The sglang-compatible flag set and the
// run itself land with the bench issue; until then it refuses to run rather
// than pretend.
func addBenchCommand(app *kingpin.Application) func(context.Context, *cliEnv) error {
	app.Command("bench", "Run a one-shot benchmark, a drop-in for python -m sglang.bench_serving (not implemented yet).")
	return func(context.Context, *cliEnv) error {
		return errors.New("not implemented yet")
	}
}
