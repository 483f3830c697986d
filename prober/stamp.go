package prober

import (
	"context"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servingprobe/servingprobe/internal/rxstamp"
	"github.com/servingprobe/servingprobe/internal/txstamp"
)

// Clock says which clock stamped a result's arrival times.
type Clock string

const (
	// ClockKernel: every read that brought response bytes was stamped with
	// the kernel's receive time of its last bytes, and on a reused
	// connection the request started when the kernel transmitted its first
	// write (a software transmit timestamp). Client scheduling delay before
	// the bytes left and after they arrived is then out of TTFT, ITL and
	// E2E.
	ClockKernel Clock = "kernel"
	// ClockUser: the process's clock when each read returned, and the
	// start before the HTTP call (as bench_serving's perf_counter). Used
	// when kernel stamps are off (--compat user-clock), not available
	// (not Linux, HTTP/2, a connection not dialled by us) or absent.
	ClockUser Clock = "user"
	// ClockMixed: some reads had kernel stamps and some did not (a
	// connection's first reads, before Linux turned timestamping on), or
	// the reads had them and the start on a reused connection had none
	// (the kernel refused transmit stamps, or had not sent the write's
	// bytes by the time the response came), so that the start was the
	// process's clock when the write began.
	ClockMixed Clock = "mixed"
)

// Clocks lists the clocks in a stable order, for counts and tables.
var Clocks = []Clock{ClockKernel, ClockUser, ClockMixed}

// clockBase is the monotonic origin of the times stampConn keeps in
// atomics (nanoseconds after it).
var clockBase = time.Now()

const (
	noData  = 0             // the last read brought no bytes (EOF, an error)
	noStamp = math.MinInt64 // it brought bytes the kernel did not stamp
)

// stampConn is a client TCP connection read through recvmsg, keeping the
// kernel's receive time of its last read. Why per connection rather than
// per body read: net/http's bufio and chunked readers sit between the
// connection and the stream reader, and on HTTP/1.x the only connection
// reads during a body read are the ones that body read makes, so the last
// one delivered the newest bytes handed to the stream reader. Under TLS
// the record that completes those bytes was completed by that read too.
type stampConn struct {
	net.Conn
	rx  *rxstamp.Reader
	tx  *txstamp.Writer // nil when the kernel gives no transmit stamps
	key connKey
	// arrived is the last read's kernel arrival time on clockBase's
	// monotonic scale (converted through the lag behind the wall clock
	// measured right after the read), or noData or noStamp. Atomic: on
	// HTTP/1.x the response headers are read by the transport's goroutine
	// and the body by the caller's.
	arrived atomic.Int64
	// wrote is when the first Write of the request began, after
	// clockBase; a Read that brought bytes (the previous response) arms
	// the next Write as a request's first (HTTP/1.x sends one request at
	// a time on a connection).
	wrote atomic.Int64
	armed atomic.Bool
}

func (c *stampConn) Read(b []byte) (int, error) {
	n, ns, err := c.rx.Read(c.Conn, b)
	switch {
	case n == 0:
		c.arrived.Store(noData)
	case ns == 0:
		c.arrived.Store(noStamp)
	default:
		c.arrived.Store(sinceBase(ns))
	}
	if n > 0 {
		c.armed.Store(true)
	}
	return n, err
}

// sinceBase converts a kernel time (Unix nanoseconds, CLOCK_REALTIME) to
// clockBase's monotonic scale through the wall clock's lead over it now.
func sinceBase(unixNano int64) int64 {
	now := time.Now()
	lag := max(now.UnixNano()-unixNano, 0) // a wall clock stepped back: no lag
	return max(int64(now.Sub(clockBase))-lag, 1)
}

// Write stamps a request's first write when it begins, and asks the
// kernel for its transmit time (see requestStart).
func (c *stampConn) Write(b []byte) (int, error) {
	first := c.armed.Swap(false)
	if first {
		c.wrote.Store(int64(time.Since(clockBase)))
	}
	if c.tx == nil {
		return c.Conn.Write(b)
	}
	return c.tx.Write(c.Conn, b, first)
}

// requestStart is when the request on this connection started: the
// kernel's transmit time of its first write, or, when there is none, when
// that write began by the process's clock (kernel false).
func (c *stampConn) requestStart() (start time.Time, kernel bool) {
	if c.tx != nil {
		if ns, ok := c.tx.Stamp(); ok {
			return clockBase.Add(time.Duration(sinceBase(ns))), true
		}
	}
	return clockBase.Add(time.Duration(c.wrote.Load())), false
}

func (c *stampConn) Close() error {
	stampConns.Delete(c.key)
	return c.Conn.Close()
}

// CloseWrite keeps a TCP half-close working through the wrapper.
func (c *stampConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// connKey names a live TCP connection by its two ends. The transport wraps
// our connection (prometheus/common's conntrack, TLS) in types that hide
// it, but every wrapper reports the same addresses.
type connKey struct{ local, remote netip.AddrPort }

func keyOf(c net.Conn) (connKey, bool) {
	l, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok {
		return connKey{}, false
	}
	r, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return connKey{}, false
	}
	return connKey{l.AddrPort(), r.AddrPort()}, true
}

// stampConns holds every open stampConn by its key.
var stampConns sync.Map

// lookupStampConn finds the stampConn under c, a connection the transport
// handed to a request (httptrace's GotConn), or nil.
func lookupStampConn(c net.Conn) *stampConn {
	if c == nil {
		return nil
	}
	k, ok := keyOf(c)
	if !ok {
		return nil
	}
	sc, _ := stampConns.Load(k)
	s, _ := sc.(*stampConn)
	return s
}

// stampDialer is http.DefaultTransport's dialer.
var stampDialer = net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// dialStamped dials like the default transport and reads the connection
// through recvmsg when the kernel can stamp it; otherwise the connection
// is returned as dialled and its results are stamped by the user clock.
func dialStamped(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := stampDialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	rx := rxstamp.New(c)
	k, ok := keyOf(c)
	if rx == nil || !ok {
		return c, nil
	}
	sc := &stampConn{Conn: c, rx: rx, tx: txstamp.New(c), key: k}
	sc.armed.Store(true)
	stampConns.Store(k, sc)
	return sc, nil
}

// reqClock is one response's clock, read by the StreamReader after each
// read. With a stampConn it returns the kernel's arrival time of the read's
// bytes; otherwise, and for reads that brought nothing (the end, an
// error), the process's clock. Its times never go backwards nor before
// floor (the request's start): a kernel-stamped read after a user-stamped
// one could otherwise come out earlier.
type reqClock struct {
	c            *stampConn
	floor        time.Time
	kernel, user int // reads with bytes, stamped by each clock
	now          func() time.Time
}

func (k *reqClock) read() time.Time {
	var t time.Time
	switch a := k.arrivedLast(); a {
	case noData, noStamp:
		t = time.Now()
	default:
		// Already no later than the process's clock: stampConn.Read
		// took it from the kernel's stamp, never after its own reading.
		t = clockBase.Add(time.Duration(a))
	}
	if t.Before(k.floor) {
		t = k.floor
	}
	k.floor = t
	return t
}

// arrivedLast is the last read's arrival (noData without a stamped
// connection) and counts the reads that brought bytes by their clock.
func (k *reqClock) arrivedLast() int64 {
	if k.c == nil {
		return noData
	}
	a := k.c.arrived.Load()
	switch a {
	case noData:
	case noStamp:
		k.user++
	default:
		k.kernel++
	}
	return a
}

// clock names what stamped the response.
func (k *reqClock) clock() Clock {
	switch {
	case k.c == nil || k.kernel == 0:
		return ClockUser
	case k.user > 0:
		return ClockMixed
	}
	return ClockKernel
}
