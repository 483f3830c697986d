package rxstamp

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Reader reads one connection. Its state is reused from read to read so
// that a read allocates nothing; like a net.Conn's reads, Reads must not
// run concurrently (net/http never does on one connection).
type Reader struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool // made once: a closure per read would allocate
	buf []byte
	// oob holds SCM_TIMESTAMPNS (32 bytes) and, on a socket whose
	// transmit stamps internal/txstamp reports on a kernel without
	// SOF_TIMESTAMPING_OPT_RX_FILTER (before Linux 6.12), the receive
	// stamp again as SCM_TIMESTAMPING (64), which rxTime skips.
	oob  [128]byte
	n    int
	oobn int
	err  error
}

// New turns on receive timestamps for c and returns its Reader, or nil
// when c is not a TCP connection or the option cannot be set.
func New(c net.Conn) *Reader {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil
	}
	r := &Reader{rc: rc}
	r.fn = r.recv
	return r
}

func (r *Reader) recv(fd uintptr) bool {
	for {
		r.n, r.oobn, _, _, r.err = syscall.Recvmsg(int(fd), r.buf, r.oob[:], 0)
		if r.err != syscall.EINTR {
			return r.err != syscall.EAGAIN
		}
	}
}

// Read is c.Read (c being the connection given to New) through recvmsg. It
// also returns the kernel's receive time, in Unix nanoseconds
// (CLOCK_REALTIME), of the last bytes read; 0 when the kernel gave none,
// as on a process's first connections: Linux turns timestamping on
// host-wide asynchronously. RawConn.Read waits for readability through the
// netpoller and honours deadlines, as a TCPConn does; errors are wrapped
// the same way.
func (r *Reader) Read(c net.Conn, b []byte) (n int, unixNano int64, err error) {
	if len(b) == 0 {
		return 0, 0, nil
	}
	r.buf = b
	err = r.rc.Read(r.fn)
	r.buf = nil
	if err == nil && r.err != nil {
		err = os.NewSyscallError("recvmsg", r.err)
	}
	if err != nil {
		return 0, 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if r.n == 0 {
		return 0, 0, io.EOF
	}
	return r.n, rxTime(r.oob[:r.oobn]), nil
}

// rxTime finds SCM_TIMESTAMPNS among the control messages, walking them in
// place (syscall.ParseSocketControlMessage would allocate on every read).
func rxTime(oob []byte) int64 {
	const hdr = syscall.SizeofCmsghdr
	for len(oob) >= hdr {
		var h syscall.Cmsghdr
		copy((*[hdr]byte)(unsafe.Pointer(&h))[:], oob) // copied: oob need not be aligned
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		var ts syscall.Timespec
		const tsSize = int(unsafe.Sizeof(ts))
		data := oob[cmsgAlign(hdr):l]
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && len(data) >= tsSize {
			copy((*[unsafe.Sizeof(ts)]byte)(unsafe.Pointer(&ts))[:], data)
			return ts.Nano()
		}
		next := cmsgAlign(l)
		if next >= len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}

func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}
