package txstamp

import (
	"encoding/binary"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// The SO_TIMESTAMPING flags used (include/uapi/linux/net_tstamp.h).
const (
	txSoftware  = 1 << 1  // SOF_TIMESTAMPING_TX_SOFTWARE: stamp when handed to the device
	software    = 1 << 4  // SOF_TIMESTAMPING_SOFTWARE: report software stamps
	optID       = 1 << 7  // SOF_TIMESTAMPING_OPT_ID: an id per stamp (TCP: the byte count)
	optTSOnly   = 1 << 11 // SOF_TIMESTAMPING_OPT_TSONLY: no payload in the error queue
	optIDTCP    = 1 << 16 // SOF_TIMESTAMPING_OPT_ID_TCP: count from the next write (Linux 6.2)
	optRxFilter = 1 << 17 // SOF_TIMESTAMPING_OPT_RX_FILTER: report no receive stamps here (Linux 6.12)

	eeOriginTimestamping = 4 // SO_EE_ORIGIN_TIMESTAMPING
	tstampSnd            = 0 // SCM_TSTAMP_SND: ee_info of a transmit stamp

	// maxDrain bounds the messages one read of the error queue takes:
	// only stamped writes queue any, one each.
	maxDrain = 16
)

// optionFlags are tried in order: newer kernels know more options, and
// each set is enough (the counting starts before any byte is written, so
// OPT_ID alone counts from the same place as OPT_ID_TCP). Without
// OPT_RX_FILTER, receive stamps are reported here too, as an extra control
// message that internal/rxstamp skips.
var optionFlags = []int{
	software | optID | optTSOnly | optIDTCP | optRxFilter,
	software | optID | optTSOnly | optIDTCP,
	software | optID | optTSOnly,
}

// Writer writes one connection. Writes must not run concurrently (as a
// net.Conn's writes, which net/http never runs concurrently on one
// connection); Stamp may run beside a Write.
type Writer struct {
	rc   syscall.RawConn
	fn   func(fd uintptr) bool // made once: a closure per write would allocate
	cmsg [32]byte              // the control message asking for a stamp: SCM_TIMESTAMPING, TX_SOFTWARE
	buf  []byte
	n    int
	err  error
	sent uint32 // bytes written so far, mod 2^32: the kernel's ids count them

	// The stamped write's stamp has an id from lo to hi (the counts of
	// its first and last bytes), set before the write is sent: the
	// answer to a request can come, and Stamp be called, before the
	// writing goroutine is back from the system call.
	mu      sync.Mutex
	lo, hi  uint32
	waiting bool  // a write was stamped
	got     int64 // its stamp, Unix nanoseconds; 0 until read
	drainFn func(fd uintptr)
	oob     [256]byte
	one     [1]byte
}

// New turns on transmit-stamp reporting for c and returns its Writer, or
// nil when c is not a TCP connection or the kernel refuses the option.
// Call it before anything is written on c: the stamps' ids count bytes
// from there.
func New(c net.Conn) *Writer {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	set := false
	for _, flags := range optionFlags {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPING, flags)
		}); err != nil {
			return nil
		}
		if serr == nil {
			set = true
			break
		}
	}
	if !set {
		return nil
	}
	w := &Writer{rc: rc}
	w.fn = w.send
	w.drainFn = w.drain
	h := syscall.Cmsghdr{Level: syscall.SOL_SOCKET, Type: syscall.SO_TIMESTAMPING}
	h.SetLen(syscall.CmsgLen(4))
	copy(w.cmsg[:], (*[syscall.SizeofCmsghdr]byte)(unsafe.Pointer(&h))[:]) // copied: cmsg need not be aligned
	binary.NativeEndian.PutUint32(w.cmsg[syscall.CmsgLen(0):], txSoftware)
	return w
}

func (w *Writer) send(fd uintptr) bool {
	for {
		w.n, w.err = syscall.SendmsgN(int(fd), w.buf, w.cmsg[:syscall.CmsgSpace(4)], nil, syscall.MSG_NOSIGNAL)
		if w.err != syscall.EINTR {
			return w.err != syscall.EAGAIN
		}
	}
}

// Write is c.Write (c being the connection given to New). With stamp, the
// kernel is asked for the transmit time of the last byte of the first
// sendmsg the write takes (all of b unless the send buffer is full), which
// Stamp then returns; the error queue is read once right after, where on
// loopback and an idle link the stamp already is.
func (w *Writer) Write(c net.Conn, b []byte, stamp bool) (int, error) {
	if !stamp || len(b) == 0 {
		n, err := c.Write(b)
		w.sent += uint32(n)
		return n, err
	}
	w.mu.Lock()
	w.lo, w.hi, w.waiting, w.got = w.sent, w.sent+uint32(len(b)-1), true, 0
	w.mu.Unlock()
	w.buf = b
	err := w.rc.Write(w.fn)
	w.buf = nil
	if err == nil && w.err != nil {
		err = os.NewSyscallError("sendmsg", w.err)
	}
	if err != nil {
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	n := w.n
	w.sent += uint32(n)
	w.mu.Lock()
	if w.got == 0 {
		w.rc.Control(w.drainFn)
	}
	w.mu.Unlock()
	if n < len(b) {
		m, err := c.Write(b[n:])
		w.sent += uint32(m)
		return n + m, err
	}
	return n, nil
}

// Stamp returns the kernel's transmit time, in Unix nanoseconds
// (CLOCK_REALTIME), of the last stamped write, reading the error queue
// for it if it has not been read yet; false while the kernel has not
// stamped it (its segment is still queued) or when no write was stamped.
func (w *Writer) Stamp() (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting && w.got == 0 {
		w.rc.Control(w.drainFn)
	}
	return w.got, w.waiting && w.got != 0
}

// drain reads the error queue until it is empty (or maxDrain messages),
// keeping the awaited stamp. Other messages (a stamp that came after its
// request gave up on it) are dropped. Called with mu held.
func (w *Writer) drain(fd uintptr) {
	for range maxDrain {
		oobn, err := recvErrQueue(int(fd), w.one[:], w.oob[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return // EAGAIN: empty
		}
		if ns, id, ok := txStamp(w.oob[:oobn]); ok && w.waiting && id-w.lo <= w.hi-w.lo {
			w.got = ns
		}
	}
}

// txStamp reads one error-queue message's control messages: the software
// time of SCM_TIMESTAMPING and the id of the transmit stamp
// (sock_extended_err of origin SO_EE_ORIGIN_TIMESTAMPING, info
// SCM_TSTAMP_SND), walking them in place.
func txStamp(oob []byte) (ns int64, id uint32, ok bool) {
	const hdr = syscall.SizeofCmsghdr
	var haveTime, haveID bool
	for len(oob) >= hdr {
		var h syscall.Cmsghdr
		copy((*[hdr]byte)(unsafe.Pointer(&h))[:], oob) // copied: oob need not be aligned
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			break
		}
		data := oob[cmsgAlign(hdr):l]
		switch {
		case h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPING:
			var ts syscall.Timespec // ts[0] of struct scm_timestamping: the software stamp
			if len(data) >= int(unsafe.Sizeof(ts)) {
				copy((*[unsafe.Sizeof(ts)]byte)(unsafe.Pointer(&ts))[:], data)
				ns, haveTime = ts.Nano(), ts.Sec != 0 || ts.Nsec != 0
			}
		case (h.Level == syscall.SOL_IP && h.Type == syscall.IP_RECVERR) ||
			(h.Level == syscall.SOL_IPV6 && h.Type == syscall.IPV6_RECVERR):
			// struct sock_extended_err: errno u32, origin u8, type u8,
			// code u8, pad u8, info u32, data u32.
			if len(data) >= 16 && data[4] == eeOriginTimestamping && binary.NativeEndian.Uint32(data[8:]) == tstampSnd {
				id, haveID = binary.NativeEndian.Uint32(data[12:]), true
			}
		}
		next := cmsgAlign(l)
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return ns, id, haveTime && haveID
}

func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}
