//go:build !linux

package rxstamp

import "net"

// Reader is Linux-only; elsewhere New returns nil and callers read as usual.
type Reader struct{}

// New returns nil: receive timestamps are read on Linux only.
func New(net.Conn) *Reader { return nil }

// Read is never called: New returns no Reader.
func (*Reader) Read(net.Conn, []byte) (int, int64, error) { panic("rxstamp: no Reader outside Linux") }
