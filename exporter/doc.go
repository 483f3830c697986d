// Package exporter turns prober Results into Prometheus metrics and serves
// the daemon's HTTP surface. It owns every metric definition (metrics.go),
// the Observer that maps a Result to metrics, the result history, the
// /probe handler, the landing page, the state-change log and config
// reloads. It knows nothing about wire protocols or datasets: probes come
// built from a ProbeBuilder (prober.NewProbeBuilder).
//
// Of benchmarks it knows what it shows, not how they run (benchwindow.go):
// a bench window's status (BenchStatus), its headline figures
// (BenchHeadline, copied by the window code from the run's summary), its
// progress (BenchProgress) and its landing-page row (BenchWindow). The
// bench gauges are set through BenchStarted, BenchPoint and BenchFinished;
// the window code (bench/api's Enable) registers the /api/v1/benches
// routes on the Daemon and lists its windows with SetBenchWindows. The
// landing page's charts come from internal/inlinesvg, so that the daemon
// links neither bench nor its report.
//
// # Series
//
// Every per-request metric carries target, module, model and mode
// (probe or bench). When a config loads, every configured (target, module)
// gets its counters and histograms created at zero with mode="probe", so
// that rate() sees zeros from the first scrape; bench series appear with
// the first bench request (or PrepareBench). The probe gauges
// (probe_success, last_*_timestamp_seconds) appear with the first finished
// probe, because a pre-created 0 would report a failure that never happened.
//
// Label values come from the config or from closed enums, with one bounded
// exception: when a target's model is left empty, the model label is the
// model the server reports (GET /v1/models), used only when it is shaped
// like a model id (config.Redactor.Label: at most 128 bytes of a closed
// character set, no configured secret nor run of 8 bytes of one), and a target has one model at a
// time. Until the first probe reports it, the series carry
// model=""; when it is known (or changes), the old model's series are
// deleted and the new ones created, so a flapping server cannot grow the
// series count. A reload that removes a target, a module or a configured
// model deletes their series (DeletePartialMatch); results of requests that
// were in flight for them are dropped rather than re-creating series.
//
// # Invariants
//
// A failed probe is data: a requests_total outcome, a debug line at the
// --log.prober level and a history entry (failures are kept longer), never an
// error log. Secrets never reach /config, the history or /probe?debug: Secret
// fields marshal as <secret> and a redactor replaces every configured secret
// in free text.
package exporter
