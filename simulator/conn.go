package simulator

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/servingprobe/servingprobe/internal/rxstamp"
)

// StampListener wraps ln so that every connection it accepts timestamps its
// I/O for the ground truth. Serve it with an http.Server whose ConnContext
// is ConnContext. Each HTTP/1.x request's Truth then has
//
//   - Received: the kernel's receive timestamp of the bytes that completed
//     the request's headers (SO_TIMESTAMPNS, Linux only), and Read: when
//     the read that returned them returned;
//   - per chunk, Wrote: when the write system call that carried it began.
//
// Why: the handler starts only when net/http gets round to it, and a
// goroutine returning from a write system call may wait for the CPU before
// it can read the clock. With many streams on one core both are
// milliseconds, and a truth taken from the handler start and after the
// flush would charge the server's own scheduling to the client.
//
// Limits: Linux enables receive timestamps host-wide asynchronously, so the
// first connection of a process may have none (Received is then zero and
// Start falls back to Read); a Write that blocks on a full send buffer is
// stamped when it began, before the peer could read all of it; HTTP
// pipelining is not supported (see receivedAt).
func StampListener(ln net.Listener) net.Listener { return stampListener{ln} }

// ConnContext is an http.Server ConnContext that hands a StampListener
// connection to the requests it carries. Other connections pass through.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if sc, ok := c.(*stampConn); ok {
		return context.WithValue(ctx, stampKey{}, sc)
	}
	return ctx
}

type stampKey struct{}

type stampListener struct{ net.Listener }

func (l stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newStampConn(c), nil
}

// stampConn records the times of its last data read and last write. A
// mutex rather than atomic integers keeps the monotonic readings (and works
// in a synctest bubble); a request costs a few reads and one write per
// flush.
type stampConn struct {
	net.Conn
	raw rawReader // nil: plain reads, no kernel timestamps

	mu         sync.Mutex
	read       time.Time // when the last Read that returned data returned
	kernel     time.Time // the kernel's receive time of that Read's last bytes; zero if unknown
	writeStart time.Time // when the last Write began
	writes     uint64    // Writes begun
}

// rawReader reads with the kernel's receive timestamp: an *rxstamp.Reader,
// or a stand-in in tests.
type rawReader interface {
	Read(c net.Conn, b []byte) (n int, unixNano int64, err error)
}

func newStampConn(c net.Conn) *stampConn {
	sc := &stampConn{Conn: c}
	if r := rxstamp.New(c); r != nil { // not a nil pointer in a non-nil interface
		sc.raw = r
	}
	return sc
}

func (c *stampConn) Read(b []byte) (int, error) {
	var (
		n      int
		kernel time.Time
		err    error
	)
	if c.raw != nil {
		var ns int64
		n, ns, err = c.raw.Read(c.Conn, b)
		if ns != 0 {
			kernel = time.Unix(0, ns)
		}
	} else {
		n, err = c.Conn.Read(b)
	}
	if n > 0 {
		now := time.Now()
		c.mu.Lock()
		c.read, c.kernel = now, kernel
		c.mu.Unlock()
	}
	return n, err
}

// Write stamps its start: once in the system call the bytes are the
// peer's to read, and the start is not delayed by the wait for a CPU that
// may follow the call.
func (c *stampConn) Write(b []byte) (int, error) {
	now := time.Now()
	c.mu.Lock()
	c.writeStart = now
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// CloseWrite keeps net/http's half-close working on TCP.
func (c *stampConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

func (c *stampConn) lastRead() (read, kernel time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read, c.kernel
}

func (c *stampConn) lastWrite() (start time.Time, writes uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeStart, c.writes
}

// unwrapConn returns the connection a stampConn wraps, for the TCP options
// of a hijacked connection.
func unwrapConn(c net.Conn) net.Conn {
	if sc, ok := c.(*stampConn); ok {
		return sc.Conn
	}
	return c
}

// requestConn returns r's stamped connection, or nil. Only HTTP/1.x
// carries one request at a time on a connection, so only there do its
// stamps belong to r.
func requestConn(r *http.Request) *stampConn {
	if r.ProtoMajor != 1 {
		return nil
	}
	sc, _ := r.Context().Value(stampKey{}).(*stampConn)
	return sc
}

// receivedAt returns when the read that completed r's headers returned and
// the kernel's receive time of its bytes (zero when unknown). It must be
// called when the handler starts: net/http has read the headers and nothing
// else reads the connection before the handler touches the body. (A small
// body arrives with its headers.) HTTP pipelining is not supported by these
// stamps: net/http's background read during a handler can take in a later
// request's bytes, and the request after the running one would then get
// that read's times. Go's client, which the harness uses, never pipelines.
func receivedAt(sc *stampConn) (read, kernel time.Time) {
	if sc == nil {
		return time.Time{}, time.Time{}
	}
	return sc.lastRead()
}
