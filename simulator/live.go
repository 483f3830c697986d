package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"time"
)

// Live is what an operator may change while the simulator runs, to stage a
// regression or an outage against a running prober (the alerting rules'
// end-to-end test does). The zero value, and a factor of 0, change nothing.
// It is served at /admin/live only when Config.Admin is set (--sim.admin),
// off by default: anyone who can reach it can degrade the server.
type Live struct {
	// TTFTFactor multiplies every time to first token.
	TTFTFactor float64 `json:"ttft_factor"`
	// ITLFactor multiplies every decode step.
	ITLFactor float64 `json:"itl_factor"`
	// FailRatio is the probability that a request is answered 503 before
	// any token, drawn before the configured fault rates.
	FailRatio float64 `json:"fail_ratio"`
}

// maxLiveFactor bounds the factors, so that a typo cannot hold requests
// for hours.
const maxLiveFactor = 1000

// Validate reports a Live that cannot apply.
func (l Live) Validate() error {
	var errs []error
	for name, f := range map[string]float64{"ttft_factor": l.TTFTFactor, "itl_factor": l.ITLFactor} {
		if math.IsNaN(f) || f < 0 || f > maxLiveFactor {
			errs = append(errs, fmt.Errorf("%s: %v must be in [0, %d]", name, f, maxLiveFactor))
		}
	}
	if math.IsNaN(l.FailRatio) || l.FailRatio < 0 || l.FailRatio > 1 {
		errs = append(errs, fmt.Errorf("fail_ratio: %v must be in [0, 1]", l.FailRatio))
	}
	return errors.Join(errs...)
}

// SetLive replaces the live settings; they apply to requests that arrive
// (TTFTFactor, FailRatio) or decode steps that start (ITLFactor) after it.
func (s *Server) SetLive(l Live) error {
	if err := l.Validate(); err != nil {
		return err
	}
	s.live.Store(&l)
	return nil
}

// Live returns the live settings.
func (s *Server) Live() Live {
	if l := s.live.Load(); l != nil {
		return *l
	}
	return Live{}
}

func factor(f float64) float64 {
	if f == 0 {
		return 1
	}
	return f
}

// ttftDelay is the configured TTFT times the live factor.
func (s *Server) ttftDelay(rng *rand.Rand, promptTokens int) time.Duration {
	return time.Duration(float64(s.cfg.ttft(rng, promptTokens)) * factor(s.Live().TTFTFactor))
}

// stepDelay is the configured decode step times the live factor.
func (s *Server) stepDelay(rng *rand.Rand, running int) time.Duration {
	return time.Duration(float64(s.cfg.step(rng, running)) * factor(s.Live().ITLFactor))
}

// liveFault draws the live failure ratio.
func (s *Server) liveFault(rng *rand.Rand) bool {
	p := s.Live().FailRatio
	return p > 0 && rng.Float64() < p
}

// maxLiveBody bounds the admin request body.
const maxLiveBody = 4096

// liveHandler serves GET (the current settings) and PUT (replace them, as a
// JSON Live; unknown fields are refused) on /admin/live.
func (s *Server) liveHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut {
		dec := json.NewDecoder(io.LimitReader(r.Body, maxLiveBody))
		dec.DisallowUnknownFields()
		var l Live
		if err := dec.Decode(&l); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := s.SetLive(l); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.Live())
}
