package exporter

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// ServerLimits bound what HTTP callers can hold of the daemon: a client
// that opens connections and sends nothing, sends a body a byte a minute,
// or reads a response as slowly would otherwise keep a goroutine and a file
// descriptor each, for ever.
type ServerLimits struct {
	// ReadHeaderTimeout bounds the wait for a request's headers, from the
	// connection's start or the end of the previous request.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request, body included
	// (http.Server's ReadTimeout). No route takes a large body: a bench
	// window's is at most bench.max_body_bytes.
	ReadTimeout time.Duration
	// WriteTimeout bounds the writing of a response, from the end of its
	// headers' reading. Routes that take longer by design get more: /probe
	// its targets' longest timeout, a profile its seconds, a bench
	// window's result or report DownloadTimeout.
	WriteTimeout    time.Duration
	DownloadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new request.
	IdleTimeout time.Duration
	// MaxConnections caps the connections open at once; 0 is no cap.
	MaxConnections int
}

// DefaultServerLimits are serve's limits. A scrape, a reload or a bench
// POST takes well under a second; the bounds leave room for slow links.
var DefaultServerLimits = ServerLimits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	DownloadTimeout:   5 * time.Minute,
	// Long enough for a 15 s or 30 s scrape to reuse its connection;
	// a 1 min scrape reconnects, which costs nothing worth keeping
	// a descriptor for.
	IdleTimeout:    30 * time.Second,
	MaxConnections: 1024,
}

// NewServer returns the server of d's handler under l: the timeouts
// above, and at most l.MaxConnections connections. Serve it with
// exporter-toolkit's web.ListenAndServe.
//
// The cap is kept in ConnState rather than by wrapping the listener
// (netutil.LimitListener): web.ListenAndServe makes its own listeners (TCP,
// vsock or systemd's), so a connection over the cap is accepted and closed
// at once. Its descriptor is freed immediately, and the client sees the
// connection closed rather than waiting in the backlog. The count is exact
// at accept: http.Server calls ConnState(StateNew) in its accept loop,
// before it accepts the next connection, not in the connection's
// goroutine. A connection is counted until the server has seen it close,
// which it sees asynchronously when the client closes first.
func (d *Daemon) NewServer(l ServerLimits) *http.Server {
	srv := &http.Server{
		Handler:           d.withDeadlines(d.Handler(), l),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
	}
	if l.MaxConnections > 0 {
		c := &connCap{max: l.MaxConnections, logger: d.logger, open: map[net.Conn]bool{}}
		srv.ConnState = c.track
	}
	return srv
}

// connCap counts open connections and closes those over max.
type connCap struct {
	max    int
	logger log.Logger

	mu       sync.Mutex
	open     map[net.Conn]bool
	refused  uint64
	lastWarn time.Time
}

func (c *connCap) track(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		if len(c.open) >= c.max {
			c.refused++
			// One warning a minute at most: a flood must not become a
			// log storm.
			if now := time.Now(); now.Sub(c.lastWarn) >= time.Minute {
				c.lastWarn = now
				level.Warn(c.logger).Log("msg", "HTTP connection refused: too many open", "max_connections", c.max, "refused_total", c.refused)
			}
			_ = conn.Close()
			return
		}
		c.open[conn] = true
	case http.StateClosed, http.StateHijacked:
		delete(c.open, conn)
	}
}

// withDeadlines sets each request's response write deadline for its
// route: http.Server's WriteTimeout is one bound for every route.
func (d *Daemon) withDeadlines(next http.Handler, l ServerLimits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wt := d.writeBudget(r, l); wt > 0 {
			// The error is ErrNotSupported from a wrapped writer; the
			// response is then served without the deadline.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wt))
		}
		next.ServeHTTP(w, r)
	})
}

// writeBudget is how long a response to r may take to write.
func (d *Daemon) writeBudget(r *http.Request, l ServerLimits) time.Duration {
	if l.WriteTimeout <= 0 {
		return 0
	}
	p := r.URL.Path
	switch {
	case p == "/probe":
		// The probe runs within the response: its target's timeout.
		var longest time.Duration
		for _, t := range d.Config().Targets {
			longest = max(longest, t.EffectiveTimeout())
		}
		return l.WriteTimeout + longest
	case p == "/debug/pprof/profile" || p == "/debug/pprof/trace":
		secs, err := strconv.ParseFloat(r.URL.Query().Get("seconds"), 64)
		if err != nil || secs <= 0 {
			secs = 30 // pprof's default for a profile; a trace's is 1
		}
		return l.WriteTimeout + time.Duration(min(secs, 3600)*float64(time.Second))
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/api/v1/benches/"):
		return max(l.WriteTimeout, l.DownloadTimeout)
	}
	return l.WriteTimeout
}
