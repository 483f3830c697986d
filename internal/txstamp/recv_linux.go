//go:build linux && !386

package txstamp

import (
	"syscall"
	"unsafe"
)

// recvErrQueue is recvmsg(MSG_ERRQUEUE) without a source address, which
// syscall.Recvmsg would allocate for each message.
func recvErrQueue(fd int, p, oob []byte) (oobn int, err error) {
	var iov syscall.Iovec
	iov.Base = &p[0]
	iov.SetLen(len(p))
	var msg syscall.Msghdr
	msg.Iov = &iov
	msg.Iovlen = 1
	msg.Control = &oob[0]
	msg.SetControllen(len(oob))
	_, _, e := syscall.Syscall(syscall.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)),
		syscall.MSG_ERRQUEUE|syscall.MSG_DONTWAIT)
	if e != 0 {
		return 0, e
	}
	return int(msg.Controllen), nil
}
