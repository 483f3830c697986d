// Package importrules holds the test that enforces the direction of
// imports between servingprobe's packages (the tables in its test, from
// the style guide's package rules). The checker is a pure function of a
// package graph, so its own table test feeds it made-up graphs with each
// kind of violation; the real test feeds it `go list -json`. Besides the
// table, it holds the layout: production code never imports the test-only
// tree, testkit/. A second test holds code outside prober to
// deciding by prober.BackendInfo's traits, never by a backend's name or
// protocol, and to keeping no list of backend names of its own. It has no
// code of its own.
package importrules
