// Package hostile serves, on loopback, the abuse that is not an answer a
// model server gives, for the robustness tests (testkit/e2e) and the
// soak command (tools/soak). Every misbehaviour a server can answer to a
// well-formed request (error statuses, stalls, resets, cut or malformed
// streams, errors and aborts in a 200, an HTML page or a whole JSON body
// instead of a stream) is a simulator.Fault, asked for with the
// simulator's fault header, and is not repeated here.
//
// What stays here: bodies that never end or exceed any cap (HugeEvent,
// EndlessFast, EndlessSlow), compression bombs, a valid stream dribbled a
// byte a second (SlowLoris), redirect loops, and traps that echo the
// request's credentials back (EchoAuth*), which a product simulator must
// not do. One Server answers every fault on its own path prefix: a target
// whose URL is Server.URL(name) gets that fault on every request, whatever
// the backend appends (/v1/chat/completions, /generate, ...). The streams
// are OpenAI chat completion chunks. Handlers end when the client goes
// away, so a closed Server leaves no goroutine behind.
//
// Faults below HTTP have their own helpers: TLSGarbage (a plain TCP server
// that answers a TLS client with text), ClosedURL (connection refused) and
// DNSFailURL (a host name that cannot resolve).
package hostile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Fault names a misbehaviour of the Server. It is the first path segment
// of the target URL.
type Fault string

// The faults. Streams start with a good token unless said otherwise.
const (
	OK             Fault = "ok"               // a correct stream with [DONE]
	EchoAuth       Fault = "echo-auth"        // 401 whose body echoes every request header, credentials included
	EchoAuthStream Fault = "echo-auth-stream" // 200 stream whose error object echoes the Authorization header
	EchoAuthInfo   Fault = "echo-auth-info"   // a good stream to POST; a 200 JSON echoing every request header to GET (server info)
	EchoAuthModels Fault = "echo-auth-models" // GET /v1/models names a model after the credentials; a stream's finish_reason echoes them
	HugeEvent      Fault = "huge-event"       // one 50 MB data line
	EndlessFast    Fault = "endless-fast"     // tokens as fast as the socket takes them, forever
	EndlessSlow    Fault = "endless-slow"     // a token every 50 ms, forever
	GzipBomb       Fault = "gzip-bomb"        // Content-Encoding: gzip, ~1 MB expanding to ~1 GiB
	GzipBombSmall  Fault = "gzip-bomb-small"  // Content-Encoding: gzip, ~64 KiB expanding to ~64 MiB
	SlowLoris      Fault = "slow-loris"       // a valid stream, one byte per second
	RedirectLoop   Fault = "redirect-loop"    // 307 to itself, forever
	RedirectAway   Fault = "redirect-away"    // 307 to the OK fault (a different path: off-allow-list)
)

// Faults lists every fault of the Server in a stable order.
var Faults = []Fault{
	OK, EchoAuth, EchoAuthStream, EchoAuthInfo, EchoAuthModels, HugeEvent, EndlessFast, EndlessSlow,
	GzipBomb, GzipBombSmall, SlowLoris, RedirectLoop, RedirectAway,
}

// HugeEventBytes is the size of the HugeEvent data line.
const HugeEventBytes = 50 << 20

// Stats counts what the Server did for one fault.
type Stats struct {
	Requests int64
	// MaxWritten is the most body bytes one response got out before the
	// client stopped reading or the handler ended.
	MaxWritten int64
}

// Server is the hostile HTTP server.
type Server struct {
	srv *httptest.Server

	mu    sync.Mutex
	stats map[Fault]*Stats
	// LastAuthorization is the Authorization header of the latest request.
	lastAuth string
	authSeen map[string]bool // distinct Authorization headers, at most 16
}

// NewServer starts a Server on a loopback port.
func NewServer() *Server {
	s := &Server{stats: map[Fault]*Stats{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/f/{fault}/", s.serve)
	s.srv = httptest.NewServer(mux)
	return s
}

// Close stops the server and closes every connection.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the base URL of a target that gets fault f.
func (s *Server) URL(f Fault) string { return s.srv.URL + "/f/" + string(f) }

// Stats returns the counts of fault f.
func (s *Server) Stats(f Fault) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stats[f]; st != nil {
		return *st
	}
	return Stats{}
}

// LastAuthorization returns the Authorization header of the latest request.
func (s *Server) LastAuthorization() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAuth
}

func (s *Server) count(f Fault, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats[f]
	if st == nil {
		st = &Stats{}
		s.stats[f] = st
	}
	st.Requests++
	s.lastAuth = r.Header.Get("Authorization")
	if s.lastAuth != "" && len(s.authSeen) < 16 {
		if s.authSeen == nil {
			s.authSeen = map[string]bool{}
		}
		s.authSeen[s.lastAuth] = true
	}
}

// SawAuthorization reports whether any request carried an Authorization
// header containing sub.
func (s *Server) SawAuthorization(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a := range s.authSeen {
		if strings.Contains(a, sub) {
			return true
		}
	}
	return false
}

func (s *Server) written(f Fault, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stats[f]; st != nil && n > st.MaxWritten {
		st.MaxWritten = n
	}
}

// countingWriter counts body bytes and flushes after every write, so each
// write leaves as its own segment.
type countingWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	n  int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err == nil {
		err = c.rc.Flush()
	}
	return n, err
}

func (c *countingWriter) str(s string) error {
	_, err := io.WriteString(c, s)
	return err
}

// Chunk is one OpenAI chat completion chunk carrying text, as an SSE event.
func Chunk(text string) string {
	return `data: {"id":"h","object":"chat.completion.chunk","model":"hostile","choices":[{"index":0,"delta":{"content":"` +
		text + `"},"finish_reason":null}]}` + "\n\n"
}

// Finish is the final chunk with a finish reason and usage, then [DONE].
const Finish = `data: {"id":"h","object":"chat.completion.chunk","model":"hostile","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n" +
	`data: {"id":"h","object":"chat.completion.chunk","model":"hostile","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":8,"total_tokens":12}}` + "\n\n" +
	"data: [DONE]\n\n"

// GoodStream is a complete, correct stream of eight tokens.
var GoodStream = strings.Repeat(Chunk("tok "), 8) + Finish

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	f := Fault(r.PathValue("fault"))
	s.count(f, r)
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	ctx := r.Context()
	cw := &countingWriter{w: w, rc: http.NewResponseController(w)}
	defer func() { s.written(f, cw.n) }()
	sse := func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_ = cw.rc.Flush()
	}
	tokens := func(n int) error {
		for range n {
			if err := cw.str(Chunk("tok ")); err != nil {
				return err
			}
		}
		return nil
	}
	switch f {
	case OK:
		sse()
		_ = cw.str(GoodStream)
	case EchoAuth:
		var b strings.Builder
		b.WriteString("unauthorized; you sent:\n")
		_ = r.Header.Write(&b)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		_ = cw.str(b.String())
	case EchoAuthStream:
		sse()
		_ = tokens(1)
		_ = cw.str(`data: {"error":{"message":"bad key ` + jsonEscape(r.Header.Get("Authorization")) +
			` x-api-key=` + jsonEscape(r.Header.Get("X-Api-Key")) + `","type":"auth"}}` + "\n\n")
	case EchoAuthInfo:
		if r.Method == http.MethodPost {
			sse()
			_ = cw.str(GoodStream)
			return
		}
		var b strings.Builder
		_ = r.Header.Write(&b)
		w.Header().Set("Content-Type", "application/json")
		_ = cw.str(`{"version":"0.0.1","echo":"` + jsonEscape(b.String()) + `","internal_states":[{"avg_spec_accept_length":1.0}]}`)
	case EchoAuthModels:
		// The model id is the bare API key when there is one (it has the
		// shape of a model name, so only knowing the secret catches it),
		// else the Authorization header as a header-echoing server
		// writes it.
		echo := "Authorization=" + r.Header.Get("Authorization")
		if k := r.Header.Get("X-Api-Key"); k != "" {
			echo = k
		}
		if r.Method == http.MethodPost {
			sse()
			_ = tokens(2)
			_ = cw.str(`data: {"id":"h","object":"chat.completion.chunk","model":"` + jsonEscape(echo) +
				`","choices":[{"index":0,"delta":{},"finish_reason":"` + jsonEscape(echo) + `"}]}` + "\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = cw.str(`{"object":"list","data":[{"id":"` + jsonEscape(echo) + `","object":"model"}]}`)
	case HugeEvent:
		sse()
		huge(cw)
	case EndlessFast:
		sse()
		batch := []byte(strings.Repeat(Chunk("tok "), 256))
		for ctx.Err() == nil {
			if _, err := cw.Write(batch); err != nil {
				return
			}
		}
	case EndlessSlow:
		sse()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if cw.str(Chunk("tok ")) != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	case GzipBomb, GzipBombSmall:
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		members := 1024 // ~1 MB on the wire, 1 GiB expanded
		if f == GzipBombSmall {
			members = 64 // ~64 KiB on the wire, 64 MiB expanded
		}
		b := bomb()
		_, _ = cw.Write(b.head)
		for range members {
			if _, err := cw.Write(b.zeros); err != nil {
				return
			}
		}
	case SlowLoris:
		sse()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for i := 0; i < len(GoodStream); i++ {
			if cw.str(GoodStream[i:i+1]) != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	case RedirectLoop:
		http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
	case RedirectAway:
		http.Redirect(w, r, "/f/"+string(OK)+strings.TrimPrefix(r.URL.Path, "/f/"+string(RedirectAway)), http.StatusTemporaryRedirect)
	default:
		http.NotFound(w, r)
	}
}

func jsonEscape(s string) string {
	var b bytes.Buffer
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// huge writes one data line of HugeEventBytes in 64 KiB writes, stopping at
// the first failed write (the client gave up).
func huge(cw *countingWriter) {
	if cw.str(`data: {"id":"h","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`) != nil {
		return
	}
	block := bytes.Repeat([]byte("a"), 64<<10)
	for sent := 0; sent < HugeEventBytes; sent += len(block) {
		if _, err := cw.Write(block); err != nil {
			return
		}
	}
	_ = cw.str(`"},"finish_reason":null}]}` + "\n\n" + Finish)
}

type bombParts struct{ head, zeros []byte }

var (
	bombOnce sync.Once
	bombData bombParts
)

// bomb builds the gzip bomb once: a first gzip member holding a valid
// stream's first event, then a member of 1 MiB of NUL bytes (about 1 KiB
// compressed) to be sent many times. A gzip file may hold several members
// one after another, and Go's gzip.Reader reads through them all (its
// multistream mode, on by default), so the client sees one stream.
func bomb() bombParts {
	bombOnce.Do(func() {
		gz := func(p []byte) []byte {
			var b bytes.Buffer
			w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			_, _ = w.Write(p)
			_ = w.Close()
			return b.Bytes()
		}
		bombData = bombParts{head: gz([]byte(Chunk("tok "))), zeros: gz(make([]byte, 1<<20))}
	})
	return bombData
}

// BombExpansion returns the compressed and expanded sizes of fault f's body.
func BombExpansion(f Fault) (wire, expanded int64) {
	b := bomb()
	members := int64(1024)
	if f == GzipBombSmall {
		members = 64
	}
	return int64(len(b.head)) + members*int64(len(b.zeros)), int64(len(Chunk("tok "))) + members<<20
}

// TLSGarbage is a plain TCP server that answers anything, a TLS
// ClientHello included, with a line of text and closes.
type TLSGarbage struct {
	ln   net.Listener
	wg   sync.WaitGroup
	done atomic.Bool
}

// NewTLSGarbage starts a TLSGarbage on a loopback port.
func NewTLSGarbage() (*TLSGarbage, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &TLSGarbage{ln: ln}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.wg.Add(1)
			go func() {
				defer g.wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6 this is not TLS\r\n"))
				_, _ = io.Copy(io.Discard, io.LimitReader(c, 4096))
			}()
		}
	}()
	return g, nil
}

// URL is an https URL pointing at the server.
func (g *TLSGarbage) URL() string { return "https://" + g.ln.Addr().String() }

// Close stops the server and waits for its connections.
func (g *TLSGarbage) Close() {
	if g.done.Swap(true) {
		return
	}
	_ = g.ln.Close()
	g.wg.Wait()
}

// ClosedURL returns an http URL of a loopback port where nothing listens,
// and a func that frees the port. Until then the port stays bound (a socket
// bound but never listening), so no other server, in this process or on the
// machine, can take it and answer: every connection is refused. A port
// that was merely listened on and closed can be reused by the next server
// started, which then answers (seen: a 404 for "connection refused").
func ClosedURL() (url string, release func(), err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", nil, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return "", nil, err
	}
	port := sa.(*syscall.SockaddrInet4).Port
	return fmt.Sprintf("http://127.0.0.1:%d", port), func() { syscall.Close(fd) }, nil
}

// DNSFailURL is a URL whose host cannot resolve, on any machine and without
// a network: its first label is 64 bytes, over the 63 that RFC 1035
// allows, so Go's resolver (pure Go and cgo) answers "no such host" before
// sending a query, and it is under .invalid (RFC 6761), so no resolver
// would answer it anyway. A plain .invalid name is not used because, on a
// machine whose DNS server is unreachable, its lookup times out instead of
// failing.
var DNSFailURL = "http://" + strings.Repeat("x", 64) + ".invalid:8000"

// ErrNoSuchFault is returned by ParseFault.
var ErrNoSuchFault = errors.New("no such fault")

// ParseFault returns the Fault named s.
func ParseFault(s string) (Fault, error) {
	for _, f := range Faults {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w: %q", ErrNoSuchFault, s)
}
