package selftest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/simulator"
)

// ServerSpec configures the simulator child.
type ServerSpec struct {
	Coalesce  bool          `json:"coalesce"`
	TTFT      time.Duration `json:"ttft"`
	ITL       time.Duration `json:"itl"`
	TruthSize int           `json:"truth_size"`
}

// simModel is the model the simulator serves and the client asks for.
const simModel = "selftest"

func (s ServerSpec) config() simulator.Config {
	c := simulator.DefaultConfig()
	c.Model = simModel
	c.TTFT, c.TTFTJitter, c.PrefillPerToken = s.TTFT, 0, 0
	c.ITL, c.ITLJitter, c.ITLPerRunningRequest = s.ITL, 0, 0
	c.MaxRunningRequests = 0
	c.Coalesce = s.Coalesce
	c.TruthSize = s.TruthSize
	return c
}

// Serve runs the simulator on a loopback port chosen by the kernel, writes
// "listening <addr>\n" to out, and serves until ctx is done or stdin
// closes (the parent went away).
//
// With SERVINGPROBE_SELFTEST_SERVER_CPUPROFILE set, the simulator writes a
// CPU profile to that path until it stops.
func Serve(ctx context.Context, spec ServerSpec, stdin io.Reader, out io.Writer) error {
	raiseNoFile()
	stop, err := cpuProfile("SERVINGPROBE_SELFTEST_SERVER_CPUPROFILE")
	if err != nil {
		return err
	}
	defer stop()
	sim, err := simulator.New(spec.config(), log.NewNopLogger())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// Stamped connections give the truth the kernel's receipt of each
	// request and the start of each chunk's write, so that the
	// simulator's own backlog is not counted as client error.
	mux := http.NewServeMux()
	mux.Handle("/", sim.Handler())
	// The client reads the simulator's CPU time around its load: a core
	// at 100 % explains a delay without any fault of the client's.
	mux.HandleFunc("GET /selftest/cpu", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, int64(cpuTime()))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnContext: simulator.ConnContext}
	errc := make(chan error, 1)
	// Stamped connections only where a truth is kept: the capacity points
	// measure the client against a simulator that writes as fast as it can,
	// and stamping every write would slow that writer down.
	serveLn := ln
	if spec.TruthSize > 0 {
		serveLn = simulator.StampListener(ln)
	}
	go func() { errc <- srv.Serve(serveLn) }()
	if _, err := fmt.Fprintf(out, "listening %s\n", ln.Addr()); err != nil {
		return err
	}
	if stdin != nil {
		go func() {
			_, _ = io.Copy(io.Discard, bufio.NewReader(stdin))
			srv.Close()
		}()
	}
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
		return srv.Close()
	}
}
