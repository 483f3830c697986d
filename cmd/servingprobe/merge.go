package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/report"
)

// addMergeCommand registers merge: the records of a run's shards (bench
// --shard I/N) become the run's table and one record, as if one process
// had run it.
func addMergeCommand(app *kingpin.Application) func(context.Context, *cliEnv) error {
	cmd := app.Command("merge", "Merge the JSONL records of a run's shards (bench --shard I/N) into the whole run's bench_serving table and one record.")
	var (
		files      []string
		out        string
		runID      string
		details    bool
		strictJSON bool
	)
	cmd.Arg("shards", "JSONL files written by bench --shard; every shard record in them is read.").Required().ExistingFilesVar(&files)
	cmd.Flag("output-file", "Append the merged record to this file (default: <run id>_merged.jsonl).").StringVar(&out)
	cmd.Flag("run-id", "Merge the records of this run only, when the files hold records of several.").StringVar(&runID)
	cmd.Flag("output-details", "Keep the per-request arrays in the merged record (when every shard kept them), for servingprobe report.").Default("true").BoolVar(&details)
	cmd.Flag("strict-json", "Write valid JSON (an infinite rate as \"inf\", NaN as null) instead of Python's json.dumps output.").BoolVar(&strictJSON)
	return func(_ context.Context, env *cliEnv) error {
		sum, err := mergeFiles(files, runID)
		if err != nil {
			return err
		}
		if err := sum.WriteTable(env.Stdout); err != nil {
			return err
		}
		if out == "" {
			out = sum.Merged.RunID + "_merged.jsonl"
		}
		if err := sum.AppendJSONL(out, bench.JSONOptions{Strict: strictJSON, Details: details}); err != nil {
			return fmt.Errorf("write merged record: %w", err)
		}
		return nil
	}
}

// mergeFiles reads every shard record of files (of run runID, if set)
// and merges them.
func mergeFiles(files []string, runID string) (*bench.Summary, error) {
	runs, err := report.Load(files...)
	if err != nil {
		return nil, err
	}
	var shards []*bench.Summary
	var others []string
	for _, r := range runs {
		switch {
		case r.Summary.Shard == nil:
			others = append(others, r.Name)
		case runID == "" || r.Summary.Shard.RunID == runID:
			shards = append(shards, r.Summary)
		}
	}
	if len(shards) == 0 {
		if runID != "" {
			return nil, fmt.Errorf("no shard record of run %s in %s", runID, strings.Join(files, ", "))
		}
		return nil, fmt.Errorf("no shard record in %s (records of runs made with bench --shard I/N): %s", strings.Join(files, ", "), strings.Join(others, ", "))
	}
	return bench.Merge(shards)
}
