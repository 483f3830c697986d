package txstamp

import "syscall"

// recvErrQueue is recvmsg(MSG_ERRQUEUE). On 386 Linux's recvmsg goes
// through socketcall, which the syscall package wraps; its Recvmsg
// allocates the source address, a cost only this architecture pays.
func recvErrQueue(fd int, p, oob []byte) (oobn int, err error) {
	_, oobn, _, _, err = syscall.Recvmsg(fd, p, oob, syscall.MSG_ERRQUEUE|syscall.MSG_DONTWAIT)
	return oobn, err
}
