package runner

import (
	"fmt"
	"math"
)

// The concurrency ramp is how an SLO search by request rate finds the
// server's completion capacity without flooding it. Sending every prompt
// at once, as bench_serving's "inf" rate does, puts the whole point in
// the server's queue at the first instant: an engine that accepts them
// all (ollama, llama-server) then spends minutes and gigabytes on a
// queue no request of which finishes in time. The ramp instead runs
// closed-loop steps, each keeping a fixed number of requests in flight,
// doubling it while the throughput rises; so the server never holds more
// than twice the concurrency at which its throughput stopped rising.
const (
	// MaxRampConcurrency caps the ramp's steps.
	MaxRampConcurrency = 256
	// rampGain is the least rise in throughput, over the best step so
	// far, for which doubling the concurrency is worth another step.
	rampGain = 0.10
	// rampLatencyFactor: a step whose median TTFT is this many times one
	// request's at a time has queued, whatever its throughput says.
	rampLatencyFactor = 20
	// rampMaxErrorPercent: a step where more requests than this failed
	// is past what the server takes.
	rampMaxErrorPercent = 10
	// rampRequestsPerSlot is how many requests a step sends for each
	// request it keeps in flight, so that its throughput is measured
	// over several rounds and not only the first, which starts together,
	// and the last, which drains: the peak step's throughput is the
	// search's upper bound, and its noise is the answer's.
	rampRequestsPerSlot = 8
	// rampMinRequests is the least a step sends.
	rampMinRequests = 16
	// rampMinRounds is the fewest rounds of its slots a step's prompts
	// must fill: with fewer, the step's throughput is that of one burst
	// starting together and draining, not a rate the server sustains, and
	// the ramp stops before it (the run's prompt count bounds the
	// capacity it measures, and the answer says so).
	rampMinRounds = 2
)

// rampPromptsWhy is why the ramp stops short of concurrency c for a run
// of n requests (see rampMinRounds).
func rampPromptsWhy(n, c int) string {
	return fmt.Sprintf("the run's %d prompts are fewer than %d rounds at concurrency %d", n, rampMinRounds, c)
}

// rampStep is what one step of the ramp measured.
type rampStep struct {
	Concurrency  int
	Throughput   float64 // completed requests per second
	TTFTMedianMs float64
	ErrorPercent float64
	// Waiting is the most requests the server's own gauges showed
	// waiting in its queue during the step; -1 when they were not read.
	Waiting float64
}

// rampRequests is how many requests a step at concurrency c sends.
func rampRequests(c int) int { return max(rampMinRequests, rampRequestsPerSlot*c) }

// rampNext decides the ramp's next concurrency from the steps so far (the
// first is one request at a time): 0 and why it stops, or the next
// concurrency. It stops when the last doubling raised the throughput by
// less than rampGain, when the last step's median TTFT exploded or its
// requests failed, when the server's gauges showed half of the step's
// requests waiting in its queue (more would only queue), or at limit (MaxRampConcurrency, or the run's own max
// concurrency if lower: a daemon's bench.max_concurrency, say).
func rampNext(steps []rampStep, limit int) (next int, why string) {
	if len(steps) == 0 {
		return 1, ""
	}
	last := steps[len(steps)-1]
	switch {
	case last.ErrorPercent > rampMaxErrorPercent:
		return 0, fmt.Sprintf("%.0f%% of the requests at concurrency %d failed", last.ErrorPercent, last.Concurrency)
	case !(last.Throughput > 0):
		return 0, fmt.Sprintf("no request completed at concurrency %d", last.Concurrency)
	}
	if len(steps) > 1 {
		best := 0.0
		for _, s := range steps[:len(steps)-1] {
			best = max(best, s.Throughput)
		}
		if last.Throughput < (1+rampGain)*best {
			return 0, fmt.Sprintf("the throughput stopped rising at concurrency %d", last.Concurrency)
		}
		if base := steps[0].TTFTMedianMs; base > 0 && last.TTFTMedianMs > rampLatencyFactor*base {
			return 0, fmt.Sprintf("the median TTFT at concurrency %d is %.0f times one request's", last.Concurrency, math.Round(last.TTFTMedianMs/base))
		}
	}
	if last.Waiting >= max(1, float64(last.Concurrency)/2) {
		return 0, fmt.Sprintf("the server queued %.0f of the %d requests in flight", last.Waiting, last.Concurrency)
	}
	if last.Concurrency >= limit {
		return 0, rampCapWhy(limit)
	}
	return min(2*last.Concurrency, limit), ""
}

// rampPeak is the server's completion capacity, the highest throughput
// a step measured, and the concurrency that reached it: the lowest whose
// throughput is within rampGain of the highest, since the steps past it
// only queued (their throughput differs by noise). Every step the ramp
// took rose by at least rampGain over the ones before, so the peak is
// the last step's half (the ramp stopped for want of gain) or the last
// step itself: the ramp never sent more than twice the peak.
func rampPeak(steps []rampStep) rampStep {
	top := 0.0
	for _, s := range steps {
		top = max(top, s.Throughput)
	}
	for _, s := range steps {
		if top > 0 && s.Throughput*(1+rampGain) > top {
			return rampStep{Concurrency: s.Concurrency, Throughput: top, TTFTMedianMs: s.TTFTMedianMs, ErrorPercent: s.ErrorPercent}
		}
	}
	return rampStep{}
}

// searchConcurrency is the most requests a search's rate points keep in
// flight: twice the concurrency that reached the ramp's peak, the most
// the ramp itself sent. Below the completion capacity a rate point needs
// fewer; above it, the excess waits on the client, where the point's
// queue check sees it grow, instead of in the server.
func searchConcurrency(peak rampStep) int { return max(2*peak.Concurrency, 2) }

// rampLimit is the ramp's cap for a run whose own max concurrency is conc
// (0: none).
func rampLimit(conc int) int {
	if conc > 0 {
		return min(conc, MaxRampConcurrency)
	}
	return MaxRampConcurrency
}
