package simulator

import (
	"io"
	"net/http"
)

// startProfile answers sglang's and vLLM's POST /start_profile, which
// bench_serving's --profile sends before the run, with sglang's text. The
// simulator has no profiler: it counts the call (ProfileCalls), so that a
// bench's --profile can be checked against it.
func (s *Server) startProfile(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
	s.profileStarts.Add(1)
	_, _ = io.WriteString(w, "Start profiling.\n")
}

// stopProfile answers POST /stop_profile, sent after the run.
func (s *Server) stopProfile(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
	s.profileStops.Add(1)
	_, _ = io.WriteString(w, "Stop profiling. This will take some time.\n")
}

// ProfileCalls is how many /start_profile and /stop_profile calls the
// server has answered.
func (s *Server) ProfileCalls() (starts, stops int) {
	return int(s.profileStarts.Load()), int(s.profileStops.Load())
}
