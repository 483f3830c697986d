package simulator

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestRecvmsgReaderIsAConn: reads through recvmsg keep the net.Conn
// semantics net/http relies on: deadlines time out as a net.Error, the
// peer's close is io.EOF, a closed connection is net.ErrClosed.
func TestRecvmsgReaderIsAConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := StampListener(ln).Accept()
	if err != nil {
		t.Fatal(err)
	}
	sc := c.(*stampConn)
	if sc.raw == nil {
		t.Fatal("no kernel timestamps on a TCP connection")
	}
	buf := make([]byte, 16)

	_ = sc.SetReadDeadline(time.Now().Add(-time.Second))
	var ne net.Error
	if _, err := sc.Read(buf); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("read past the deadline = %v, want a timeout", err)
	}
	_ = sc.SetReadDeadline(time.Time{})

	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadAtLeast(sc, buf, 5); err != nil || string(buf[:n]) != "hello" {
		t.Errorf("read = %q, %v; want hello", buf[:n], err)
	}
	if read, kernel := sc.lastRead(); read.IsZero() || kernel.After(read) {
		t.Errorf("read stamped %v, kernel %v; want a read stamp no earlier than the kernel's", read, kernel)
	}

	client.Close()
	if _, err := sc.Read(buf); err != io.EOF {
		t.Errorf("read after the peer closed = %v, want EOF", err)
	}
	sc.Close()
	if _, err := sc.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after close = %v, want net.ErrClosed", err)
	}
}
