// Package runner is the run engine: it builds what servingprobe sends
// from its configuration and runs it. A bench is one type, Spec, from the
// CLI's flags (which bind into it) or a bench window's JSON body (which
// decodes onto it) to the requests: ModuleSpec maps a configured target
// and module onto a Spec, Validate checks it for every caller, and
// requestOptions maps it onto the requests. ModuleSpec takes a module's
// dataset and request options from prober.ModuleDataset and
// prober.ModuleOptions, from which the daemon's probes are built too
// (prober.NewProbeBuilder).
//
// A Spec becomes a run here: it resolves the server (ready check, model,
// tokenizer), builds the dataset's prompts, the pacer and the prober,
// runs warmup, cache flush and profiling around the measured run as
// sglang's bench_serving does, and hands the results to the bench package
// for the summary; Sweep runs a sweep or an SLO search of full runs. The
// CLI (servingprobe bench) and the daemon's bench windows (package
// bench/api) share it, so a run triggered over HTTP measures exactly what
// the CLI measures.
//
// Invariants: no HTTP API, page or Prometheus client here (bench/api
// serves the windows, report draws runs, the exporter records through the
// Env's Observer); every network call other than the measured requests
// (ready check, /model_info, /flush_cache, profiling, /server_info)
// happens outside the benchmark duration, except where a compat switch
// restores sglang's accounting.
package runner
