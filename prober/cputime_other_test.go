//go:build !unix

package prober

import "time"

// cpuTime is not measured here; benchmarks then omit their CPU figures.
func cpuTime() time.Duration { return 0 }
