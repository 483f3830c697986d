//go:build !linux

package simulator

import "net"

// kernelStamps: kernel receive timestamps are read on Linux only; elsewhere
// Truth.Received stays zero and TTFT counts from Truth.Read.
func kernelStamps(net.Conn) rawReader { return nil }
