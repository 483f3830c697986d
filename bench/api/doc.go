// Package api is the daemon's bench windows: POST /api/v1/benches
// decodes a body onto a runner.Spec (a patch over the module's bench,
// with the daemon's limits as defaults), checks it against those limits,
// runs it with the engine (bench/runner) on the target's client, keeps each
// run's view, record and HTML report in bench.results_dir, and lists the
// windows on the landing page (exporter.BenchWindow). It holds no run
// logic of its own.
//
// Invariants: every state the API shows (accepted, running, ended) is on
// disk first, written atomically; a window found recorded but not ended
// at start is interrupted; a write that fails makes the window failed
// (result write_failed), never completed; the directory is held to the
// configured retention, oldest ended windows first.
package api
