package rxstamp

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// pair returns a loopback TCP connection with its Reader and the server's
// end. Linux turns receive timestamps on host-wide asynchronously, so the
// first connections of a process may get none: it tries until a read is
// stamped.
func pair(t *testing.T) (c net.Conn, r *Reader, srv net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for range 20 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		srv, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		r := New(c)
		if r == nil {
			t.Fatal("New returned nil for a TCP connection")
		}
		if _, err := srv.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		_, ns, err := r.Read(c, b[:])
		if err != nil {
			t.Fatal(err)
		}
		if ns != 0 {
			t.Cleanup(func() { c.Close(); srv.Close() })
			return c, r, srv
		}
		c.Close()
		srv.Close()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no receive timestamp on 20 connections")
	return nil, nil, nil
}

// A read made late still returns when the bytes arrived: the stamp is
// after the write began and at least the reader's delay before the read.
func TestLateReadKeepsArrivalTime(t *testing.T) {
	c, r, srv := pair(t)
	wrote := time.Now().UnixNano()
	if _, err := srv.Write([]byte("data: {}\n\n")); err != nil {
		t.Fatal(err)
	}
	const delay = 30 * time.Millisecond
	time.Sleep(delay)
	b := make([]byte, 64)
	n, ns, err := r.Read(c, b)
	read := time.Now().UnixNano()
	if err != nil || n != 10 {
		t.Fatalf("read %d, %v", n, err)
	}
	if ns < wrote {
		t.Errorf("stamp %d before the write began at %d", ns, wrote)
	}
	if read-ns < int64(delay) {
		t.Errorf("stamp only %v before the read returned; the reader slept %v", time.Duration(read-ns), delay)
	}
}

// Segments that queue while nobody reads are merged and keep the newest
// arrival time: a small read of the first segment's bytes returns the
// second's time. This is the bound the package documents.
func TestCoalescedSegments(t *testing.T) {
	c, r, srv := pair(t)
	if _, err := srv.Write([]byte("first segment")); err != nil {
		t.Fatal(err)
	}
	const gap = 30 * time.Millisecond
	time.Sleep(gap)
	second := time.Now().UnixNano()
	if _, err := srv.Write([]byte("second segment")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	b := make([]byte, 5) // smaller than the first segment
	n, ns, err := r.Read(c, b)
	if err != nil || string(b[:n]) != "first" {
		t.Fatalf("read %q, %v", b[:n], err)
	}
	if ns < second {
		// Per-segment times kept: reads sized to a segment would then
		// give each event its own time, and the documentation is wrong.
		t.Errorf("first segment's bytes stamped %v before the second segment was written: the kernel kept per-segment times", time.Duration(second-ns))
	}
}

func TestEOFAndDeadline(t *testing.T) {
	c, r, srv := pair(t)
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	b := make([]byte, 8)
	if _, _, err := r.Read(c, b); err == nil {
		t.Fatal("read past the deadline returned no error")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("deadline error %v is not a net.Error timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	srv.Close()
	if n, _, err := r.Read(c, b); n != 0 || err != io.EOF {
		t.Fatalf("after the peer closed: %d, %v; want 0, EOF", n, err)
	}
	if n, _, err := r.Read(c, nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
}

func TestNewRefusesNonTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if New(a) != nil {
		t.Fatal("New gave a Reader for a pipe")
	}
}

func TestReadDoesNotAllocate(t *testing.T) {
	c, r, srv := pair(t)
	msg := []byte("data: {\"x\":1}\n\n")
	b := make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := srv.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Read(c, b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per read", allocs)
	}
}

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, syscall.CmsgSpace(len(data)))
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(syscall.CmsgLen(len(data)))
	copy(b[syscall.CmsgLen(0):], data)
	return b
}

func timespec(sec, nsec int64) []byte {
	ts := syscall.Timespec{Sec: sec, Nsec: nsec}
	return append([]byte(nil), (*[unsafe.Sizeof(ts)]byte)(unsafe.Pointer(&ts))[:]...)
}

func TestRxTime(t *testing.T) {
	stamp := cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(1700000000, 5))
	other := cmsg(syscall.SOL_IP, 8, []byte{1, 2, 3})
	for _, tc := range []struct {
		name string
		oob  []byte
		want int64
	}{
		{"none", nil, 0},
		{"stamp", stamp, 1700000000_000000005},
		{"after another message", append(append([]byte(nil), other...), stamp...), 1700000000_000000005},
		{"zero stamp", cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(0, 0)), 0},
		{"truncated header", stamp[:10], 0},
		{"length past the end", stamp[:len(stamp)-4], 0},
		{"short data", cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, []byte{1, 2}), 0},
		{"other only", other, 0},
	} {
		if got := rxTime(tc.oob); got != tc.want {
			t.Errorf("%s: rxTime = %d, want %d", tc.name, got, tc.want)
		}
	}
}
