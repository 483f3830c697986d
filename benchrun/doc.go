// Package benchrun builds what servingprobe sends from its configuration
// and runs it: the daemon's probes (NewProbeBuilder, used by serve, /probe
// and servingprobe probe), benchmark runs, and the daemon's bench windows
// (EnableBenches: the /api/v1/benches API, its limits and result files).
// A module's request settings map to a request in one place,
// prober.ModuleOptions, for probes and bench windows alike.
//
// A benchmark request becomes a run here: it resolves the
// server (ready check, model, tokenizer), builds the dataset's prompts, the
// pacer and the prober, runs warmup, cache flush and profiling around the
// measured run as sglang's bench_serving does, and hands the results to the
// bench package for the summary. The CLI (servingprobe bench) and the
// daemon's bench windows share it, so a run triggered over HTTP measures
// exactly what the CLI measures.
//
// Invariants: no Prometheus client imports (bench windows record through
// the exporter's Metrics and observer);
// every network call other than the measured requests (ready check,
// /model_info, /flush_cache, profiling, /server_info) happens outside the
// benchmark duration, except where a compat switch restores sglang's
// accounting.
package benchrun
