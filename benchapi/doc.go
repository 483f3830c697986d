// Package benchapi is the daemon's bench windows: POST /api/v1/benches
// decodes a body onto a benchrun.Spec (a patch over the module's bench,
// with the daemon's limits as defaults), checks it against those limits,
// runs it with the engine (benchrun) on the target's client, keeps each
// run's view, record and HTML report in bench.results_dir, and lists the
// windows on the landing page (exporter.BenchWindow). It holds no run
// logic of its own.
package benchapi
