// Package benchrun turns one benchmark request into a run: it resolves the
// server (ready check, model, tokenizer), builds the dataset's prompts, the
// pacer and the prober, runs warmup, cache flush and profiling around the
// measured run as sglang's bench_serving does, and hands the results to the
// bench package for the summary. The CLI (servingprobe bench) and the
// daemon's bench windows share it, so a run triggered over HTTP measures
// exactly what the CLI measures.
//
// Invariants: no Prometheus imports (the daemon passes a prober.Observer);
// every network call other than the measured requests (ready check,
// /model_info, /flush_cache, profiling, /server_info) happens outside the
// benchmark duration, except where a compat switch restores sglang's
// accounting.
package benchrun
