package llmtest

import (
	"context"
	"net"
	"sync"
)

// PipeListener serves HTTP over net.Pipe, which a testing/synctest
// bubble allows where sockets are not: give it to http.Server.Serve and
// its Dial to an http.Transport's DialContext, and a real client and
// server talk on virtual time.
type PipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewPipeListener returns a listener with no connection yet.
func NewPipeListener() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept returns the server's end of the next Dial.
func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; connections already made stay open.
func (l *PipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

// Addr is a loopback address, for logs.
func (l *PipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// Dial connects a client to the listener's server, whatever the address.
func (l *PipeListener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, net.ErrClosed
	}
}
