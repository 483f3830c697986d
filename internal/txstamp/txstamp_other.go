//go:build !linux

package txstamp

import "net"

// Writer is Linux-only; elsewhere New returns nil and callers write as
// usual.
type Writer struct{}

// New returns nil: transmit timestamps are read on Linux only.
func New(net.Conn) *Writer { return nil }

// Write is never called: New returns no Writer.
func (*Writer) Write(net.Conn, []byte, bool) (int, error) {
	panic("txstamp: no Writer outside Linux")
}

// Stamp is never called: New returns no Writer.
func (*Writer) Stamp() (int64, bool) { panic("txstamp: no Writer outside Linux") }
