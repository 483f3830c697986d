package txstamp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// pair returns a loopback TCP connection with its Writer and the server's
// end.
func pair(t *testing.T) (c net.Conn, w *Writer, srv net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	if w = New(c); w == nil {
		t.Fatal("New returned nil for a loopback TCP connection")
	}
	return c, w, srv
}

// readN reads n bytes from srv.
func readN(t *testing.T, srv net.Conn, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(srv, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStampBetweenWriteAndReturn: a stamped write's stamp is no earlier
// than the process's clock before the write and no later than after it
// (on loopback the kernel transmits within the call), for writes of
// several sizes, and the bytes arrive intact.
func TestStampBetweenWriteAndReturn(t *testing.T) {
	c, w, srv := pair(t)
	if _, ok := w.Stamp(); ok {
		t.Fatal("a stamp before any stamped write")
	}
	for _, size := range []int{1, 100, 4096, 60000} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		before := time.Now().UnixNano()
		n, err := w.Write(c, msg, true)
		after := time.Now().UnixNano()
		if err != nil || n != size {
			t.Fatalf("write %d bytes: %d, %v", size, n, err)
		}
		ns, ok := w.Stamp()
		if !ok {
			t.Fatalf("%d bytes: no stamp after the write returned", size)
		}
		if ns < before || ns > after {
			t.Errorf("%d bytes: stamp %d not between the clock before the write (%d) and after it (%d)", size, ns, before, after)
		}
		if got := readN(t, srv, size); !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: the server read other bytes", size)
		}
	}
}

// TestStampIsItsWrites: unstamped writes before and after a stamped one
// queue no stamp, and a stamp that was never read is replaced by the next
// stamped write's (the ids match a stamp to its write).
func TestStampIsItsWrites(t *testing.T) {
	c, w, srv := pair(t)
	if _, err := w.Write(c, []byte("unstamped"), false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // the writes' times apart
	before := time.Now().UnixNano()
	if _, err := w.Write(c, []byte("first stamped"), true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	before2 := time.Now().UnixNano()
	if _, err := w.Write(c, []byte("second stamped"), true); err != nil {
		t.Fatal(err)
	}
	after2 := time.Now().UnixNano()
	time.Sleep(2 * time.Millisecond)
	if _, err := w.Write(c, []byte("unstamped again"), false); err != nil {
		t.Fatal(err)
	}
	ns, ok := w.Stamp()
	if !ok || ns < before2 || ns > after2 {
		t.Errorf("stamp %d (%v), want the second stamped write's, between %d and %d (the first began at %d)", ns, ok, before2, after2, before)
	}
	readN(t, srv, len("unstampedfirst stampedsecond stampedunstamped again"))
}

// TestPartialWrite: a write larger than the send buffer, to a reader that
// has not started reading, is written whole; its stamp is for the bytes
// the first sendmsg took, and comes.
func TestPartialWrite(t *testing.T) {
	c, w, srv := pair(t)
	msg := make([]byte, 16<<20)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	got := make(chan []byte)
	go func() {
		time.Sleep(10 * time.Millisecond) // let the send buffer fill
		b := make([]byte, len(msg))
		io.ReadFull(srv, b)
		got <- b
	}()
	before := time.Now().UnixNano()
	n, err := w.Write(c, msg, true)
	if err != nil || n != len(msg) {
		t.Fatalf("write: %d, %v", n, err)
	}
	if !bytes.Equal(<-got, msg) {
		t.Fatal("the server read other bytes")
	}
	if ns, ok := w.Stamp(); !ok || ns < before {
		t.Errorf("stamp %d (%v), want one after the write began (%d)", ns, ok, before)
	}
}

// TestReaderUnharmed: stamps go to the socket's error queue, which wakes a
// reader parked on the socket (EPOLLERR); the reader must not see an
// error, and reads what the server sends afterwards.
func TestReaderUnharmed(t *testing.T) {
	c, w, srv := pair(t)
	done := make(chan error, 1)
	go func() {
		b := make([]byte, 5)
		_, err := io.ReadFull(c, b)
		if err == nil && string(b) != "reply" {
			err = errors.New("read " + string(b))
		}
		done <- err
	}()
	for range 50 {
		if _, err := w.Write(c, []byte("request"), true); err != nil {
			t.Fatal(err)
		}
		readN(t, srv, len("request"))
	}
	if _, err := srv.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the reader parked during the stamped writes: %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	c, w, _ := pair(t)
	c.Close()
	if _, err := w.Write(c, []byte("x"), true); err == nil {
		t.Fatal("a stamped write on a closed connection succeeded")
	} else if _, ok := err.(*net.OpError); !ok {
		t.Errorf("error %T %v, want a *net.OpError as a TCPConn's", err, err)
	}
}

func TestNewRefusesNonTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if New(a) != nil {
		t.Fatal("New gave a Writer for a pipe")
	}
}

// TestStampedWriteZeroAllocs: a stamped write and reading its stamp
// allocate nothing, so a request's start costs no garbage.
func TestStampedWriteZeroAllocs(t *testing.T) {
	c, w, srv := pair(t)
	msg, b := []byte("POST / HTTP/1.1\r\n\r\n"), make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := w.Write(c, msg, true); err != nil {
			t.Fatal(err)
		}
		if _, ok := w.Stamp(); !ok {
			t.Fatal("no stamp")
		}
		if _, err := io.ReadFull(srv, b[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per stamped write", allocs)
	}
}

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, syscall.CmsgSpace(len(data)))
	h := syscall.Cmsghdr{Level: level, Type: typ}
	h.SetLen(syscall.CmsgLen(len(data)))
	copy(b, (*[syscall.SizeofCmsghdr]byte)(unsafe.Pointer(&h))[:])
	copy(b[syscall.CmsgLen(0):], data)
	return b
}

// stamps is struct scm_timestamping: the software time first.
func stamps(sec, nsec int64) []byte {
	var ts [3]syscall.Timespec
	ts[0] = syscall.NsecToTimespec(sec*1e9 + nsec)
	return append([]byte(nil), (*[unsafe.Sizeof(ts)]byte)(unsafe.Pointer(&ts))[:]...)
}

// extErr is struct sock_extended_err followed by the offender's address.
func extErr(origin byte, info, id uint32) []byte {
	b := make([]byte, 32)
	binary.NativeEndian.PutUint32(b[0:], uint32(syscall.ENOMSG))
	b[4] = origin
	binary.NativeEndian.PutUint32(b[8:], info)
	binary.NativeEndian.PutUint32(b[12:], id)
	return b
}

func TestTxStamp(t *testing.T) {
	ts := cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPING, stamps(1700000000, 5))
	id4 := cmsg(syscall.SOL_IP, syscall.IP_RECVERR, extErr(eeOriginTimestamping, tstampSnd, 41))
	id6 := cmsg(syscall.SOL_IPV6, syscall.IPV6_RECVERR, extErr(eeOriginTimestamping, tstampSnd, 42))
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	for _, tc := range []struct {
		name string
		oob  []byte
		ns   int64
		id   uint32
		ok   bool
	}{
		{"ipv4", cat(ts, id4), 1700000000_000000005, 41, true},
		{"ipv6", cat(ts, id6), 1700000000_000000005, 42, true},
		{"id first", cat(id4, ts), 1700000000_000000005, 41, true},
		{"no time", id4, 0, 41, false},
		{"no id", ts, 1700000000_000000005, 0, false},
		{"zero time", cat(cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPING, stamps(0, 0)), id4), 0, 41, false},
		{"not a timestamp", cat(ts, cmsg(syscall.SOL_IP, syscall.IP_RECVERR, extErr(2, tstampSnd, 7))), 1700000000_000000005, 0, false},
		{"an acknowledgement stamp", cat(ts, cmsg(syscall.SOL_IP, syscall.IP_RECVERR, extErr(eeOriginTimestamping, 2, 7))), 1700000000_000000005, 0, false},
		{"truncated", cat(ts, id4)[:len(ts)+10], 1700000000_000000005, 0, false},
		{"empty", nil, 0, 0, false},
	} {
		ns, id, ok := txStamp(tc.oob)
		if ok != tc.ok || (ok && (ns != tc.ns || id != tc.id)) {
			t.Errorf("%s: txStamp = %d, %d, %v; want %d, %d, %v", tc.name, ns, id, ok, tc.ns, tc.id, tc.ok)
		}
	}
}
