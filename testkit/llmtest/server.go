package llmtest

import (
	"net/http/httptest"
)

// NewServer starts a loopback HTTP server that plays scripts in order
// (the last one repeats). Close it when done.
func NewServer(scripts ...Script) *Server {
	t := &Transport{Scripts: scripts}
	hs := httptest.NewServer(t.Handler())
	return &Server{Transport: t, URL: hs.URL, srv: hs}
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }
