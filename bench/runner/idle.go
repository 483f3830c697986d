package runner

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// idleState is what one look at the server says about its idle state.
type idleState int

const (
	idleUnknown idleState = iota // nothing read: no gauges, the probe failed
	idleBusy                     // requests running or waiting, or a slow probe
	idleYes                      // back at its idle state
)

// DefaultSLOIdleTimeout bounds how long a search waits, before a point,
// for the server to be back at its idle state. A server that queued a
// thousand requests from a point that went too far can take tens of
// seconds to drain them; one that has not drained in a minute is busy
// with something else, and the point says so.
const DefaultSLOIdleTimeout = time.Minute

// idlePoll is the pause between two looks at a server not yet idle.
const idlePoll = 500 * time.Millisecond

// gaugesIdle reads a snapshot's queue gauges: idle when no request runs
// or waits, busy when some do, unknown when the server exposes neither.
func gaugesIdle(g map[servermetrics.Kind]float64) idleState {
	running, hasRunning := g[servermetrics.Running]
	waiting, hasWaiting := g[servermetrics.Waiting]
	switch {
	case !hasRunning && !hasWaiting:
		return idleUnknown
	case running > 0 || waiting > 0:
		return idleBusy
	}
	return idleYes
}

// probeIdle compares a probe's TTFT with the baseline of one request at a
// time: a server still draining a queue makes the probe wait behind it.
// The probe is idle within twice the baseline plus 50 ms, which a shared
// machine's noise stays within and a queue of even one request's decode
// usually does not.
func probeIdle(ttft, baseline time.Duration) idleState {
	if ttft <= 0 {
		return idleUnknown
	}
	if ttft <= 2*baseline+50*time.Millisecond {
		return idleYes
	}
	return idleBusy
}

// idleWatch waits for the server to be back at its idle state before a
// point of a search: it reads the queue gauges of the run's metrics
// endpoints when they expose them, else it sends one probe request at a
// time and compares its TTFT with baseline.
type idleWatch struct {
	p *Prepared
	// client reads the metrics endpoints, as the run's own reads do
	// (Env.ServerMetrics.Client; nil: servermetrics' own client).
	client   *http.Client
	timeout  time.Duration
	baseline time.Duration // one request at a time, idle; 0: not yet known
	// noGauges is set once the endpoints were found without queue gauges,
	// so that later waits go straight to the probe.
	noGauges bool
}

// look is one look at the server.
func (iw *idleWatch) look(ctx context.Context) idleState {
	if !iw.noGauges {
		urls, _ := serverMetricsURLs(iw.p.Spec)
		state := idleUnknown
		for _, u := range urls {
			rctx, cancel := context.WithTimeout(ctx, servermetrics.DefaultTimeout)
			snap, err := servermetrics.Fetch(rctx, iw.client, u, 0)
			cancel()
			if err != nil {
				continue
			}
			switch gaugesIdle(servermetrics.GaugeValues(snap)) {
			case idleBusy:
				return idleBusy
			case idleYes:
				state = idleYes
			}
		}
		if state == idleYes {
			return idleYes
		}
		iw.noGauges = true
	}
	return iw.probe(ctx)
}

// probe sends the run's first prompt once, bounded by the wait's timeout.
func (iw *idleWatch) probe(ctx context.Context) idleState {
	pctx, cancel := context.WithTimeout(ctx, iw.timeout)
	defer cancel()
	r := iw.p.Prober.Run(pctx, iw.p.Prompts.First(), time.Now())
	ttft := bench.ResultSamples(&r).TTFT
	if r.Outcome != prober.OutcomeSuccess || !prober.Defined(ttft) {
		return idleUnknown
	}
	if iw.baseline == 0 {
		// The first probe, before any point loaded the server, is the
		// baseline.
		iw.baseline = ttft
		return idleYes
	}
	return probeIdle(ttft, iw.baseline)
}

// setBaseline takes the median TTFT of one request at a time (ms), if
// the server's gauges are not what decides.
func (iw *idleWatch) setBaseline(ms float64) {
	if ms > 0 && !math.IsNaN(ms) {
		iw.baseline = time.Duration(ms * float64(time.Millisecond))
	}
}

// wait looks at the server until it is idle or the timeout passes. It
// returns how long it waited and whether the server came back; an error
// only when ctx ended.
func (iw *idleWatch) wait(ctx context.Context, timeout time.Duration) (time.Duration, bool, error) {
	iw.timeout = timeout
	start := time.Now()
	deadline := start.Add(iw.timeout)
	for {
		if iw.look(ctx) == idleYes {
			return time.Since(start), true, nil
		}
		if ctx.Err() != nil {
			return time.Since(start), false, context.Cause(ctx)
		}
		if time.Now().Add(idlePoll).After(deadline) {
			return time.Since(start), false, nil
		}
		t := time.NewTimer(idlePoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return time.Since(start), false, context.Cause(ctx)
		}
	}
}
