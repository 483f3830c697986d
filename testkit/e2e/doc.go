// Package e2e holds the robustness tests (docs/robustness.md): the fault
// matrix (every hostile behaviour of a target and the outcome label it maps
// to),
// hostile input to the daemon's HTTP API, the planted-secret grep, the
// kill -9 persistence test and the two-minute soak. They run the daemon in
// process, or the built binary, against loopback servers only.
package e2e
