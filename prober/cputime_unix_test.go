//go:build unix

package prober

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time. Benchmarks report CPU
// per token next to wall time, which is noisy on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
