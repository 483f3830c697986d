// Package bench turns the Results of a benchmark run into the summary that
// sglang's bench_serving prints and appends to its JSONL file, plus
// servingprobe's extra lines. It is pure: no network, no clock, no
// Prometheus. The runner that produces the Results is prober.Benchmark.
//
// # Definitions
//
// For a successful request (Outcome success): TTFT = FirstToken - Sent (0
// when no token arrived, as bench_serving), E2E = End - Sent, TPOT =
// (E2E - TTFT) / (OutputTokens - 1) when OutputTokens > 1. ITL is one sample
// per token by default: the gap between two output events is split evenly
// over the n tokens of the later event (Event.Tokens; 0 counts as 1), as
// bench_serving does for its native /generate backend. The first event is
// never split; its gap is the TTFT. Client queue time is Sent - Scheduled.
//
// Statistics follow NumPy, which bench_serving uses: the mean and the
// population standard deviation use NumPy's pairwise summation, so that on
// the same values in the same (dispatch) order the results agree to the
// last bit; the median of an even count averages the two middle values;
// percentiles interpolate linearly at rank (n-1)*p/100 (NumPy "linear",
// Hyndman and Fan type 7), with NumPy's two-sided lerp. An empty TTFT, TPOT
// or ITL list gives 0 for every statistic, as bench_serving. An empty E2E
// list crashes bench_serving; here it gives 0 as well (see
// CompatAllFailedError to restore the failure).
//
// Without streaming (--disable-stream) nothing measures a first token, and
// prober's Samples leave TTFT and TPOT undefined; the table and JSONL keep
// bench_serving's figures, the whole response taken as the first chunk
// (TTFT is the latency, TPOT follows from it), and the table's servingprobe
// block says how many requests were not streamed.
//
// # Memory
//
// An Accumulator never keeps Results. It composes a statistics strategy and
// a details sink. Exact statistics (the default) keep, per request, a small
// record (times, counts) and its ITL samples in 4 bytes a token (itlStore),
// because exact percentiles need the values; sketch statistics keep neither,
// only a Sketch per latency list. Prompt and completion text are kept only
// when Params.Details asks for the per-request arrays, in memory or spooled
// to a temporary file (Params.SpoolDetails).
//
// # The record
//
// The JSONL record's keys are described once, as ordered rows in
// recordfields.go: each row appends its key (Summary.Record, in
// bench_serving's order) and reads it back (ParseRecord), and a row of a
// run parameter the record echoes also copies it between Params and the
// Summary (Accumulator.Summary, Merge). Python's formatting (repr floats,
// json.dumps' separators and escapes) is internal/pyfmt's. A figure of the
// record is a field of Summary, what computes it, and one row.
package bench
