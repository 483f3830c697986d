// Package rxstamp reads a TCP connection through recvmsg and returns, with
// each read, the kernel's receive timestamp of the bytes it handed over
// (SO_TIMESTAMPNS; Linux only).
//
// Why: a goroutine that reads a socket late (the process is busy, the
// socket's readiness waits in the Go run queue) would stamp the bytes late
// too; the kernel stamped them when they arrived. The simulator uses it for
// its ground truth and the prober for the client's times.
//
// What a stamp means: Linux keeps one receive time per queued segment and a
// read that takes bytes from several segments reports the newest of them.
// Segments that queue up while nobody reads are also merged, and the merged
// segment keeps the newest time (tcp_try_coalesce), so a read smaller than
// what is pending does not recover the older times. A stamp is therefore
// exact for the last bytes of the read and an upper bound for the earlier
// ones; see TestCoalescedSegments for the measurement.
package rxstamp
