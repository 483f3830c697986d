package main

import (
	"context"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench/report"
)

// addReportCommand registers report: the HTML report of bench JSONL files,
// one run in full, several compared, or the points of a sweep as curves.
func addReportCommand(app *kingpin.Application) func(context.Context, *cliEnv) error {
	cmd := app.Command("report", "Write a self-contained HTML report of bench results (JSONL): one run in full, several runs compared (a file's runs, as bench --runs writes them, drawn as one set), or a sweep's points as curves.")
	var (
		files []string
		out   string
		title string
	)
	cmd.Arg("results", "JSONL files written by bench (or bench_serving); every record is a run.").Required().ExistingFilesVar(&files)
	cmd.Flag("output", "The HTML file to write.").Short('o').Default("report.html").StringVar(&out)
	cmd.Flag("title", "The report's title (default: what it shows).").StringVar(&title)
	return func(_ context.Context, env *cliEnv) error {
		runs, err := report.Load(files...)
		if err != nil {
			return err
		}
		return writeReportOpts(env.Stdout, out, runs, report.Options{Title: title})
	}
}
