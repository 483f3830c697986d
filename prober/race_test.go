//go:build race

package prober

// raceEnabled: under -race, sync.Pool drops items at random (to shake out
// misuse), so pooled buffers are reallocated and allocation counts stop
// meaning anything. make test runs the allocation tests again without -race.
const raceEnabled = true
