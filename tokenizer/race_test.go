//go:build race

package tokenizer

// raceEnabled: the test binary runs under the race detector, some ten
// times slower. A test that checks a whole table or corpus from one
// goroutine gives the detector nothing to find, so under -race it checks
// a sample, and make test runs it again without -race, whole: the
// Makefile's test target names each such test.
const raceEnabled = true
