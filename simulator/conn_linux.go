package simulator

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// kernelStamps turns on SO_TIMESTAMPNS for a TCP connection and returns a
// reader that collects the timestamps, or nil when the option cannot be set.
func kernelStamps(c net.Conn) rawReader {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil
	}
	return recvmsgReader{rc}
}

type recvmsgReader struct{ rc syscall.RawConn }

// read is net.Conn.Read through recvmsg, which also returns the kernel's
// receive time (CLOCK_REALTIME) of the last bytes read. RawConn.Read waits
// for readability through the netpoller and honours deadlines, as a TCPConn
// does; errors are wrapped the same way.
func (r recvmsgReader) read(c net.Conn, b []byte) (int, time.Time, error) {
	if len(b) == 0 {
		return 0, time.Time{}, nil
	}
	var (
		oob  [64]byte
		n    int
		oobn int
		serr error
	)
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, serr = syscall.Recvmsg(int(fd), b, oob[:], 0)
			if serr != syscall.EINTR {
				return serr != syscall.EAGAIN
			}
		}
	})
	if err == nil && serr != nil {
		err = os.NewSyscallError("recvmsg", serr)
	}
	if err != nil {
		return 0, time.Time{}, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if n == 0 {
		return 0, time.Time{}, io.EOF
	}
	return n, rxTime(oob[:oobn]), nil
}

// rxTime finds SCM_TIMESTAMPNS among the control messages.
func rxTime(oob []byte) time.Time {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}
	}
	for _, m := range msgs {
		var ts syscall.Timespec
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(ts)) {
			// Copied out: the data need not be aligned for a Timespec.
			copy((*[unsafe.Sizeof(ts)]byte)(unsafe.Pointer(&ts))[:], m.Data)
			if ts.Sec == 0 && ts.Nsec == 0 {
				return time.Time{}
			}
			return time.Unix(ts.Unix())
		}
	}
	return time.Time{}
}
