// Package servermetrics reads an inference server's own Prometheus
// endpoint around a benchmark run and says what the server saw over it:
// its TTFT, queue, prefill, decode, end-to-end and per-token times from
// the run's histogram bucket deltas, its token and prefix-cache counters,
// and its running, waiting and KV-cache gauges sampled through the run.
//
// Invariants:
//   - Parse and Compute are pure: they take text and snapshots and return
//     values. Fetch and Watch are the only I/O, and each read is bounded
//     by a timeout and a byte cap.
//   - Failing is data: an endpoint that is absent, slow, huge or garbage
//     gives a Report whose Missing says why; it never fails the run. A
//     metric name that is not in the table below is skipped and listed.
//   - The names come from the engines' sources (names.go says which).
//     Every series of a known family is summed over its label sets (engines,
//     models), so a server serving other clients or models counts them too;
//     the token comparison is what shows it.
//   - Quantiles are estimates from classic buckets, interpolated linearly
//     within the bucket that holds the rank, as Prometheus's
//     histogram_quantile does; every estimate carries that bucket's bounds.
package servermetrics
